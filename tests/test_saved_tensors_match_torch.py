"""Every op with a derivative saves, for backward, the tensors PyTorch's node saves for the same call: no output
where PyTorch keeps only inputs (else `relu_` after the op fails with "modified by an inplace operation" where
PyTorch's does not), and nothing PyTorch keeps is missing.

The calls are PyTorch's own OpInfo samples (torch.testing._internal.common_methods_invocations.op_db), run on torch
and, translated, on lantern. Where an output's grad_fn has the same name in both, the two nodes' saved tensors
(`_saved_<name>` attributes holding a tensor) are compared by name. (Deeper nodes are not compared: inside
composite functions the two libraries call different ops, so nodes of one name need not be the same call.)
lantern may keep an input's geometry (`_saved_<name>_meta`) where PyTorch keeps the input: it needs less.

KNOWN_DIFFERENCES is the one list of nodes that still differ, each with its reason.
"""
import functools
import warnings

import numpy as np
import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db  # needs expecttest (the dev extra)

import lantern
from lantern.autograd.node import OpNode
from lantern.core.dispatch_keys import DispatchKey
from lantern.ops.registry import REGISTRY

SAMPLES_PER_OP = 2

KNOWN_DIFFERENCES = {  # node name: (the saved names that differ, why)
    "NativeBatchNormBackward0": ({"running_mean", "running_var"},
        "PyTorch also saves running_mean/running_var for evaluation-mode backward; lantern's forward returns the "
        "statistics it used as outputs 1 and 2 (mean, rstd) in both modes and its formulas read those, so the "
        "buffers that a second training forward updates in place before backward are not saved."),
    "NativeLayerNormBackward0": ({"bias"},
        "PyTorch also saves bias (its formula reads only whether it is defined); lantern's formulas never read it."),
    "NllLossBackward0": ({"self", "total_weight", "result1"},
        "cross_entropy with class indices is one fused lantern node (_cross_entropy_index) that saves its "
        "internal softmax output (result1, never returned to the user) instead of PyTorch's log_softmax output "
        "(self); and lantern's nll_loss has one output, so no total_weight."),
    "LinalgDetBackward0": ({"LU", "pivots"},
        "PyTorch keeps the LU factors and pivots its forward made; lantern's forward does not factor through "
        "lantern ops, and its formula recomputes from A."),
    "LinalgSlogdetBackward0": ({"LU", "pivots"}, "as LinalgDetBackward0: lantern recomputes from A."),
    "LinalgSolveExBackward0": ({"LU", "pivots"}, "as LinalgDetBackward0: lantern recomputes from A."),
    "LogSigmoidBackward0": ({"buffer"},
        "PyTorch's CPU kernel saves a buffer (its forward's exp(-|x|)); lantern's formula recomputes it from self."),
    "CholeskySolveBackward0": ({"self"},
        "PyTorch's cholesky_solve_backward also takes self (the right-hand side B); lantern's formulas read only the "
        "factor input2 and the result X."),
    "NextafterBackward0": ({"self", "other"},
        "PyTorch saves both inputs though its gradients (grad for self, zeros for other) read neither; lantern's "
        "formulas need no tensor."),
    "SliceBackward0": ({"start"},
        "narrow given a 0-dim tensor `start` keeps that tensor as the saved start, where PyTorch's narrow.Tensor "
        "overload saves start.item(), a number."),
}


def _resolve(root, dotted):
    for part in dotted.split("."):
        root = getattr(root, part, None)
        if root is None:
            return None
    return root


def _translatable(info):
    """OpInfos whose torch callable has a path that lantern also has (lambdas and methods cannot be translated)."""
    return (info.supports_autograd and _resolve(torch, info.name) is info.op
            and _resolve(lantern, info.name) is not None)


OPINFOS = [info for info in op_db if _translatable(info)]


def _to_lantern(v):
    if isinstance(v, torch.Tensor):
        t = lantern.tensor(v.detach().numpy())
        return t.requires_grad_(True) if v.requires_grad else t
    if isinstance(v, torch.dtype):
        return getattr(lantern, str(v).rpartition(".")[2])
    if isinstance(v, torch.Size):
        return tuple(v)
    if isinstance(v, torch.device):
        return lantern.device(str(v))
    if isinstance(v, (list, tuple)):
        return type(v)(_to_lantern(x) for x in v)
    if isinstance(v, dict):
        return {k: _to_lantern(x) for k, x in v.items()}
    return v


def _outputs(result, tensor_type):
    if isinstance(result, tensor_type):
        return [result]
    if isinstance(result, (list, tuple)):
        return [t for r in result for t in _outputs(r, tensor_type)]
    return []


def _saved(node):
    """{name: value} of the node's `_saved_*` attributes."""
    return {attr[len("_saved_"):]: getattr(node, attr) for attr in dir(node) if attr.startswith("_saved_")}


def _tensor_names(saved, tensor_type):
    """The saved names that hold a tensor (or a list of them)."""
    return {name for name, value in saved.items()
            if isinstance(value, tensor_type) or (isinstance(value, (list, tuple))
                                                  and any(isinstance(v, tensor_type) for v in value))}


def _same_nodes(torch_roots, lantern_roots):
    """(torch node, lantern node) pairs of the outputs' grad_fns that have the same name."""
    return [(t, l) for t, l in zip(torch_roots, lantern_roots)
            if isinstance(l, OpNode) and type(t).__name__ == type(l).__name__]


def _differences(t_node, l_node):
    """(tensors lantern saves that torch does not, tensors torch saves that lantern keeps neither as a tensor, nor
    as its geometry, nor as the Python number that torch wrapped into a 0-dim tensor)."""
    t_saved, l_saved = _saved(t_node), _saved(l_node)
    t_tensors, l_tensors = _tensor_names(t_saved, torch.Tensor), _tensor_names(l_saved, lantern.Tensor)
    extra = l_tensors - t_tensors
    missing = {n for n in t_tensors - l_tensors if n + "_meta" not in l_saved
               and not (isinstance(l_saved.get(n), (int, float, complex)) and t_saved[n].dim() == 0)}
    return extra, missing


@functools.cache
def _compare(index):
    """{node name: [(extra, missing), ...]} over the first samples of one OpInfo that both libraries run."""
    info, found = OPINFOS[index], {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(info.sample_inputs("cpu", torch.float64, requires_grad=True))[:SAMPLES_PER_OP]
        lantern_fn = _resolve(lantern, info.name)
        for s in samples:
            try:
                expected = info.op(s.input, *s.args, **s.kwargs)
            except Exception:  # a sample PyTorch itself rejects (error-input samples)
                continue
            try:
                got = lantern_fn(_to_lantern(s.input), *_to_lantern(s.args), **_to_lantern(s.kwargs))
            except Exception:  # an argument lantern does not support: its own tests cover what it supports
                continue
            roots = [[t.grad_fn for t in _outputs(r, cls)] for r, cls in ((expected, torch.Tensor),
                                                                          (got, lantern.Tensor))]
            for t_node, l_node in _same_nodes(*roots):
                found.setdefault(type(l_node).__name__, []).append(_differences(t_node, l_node))
    return found


@functools.cache
def _all_comparisons():
    found = {}
    for index in range(len(OPINFOS)):
        for name, diffs in _compare(index).items():
            found.setdefault(name, []).extend(diffs)
    return found


@pytest.mark.parametrize("index", range(len(OPINFOS)),
                         ids=[f"{i.name}.{i.variant_test_name}".rstrip(".") for i in OPINFOS])
def test_saved_tensors_match_torch(index):
    for name, diffs in _compare(index).items():
        known = KNOWN_DIFFERENCES.get(name, (set(), ""))[0]
        for extra, missing in diffs:
            extra, missing = extra - known, missing - known
            assert not extra, f"{name} saves {sorted(extra)}, which PyTorch's node does not save"
            assert not missing, f"{name} does not save {sorted(missing)}, which PyTorch's node saves"


def test_known_differences_are_still_differences():
    comparisons = _all_comparisons()
    for name, (names, _) in KNOWN_DIFFERENCES.items():
        seen = set().union(*(extra | missing for extra, missing in comparisons.get(name, ())))
        assert names <= seen, f"{name} now saves {sorted(names - seen)} as PyTorch does: update KNOWN_DIFFERENCES"


def _sparse_layout_op(op):
    """An op of the sparse layouts (it runs only under a sparse key, or makes a sparse tensor): OpInfo's samples are
    dense, so its node is compared with torch's in tests/test_sparse_*.py instead."""
    return "sparse" in op.name or set(op.kernels) <= {DispatchKey.SparseCPU, DispatchKey.SparseCsrCPU}


def test_comparisons_reach_most_ops_with_a_derivative():
    """Of the nodes a forward call can make (the derivatives of backward ops appear only under create_graph),
    most are compared; OpInfo wraps the rest (the random ops, embedding) in lambdas that cannot be translated."""
    names = {op.derivative._name for op in REGISTRY.values() if op.derivative is not None
             and not op.derivative.nondifferentiable and not callable(op.derivative._name)
             and not op.derivative._name.endswith("BackwardBackward0") and not _sparse_layout_op(op)}
    reached = names & set(_all_comparisons())
    assert len(reached) >= 0.8 * len(names), sorted(names - reached)


# ---- what this buys: an in-place op right after a layer works wherever it works in PyTorch -------------------

LAYERS = {  # on input (2, 3, 6, 6)
    "Linear": lambda nn: nn.Linear(6, 6),
    "Conv2d": lambda nn: nn.Conv2d(3, 3, 3, padding=1),
    "BatchNorm2d": lambda nn: nn.BatchNorm2d(3),
    "BatchNorm2d.eval": lambda nn: nn.BatchNorm2d(3).eval(),
    "LayerNorm": lambda nn: nn.LayerNorm(6),
    "GroupNorm": lambda nn: nn.GroupNorm(3, 3),
    "InstanceNorm2d": lambda nn: nn.InstanceNorm2d(3, affine=True),
    "ReLU": lambda nn: nn.ReLU(),
    "Sigmoid": lambda nn: nn.Sigmoid(),
    "Tanh": lambda nn: nn.Tanh(),
    "GELU": lambda nn: nn.GELU(),
    "Softmax": lambda nn: nn.Softmax(-1),
    "MaxPool2d": lambda nn: nn.MaxPool2d(2),
    "AvgPool2d": lambda nn: nn.AvgPool2d(2),
}
INPLACE = {
    "relu_": lambda t: t.relu_(),
    "sigmoid_": lambda t: t.sigmoid_(),
    "tanh_": lambda t: t.tanh_(),
    "mul_": lambda t: t.mul_(2),
    "add_": lambda t: t.add_(1),
}


def _inplace_after(lib, layer, inplace, x, state):
    model = LAYERS[layer](lib.nn)
    model.load_state_dict({k: lib.tensor(v) for k, v in state.items()}) if state is not None else None
    x = lib.tensor(x, requires_grad=True)
    INPLACE[inplace](model(x)).sum().backward()
    return x.grad.numpy(), {k: p.grad.numpy() for k, p in model.named_parameters()}


@pytest.mark.parametrize("inplace", INPLACE)
@pytest.mark.parametrize("layer", LAYERS)
def test_inplace_after_layer_works_as_in_torch(layer, inplace):
    """Where PyTorch's backward accepts the in-place op (its node kept no output), lantern's gives the same
    gradients; where PyTorch's raises (the layer's node keeps its output: Sigmoid, Tanh, Softmax), so does
    lantern's."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 6, 6).numpy()
    state = {k: v.numpy() for k, v in LAYERS[layer](torch.nn).state_dict().items()}
    try:
        expected = _inplace_after(torch, layer, inplace, x, state)
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), e
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _inplace_after(lantern, layer, inplace, x, state)
        return
    got = _inplace_after(lantern, layer, inplace, x, state)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-5)
    for name in expected[1]:
        np.testing.assert_allclose(got[1][name], expected[1][name], rtol=1e-4, atol=1e-5)
