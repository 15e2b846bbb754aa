"""The Autograd dispatch key's kernel: one generic function for every op.

It computes by redispatching below itself (grad mode off, so kernels that call other ops record nothing), then
records one OpNode from the op's declared derivative: edges to the inputs' nodes, saved tensors with their
versions, and the outputs' new grad_fn. In-place ops rebase the tensor's history; an in-place op on a view
rebases its base's history through CopySlices, as PyTorch does.

>>> y = lantern.ones(4, requires_grad=True) * 1
>>> y.narrow(0, 1, 2).mul_(10)
tensor([10., 10.], grad_fn=<AsStridedBackward0>)
>>> y.grad_fn.name()
'CopySlices'
"""
from ..core.dispatch_keys import DispatchKey
from ..core.reference import mode, specialisation
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..ops import dispatcher
from ..ops.derivative import TensorMeta
from ..ops.op_kinds import AliasKind, OpKind
from .anomaly import remember_forward
from .graph import InputMeta, Node, SavedTensor, gradient_edge
from .meta import autograd_meta
from .node import node_class, save_value
from .recorder import recorder_for
from .views import CopySlices, record_multi_output_views, record_view

_DIRECT_KINDS = (OpKind.STRUCTURED, OpKind.STRUCTURED_INPLACE, OpKind.VIEW)  # their kernels never call other ops
# Python 3.11's EnumType has a __getattr__, which sends every attribute read of an enum class (AliasKind.VIEW)
# through Python-level lookup: ~70 ns, against ~7 for a module constant. The per-call paths read these instead.
_VIEW, _INPLACE, _OUT = AliasKind.VIEW, AliasKind.INPLACE, AliasKind.OUT
_AUTOGRAD = DispatchKey.Autograd
_BATCHED = DispatchKey.FuncTorchBatched


def autograd_kernel(op, args, backend):
    """Check the call, compute below Autograd, then record: build the node, save what its formulas read, and set
    the outputs' history. An op with its own Autograd kernel (a lantern.library registration) runs that instead.
    vmap's layer sits above this one: a call on BatchedTensors goes to its batching rule, whose ops autograd records."""
    if backend.key is _BATCHED:
        return op.kernels[_BATCHED](op, args)
    own = op.kernels.get(_AUTOGRAD)
    if own is not None:
        return own(op, args, backend)
    inplace = _check(op, args)
    d = op.derivative
    edges = _differentiable_edges(d, args)
    self_before = _self_before_inplace(d, args, edges) if inplace and edges is not None else None
    result = _compute(op, args, backend)
    if d is None:
        return _record_not_implemented(op, args, result)
    if edges is None:
        return result
    node = _build_node(d, args, edges, result)
    to_save, saves_result = d.plan(node.needs)  # what the formulas that will run read
    if to_save:
        _save_inputs(node, args, to_save, self_before)
    _set_history(op, args, result, node)
    if saves_result:  # after the history is set: a pack hook sees the output as the user will
        _save_outputs(node, result, saves_result)
    return result


def autograd_entry():
    """The kernel the dispatcher calls for the Autograd key: autograd_kernel, or in front of it, outside reference
    mode, the one-output specialisation (which hands it every call it does not fit)."""
    return _one_output_autograd_kernel if mode.fast else autograd_kernel


class _FitsOneOutputKernel(dict):
    """op -> may _one_output_autograd_kernel record its calls (decided on an op's first call)."""

    def __missing__(self, op):
        d = op.derivative
        schema = op.schema
        fits = self[op] = (
            schema.alias in (AliasKind.NEW, AliasKind.VIEW) and d is not None and not d.nondifferentiable and not d.scalar_groups
            and len(schema.returns) == 1 and schema.returns[0].is_tensor and not schema.returns[0].is_list
            and all(schema.args[i].is_tensor and not schema.args[i].is_list for i in d.arg_indices))
        return fits


_FITS_ONE_OUTPUT_KERNEL = _FitsOneOutputKernel()


@specialisation(
    replaces="autograd_kernel (check -> compute -> build node -> save -> set history, a call each)",
    when="an op that is neither in-place nor out=, returns one Tensor and whose formulas each take one Tensor "
         "argument, called with tensors there, outside reference mode; anomaly mode and saved-tensor hooks take "
         "the phases",
    parity_test="tests/test_engine_phases.py::test_one_output_kernel_matches_the_phases")
def _one_output_autograd_kernel(op, args, backend):
    """The phases in one generated function per op for the commonest call (lantern/autograd/recorder.py): the op's
    recorder, made on its first call. A call the recorder does not fit goes to autograd_kernel."""
    record = _RECORDERS.get(op)
    if record is None:
        record = _RECORDERS[op] = recorder_for(op) if _FITS_ONE_OUTPUT_KERNEL[op] else _fits_no_call
    result = record(args, backend)
    return autograd_kernel(op, args, backend) if result is None else result


_RECORDERS = {}  # op -> its generated recorder (_fits_no_call for an op the one-output kernel never records)


def _fits_no_call(args, backend):
    """The recorder of an op that _FITS_ONE_OUTPUT_KERNEL refuses: every call records through the phases."""
    return None


# ---- check ----
def _check(op, args):
    """Refuse what autograd cannot record (out= calls, in-place changes of leaves); True for an in-place op."""
    alias = op.schema.alias
    if alias is _OUT:
        raise RuntimeError(f"{op.schema.name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if alias is _INPLACE:
        _check_inplace_allowed(args[0])
        return True
    return False


def _check_inplace_allowed(self_):
    if self_._requires_grad:
        if self_._base is not None and "_custom_function_view" in self_.__dict__:
            raise RuntimeError(self_._custom_function_view)
        if self_._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        base = self_._base
        if base is not None and base._requires_grad and base._grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")


def _self_before_inplace(d, args, edges):
    """`self` as it was before an in-place op, when a formula that will run reads it; cloned with grad mode on, so
    double backward still reaches self's history (PyTorch saves `original_self = self.clone()` the same way)."""
    to_save, _ = d.plan(edges[1])
    return args[0].clone() if ("self", 0, "tensor") in to_save else None


# ---- compute ----
def _compute(op, args, backend):
    """Redispatch below Autograd. Composite-style kernels call other ops, which must not record: grad mode is off
    while they run."""
    kernel = op.kernels.get(backend.key)
    if kernel is None:
        dispatcher.raise_missing_kernel(op, backend)
    if op.kind in _DIRECT_KINDS:
        return kernel(op, args)
    tls.grad_enabled = False
    try:
        return kernel(op, args)
    finally:
        tls.grad_enabled = True


# ---- build node ----
def _build_node(d, args, edges, result):
    """The op's node: its derivative, an edge per differentiable input, and what its outputs look like."""
    next_functions, needs, edge_counts = edges
    node = (d.node_cls or _node_class(d, args))(next_functions, _output_metas(result))
    node.derivative, node.needs, node.edge_counts, node.saved = d, needs, edge_counts, {}
    if tls.anomaly:
        remember_forward(node)
    return node


def _node_class(d, args):
    """MulBackward0 & co.: made once per name, then kept on the derivative; a derivative whose name depends on the
    call (SumBackward0 / SumBackward1) keeps one per name."""
    if callable(d._name):
        name = d._name(args)
        return d.node_classes.get(name) or d.node_classes.setdefault(name, node_class(name, d))
    d.node_cls = node_class(d._name, d)
    return d.node_cls


def _output_metas(result):
    if isinstance(result, tuple):
        return tuple(InputMeta(o) for o in result)
    return (InputMeta(result),)


# ---- save ----
def _save_inputs(node, args, to_save, self_before):
    """What the formulas read of the arguments: tensors (with their versions), geometry, values."""
    saved = node.saved
    for name, index, kind in to_save:
        if kind == "tensor":
            a = self_before if self_before is not None and name == "self" else args[index]
            saved[name] = SavedTensor(a) if isinstance(a, TensorImpl) else save_value(a)
        elif kind == "meta":
            saved[name] = TensorMeta(args[index])
        elif kind == "metas":
            saved[name] = [TensorMeta(t) for t in args[index]]
        else:
            saved[name] = args[index]


def _save_outputs(node, result, saves_result):
    for name, index in saves_result:
        if index is not None:
            node.saved[name] = save_value(result[index], True, index)
        elif isinstance(result, tuple):
            node.saved[name] = tuple(save_value(o, True, i) for i, o in enumerate(result))
        else:
            node.saved[name] = save_value(result, True, 0)


# ---- set history ----
def _set_history(op, args, result, node):
    """The outputs' grad_fn becomes the node (only floating and complex tensors carry gradients); an in-place op
    rebases self's
    history, a view records its base."""
    if op.schema.alias is _INPLACE:
        _rebase_inplace(args[0], node)
    elif isinstance(result, tuple):
        for nr, o in enumerate(result):
            if isinstance(o, TensorImpl) and (o.dtype.is_floating_point or o.dtype.is_complex):
                _set_output_history(o, node, nr)
        if op.schema.alias is _VIEW:
            record_multi_output_views(result)
    else:
        if result.dtype.is_floating_point or result.dtype.is_complex:
            _set_output_history(result, node, 0)
        if op.schema.alias is _VIEW:
            record_view(result, args[0])


def _set_output_history(t, node, nr):
    t._requires_grad = True
    t._grad_fn = node
    t._output_nr = nr


_NO_EDGE = (None, 0)


def _differentiable_edges(d, args):
    """(edges, needs per formula, edge counts), or None when the op has no formulas or no input needs a gradient.

    One edge per differentiable input; `counts` (None when every formula has exactly one) maps a formula to its
    number of edges: a list argument (cat's tensors) has one per element, a number given for a Scalar-overload
    argument has none."""
    if d is None or d.nondifferentiable:
        return None
    edges, needs, counts = [], [], None
    for k, index in enumerate(d.arg_indices):
        a = args[index]
        if isinstance(a, TensorImpl):
            needs.append(a._requires_grad)
            edges.append(gradient_edge(a) if a._requires_grad else _NO_EDGE)
        elif isinstance(a, (list, tuple)):
            counts = counts or {}
            counts[k] = len(a)
            needs.append(any(isinstance(t, TensorImpl) and t._requires_grad for t in a))
            edges.extend(gradient_edge(t) if isinstance(t, TensorImpl) and t._requires_grad else _NO_EDGE
                         for t in a)
        else:
            needs.append(False)
            if _number_for_scalar_overload(d, k, args):
                counts = counts or {}
                counts[k] = 0
            else:
                edges.append(_NO_EDGE)
    if True not in needs:
        return None
    return tuple(edges), tuple(needs), counts


def _number_for_scalar_overload(d, k, args):
    """Was formula k's argument given as a number where the op also takes one (add(Tensor, Scalar)): no edge."""
    group = d.scalar_groups.get(k)
    return group is not None and not any(isinstance(args[i], TensorImpl) for i in group)


def _rebase_inplace(self_, node):
    base = self_._base
    if base is not None and self_.dtype is base.dtype:
        CopySlices.rebase(base, self_, node)
    else:
        _set_output_history(self_, node, 0)
    if base is not None or self_._autograd is not None:
        autograd_meta(self_).attr_version = self_._vc[0]


class NotImplementedBackward(Node):
    """Recorded for an op with no declared derivative: fails with its message only if backward reaches it."""

    __slots__ = ("message",)

    def apply(self, grads):
        raise RuntimeError(self.message)


NotImplementedBackward.__name__ = "NotImplemented"  # type(grad_fn).__name__ as in PyTorch


def _record_not_implemented(op, args, result):
    name = op.schema.name if "::" in op.schema.name else f"aten::{op.schema.name}"
    return record_without_derivative(op, args, result, (
        f"derivative for {name} is not implemented: the derivative for '{op.schema.name}' is not implemented in "
        "lantern; compute it outside autograd (under lantern.no_grad()) or write an autograd.Function for it."))


def record_without_derivative(op, args, result, message):
    """Give the outputs a node that raises `message` if backward reaches it (an op with no derivative; a
    lantern.library op with no autograd formula)."""
    tensors = [a for i in op.tensor_positions for a in (args[i],) if isinstance(a, TensorImpl)]
    tensors += [t for i in op.list_positions for t in args[i] if isinstance(t, TensorImpl)]
    if not any(t._requires_grad for t in tensors):
        return result
    outputs = result if isinstance(result, tuple) else (result,)
    node = NotImplementedBackward(tuple(gradient_edge(t) if t._requires_grad else _NO_EDGE for t in tensors),
                                  tuple(InputMeta(o) for o in outputs if isinstance(o, TensorImpl)))
    node.message = message
    for nr, o in enumerate(outputs):
        if isinstance(o, TensorImpl) and (o.dtype.is_floating_point or o.dtype.is_complex):
            _set_output_history(o, node, nr)
    return result
