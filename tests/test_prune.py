"""torch.nn.utils.prune against torch on the same programs: masks bit for bit (ties in L1/Ln included; random ones
after the same manual_seed), state_dict keys, parameters and buffers, hooks, iterative pruning, remove, errors."""
import re

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  (torch does not import it with torch.nn.utils)

import lantern
from nn_oracle import same_error


def _conv(lib, weights=None):
    """A Conv2d(3, 4, 2) whose weight has many ties (integers in [-3, 3]), the same in both libraries."""
    lib.manual_seed(0)
    conv = lib.nn.Conv2d(3, 4, 2)
    if weights is None:
        weights = np.random.default_rng(0).integers(-3, 4, size=(4, 3, 2, 2)).astype(np.float32)
    with lib.no_grad():
        conv.weight.copy_(lib.tensor(weights))
    return conv


def _state(module):
    """Everything pruning changes, as plain values: state_dict, parameter and buffer names, hooks, `weight`."""
    return {"state": {k: v.detach().numpy().tolist() for k, v in module.state_dict().items()},
            "parameters": [name for name, _ in module.named_parameters()],
            "buffers": [name for name, _ in module.named_buffers()],
            "hooks": [type(hook).__name__ for hook in module._forward_pre_hooks.values()],
            "weight": module.weight.detach().numpy().tolist(),
            "weight is a parameter": "weight" in module._parameters}


def _same(program):
    """program(lib) gives the same values under torch and lantern."""
    theirs, ours = program(torch), program(lantern)
    assert ours == theirs


def _pruned_with(step):
    def program(lib):
        conv = _conv(lib)
        lib.manual_seed(7)
        step(lib.nn.utils.prune, conv)
        return _state(conv)
    return program


STEPS = {
    "identity": lambda prune, m: prune.identity(m, "weight"),
    "l1 fraction": lambda prune, m: prune.l1_unstructured(m, "weight", amount=0.4),
    "l1 count": lambda prune, m: prune.l1_unstructured(m, "weight", amount=17),
    "l1 bias": lambda prune, m: prune.l1_unstructured(m, "bias", amount=2),
    "l1 all": lambda prune, m: prune.l1_unstructured(m, "weight", amount=1.0),
    "l1 none": lambda prune, m: prune.l1_unstructured(m, "weight", amount=0),
    "random unstructured": lambda prune, m: prune.random_unstructured(m, "weight", amount=0.3),
    "random structured": lambda prune, m: prune.random_structured(m, "weight", amount=2, dim=0),
    "random structured dim -1": lambda prune, m: prune.random_structured(m, "weight", amount=0.5, dim=-1),
    "ln structured L2": lambda prune, m: prune.ln_structured(m, "weight", amount=0.5, n=2, dim=0),
    "ln structured L1 ties": lambda prune, m: prune.ln_structured(m, "weight", amount=1, n=1, dim=1),
    "ln structured inf": lambda prune, m: prune.ln_structured(m, "weight", amount=2, n=float("inf"), dim=-1),
    "ln structured none": lambda prune, m: prune.ln_structured(m, "weight", amount=0, n=2, dim=0),
    "custom mask": lambda prune, m: prune.custom_from_mask(m, "bias", mask=m.bias > 0),
    "importance scores": lambda prune, m: prune.l1_unstructured(
        m, "weight", amount=5, importance_scores=m.weight.detach().flip(0)),
    "iterative": lambda prune, m: (prune.l1_unstructured(m, "weight", amount=0.3),
                                   prune.ln_structured(m, "weight", amount=1, n=2, dim=0),
                                   prune.random_unstructured(m, "weight", amount=4),
                                   prune.random_structured(m, "weight", amount=1, dim=1)),
    "remove": lambda prune, m: (prune.l1_unstructured(m, "weight", amount=0.5), prune.remove(m, "weight")),
    "remove after iterative": lambda prune, m: (prune.random_unstructured(m, "weight", amount=0.2),
                                                prune.l1_unstructured(m, "weight", amount=0.2),
                                                prune.remove(m, "weight")),
}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_pruning_matches_torch(name):
    _same(_pruned_with(STEPS[name]))


def test_ties_pick_torch_entries():
    """Every weight equal: which entries topk picks is all that decides the mask."""
    def program(lib):
        conv = _conv(lib, np.ones((4, 3, 2, 2), np.float32))
        lib.nn.utils.prune.l1_unstructured(conv, "weight", amount=20)
        lib.nn.utils.prune.ln_structured(conv, "weight", amount=2, n=1, dim=0)
        return _state(conv)
    _same(program)


def test_global_unstructured_matches_torch():
    def program(lib):
        lib.manual_seed(3)
        net = lib.nn.Sequential(lib.nn.Linear(5, 4), lib.nn.ReLU(), lib.nn.Linear(4, 3))
        prune = lib.nn.utils.prune
        prune.l1_unstructured(net[0], "weight", amount=3)
        parameters = [(net[0], "weight"), (net[2], "weight"), (net[2], "bias")]
        scores = {(net[2], "bias"): lib.zeros(3)}
        prune.global_unstructured(parameters, prune.L1Unstructured, importance_scores=scores, amount=0.4)
        lib.manual_seed(4)
        prune.global_unstructured(parameters, pruning_method=prune.RandomUnstructured, amount=2)
        return [_state(net[0]), _state(net[2]), len(next(iter(net[0]._forward_pre_hooks.values())))]
    _same(program)


def test_forward_recomputes_the_pruned_weight():
    """The hook rebuilds `weight` from weight_orig before each call; gradients reach weight_orig through the mask."""
    def program(lib):
        conv = _conv(lib)
        lib.nn.utils.prune.l1_unstructured(conv, "weight", amount=0.5)
        with lib.no_grad():
            conv.weight_orig.mul_(2)
        out = conv(lib.arange(48.0).reshape(1, 3, 4, 4))
        out.sum().backward()
        return [out.detach().numpy().round(4).tolist(), conv.weight_orig.grad.numpy().tolist(), _state(conv)]
    _same(program)


def test_containers_and_methods():
    def program(lib):
        prune = lib.nn.utils.prune
        conv = _conv(lib)
        first = prune.L1Unstructured.apply(conv, "weight", amount=3)
        container = prune.RandomStructured.apply(conv, "weight", amount=1, dim=0)
        t = lib.tensor([[1.0, -4.0], [2.0, 3.0]])
        pruned = prune.L1Unstructured(amount=2).prune(t, importance_scores=-t.flip(1))
        return [type(container).__name__, len(container), container[0] is first, [type(m).__name__ for m in
                container], container._tensor_name, prune.is_pruned(conv), prune.is_pruned(lib.nn.Linear(1, 1)),
                pruned.numpy().tolist()]
    _same(program)


def _two_methods(lib):
    prune = lib.nn.utils.prune
    a, b = prune.L1Unstructured(0.1), prune.Identity()
    a._tensor_name, b._tensor_name = "weight", "bias"
    return prune.PruningContainer(a).add_pruning_method(b)


ERRORS = {
    "amount type": lambda lib: lib.nn.utils.prune.L1Unstructured(amount="1"),
    "amount negative": lambda lib: lib.nn.utils.prune.RandomUnstructured(-1),
    "amount above 1": lambda lib: lib.nn.utils.prune.RandomStructured(1.5),
    "count too large": lambda lib: lib.nn.utils.prune.l1_unstructured(_conv(lib), "weight", amount=49),
    "structured on a vector": lambda lib: lib.nn.utils.prune.ln_structured(_conv(lib), "bias", 1, n=2, dim=0),
    "dim out of range": lambda lib: lib.nn.utils.prune.random_structured(_conv(lib), "weight", 1, dim=4),
    "scores shape": lambda lib: lib.nn.utils.prune.l1_unstructured(_conv(lib), "weight", 1,
                                                                  importance_scores=lib.ones(3)),
    "remove unpruned": lambda lib: lib.nn.utils.prune.remove(lib.nn.Linear(2, 2), "weight"),
    "remove unapplied": lambda lib: lib.nn.utils.prune.Identity().remove(lib.nn.Linear(2, 2)),
    "not a method": lambda lib: lib.nn.utils.prune.PruningContainer(3),
    "other tensor": _two_methods,
    "global not iterable": lambda lib: lib.nn.utils.prune.global_unstructured(
        3, lib.nn.utils.prune.L1Unstructured, amount=1),
    "global scores type": lambda lib: lib.nn.utils.prune.global_unstructured(
        [], lib.nn.utils.prune.L1Unstructured, importance_scores=[], amount=1),
    "global structured": lambda lib: lib.nn.utils.prune.global_unstructured(
        [(_conv(lib), "weight")], lib.nn.utils.prune.RandomStructured, amount=1),
    "abstract": lambda lib: lib.nn.utils.prune.BasePruningMethod(),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    same_error(lambda lib: _without_addresses(ERRORS[name], lib))


def _without_addresses(fn, lib):
    """fn(lib), its error message without object addresses (`<... object at 0x7f...>`)."""
    try:
        fn(lib)
    except Exception as error:
        raise type(error)(re.sub(" at 0x[0-9a-f]+", "", str(error))) from None


def test_failed_pruning_leaves_the_module_as_it_was():
    def program(lib):
        conv = _conv(lib)
        with pytest.raises(ValueError):
            lib.nn.utils.prune.random_structured(conv, "bias", amount=1, dim=0)
        return _state(conv)
    _same(program)
