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
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..ops import dispatcher
from ..ops.derivative import TensorMeta
from .graph import InputMeta, Node, _sequence
from .meta import autograd_meta, gradient_edge
from .node import node_class, save_value
from .views import CopySlices, record_view

_new = object.__new__


_DIRECT_KINDS = ("structured", "structured_inplace", "view")  # their kernels never call other ops


def autograd_kernel(op, args, backend):
    d = op.derivative
    alias = op.schema.alias
    if alias == "out":
        raise RuntimeError(f"{op.schema.name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    inplace = alias == "inplace"
    if inplace:
        _check_inplace_allowed(args[0])
    saved_before = _save_self_before_inplace(d, args) if inplace else None

    kernel = op.kernels.get(backend.key)
    if kernel is None:
        dispatcher.raise_missing_kernel(op, backend)
    if op.kind in _DIRECT_KINDS:
        result = kernel(op, args)
    else:  # composite-style kernels call other ops: those must not record
        tls.grad_enabled = False
        try:
            result = kernel(op, args)
        finally:
            tls.grad_enabled = True

    if d is None:
        return _record_not_implemented(op, args, result)
    if d.nondifferentiable:
        return result
    edges, needs, list_lengths = _edges(d, args)
    if True not in needs:
        return result

    cls = d.node_cls
    if cls is None:
        cls = node_class(d.node_name(args))
        if not callable(d._name):
            d.node_cls = cls
    node = _new(cls)
    node.next_functions = edges
    node._seq = next(_sequence)
    node._hooks = node._pre_hooks = node._retains = node._trace = None
    node.derivative, node.needs, node.list_lengths, node._freed = d, needs, list_lengths, False
    saved = {}
    for name, index, kind in d.save_plan:
        if kind == "tensor":
            saved[name] = saved_before if (inplace and name == "self") else save_value(args[index])
        elif kind == "meta":
            saved[name] = TensorMeta(args[index])
        else:
            saved[name] = args[index]
    multi = isinstance(result, tuple)
    if multi:
        node._input_meta = tuple(InputMeta(o) for o in result)
    else:
        node._input_meta = (InputMeta(result),)
    if d.saves_result:
        saved["result"] = (tuple(save_value(o, True, i) for i, o in enumerate(result))
                           if multi else save_value(result, True, 0))
    node.saved = saved
    if tls.anomaly:
        from .anomaly import remember_forward
        remember_forward(node)

    if inplace:
        _rebase_inplace(args[0], node)
    elif multi:
        for nr, o in enumerate(result):
            if isinstance(o, TensorImpl) and o.dtype.category >= 2:  # floating or complex outputs only
                _set_history(o, node, nr)
    else:
        if result.dtype.category >= 2:
            result._requires_grad = True
            result._grad_fn = node
        if alias == "view":
            record_view(result)
    return result


def _set_history(t, node, nr):
    t._requires_grad = True
    t._grad_fn = node
    t._output_nr = nr


def _check_inplace_allowed(self_):
    if self_._requires_grad and self_._grad_fn is None and tls.grad_enabled:
        if self_._base is not None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    meta = self_._autograd
    if meta is not None and meta.is_inference and not tls.inference_mode:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make "
                           "a clone to get a normal tensor before doing inplace update.")


def _save_self_before_inplace(d, args):
    """An in-place op's formulas see `self` as it was before the op, so keep a copy when they use it."""
    if d is None or not d.uses_self:
        return None
    prev = tls.grad_enabled
    tls.grad_enabled = False
    try:
        return save_value(args[0].clone())
    finally:
        tls.grad_enabled = prev


def _edges(d, args):
    """(edges, needs per formula, list lengths per formula): one edge per differentiable input element."""
    edges, needs, list_lengths = [], [], None
    for k, (index, _, _) in enumerate(d.formulas):
        a = args[index]
        if isinstance(a, TensorImpl):
            if a._requires_grad:
                needs.append(True)
                edges.append(gradient_edge(a))
            else:
                needs.append(False)
                edges.append((None, 0))
        elif isinstance(a, (list, tuple)):
            if list_lengths is None:
                list_lengths = {}
            list_lengths[k] = len(a)
            need = False
            for t in a:
                if isinstance(t, TensorImpl) and t._requires_grad:
                    need = True
                    edges.append(gradient_edge(t))
                else:
                    edges.append((None, 0))
            needs.append(need)
        else:
            needs.append(False)
            edges.append((None, 0))
    return tuple(edges), tuple(needs), list_lengths


def _rebase_inplace(self_, node):
    base = self_._base
    if base is not None and self_.dtype is base.dtype:
        CopySlices.rebase(base, self_, node)
    else:
        _set_history(self_, node, 0)
    if base is not None or self_._autograd is not None:
        autograd_meta(self_).attr_version = self_._vc[0]


class NotImplementedBackward(Node):
    """Recorded for an op with no declared derivative: fails, naming the op, only if backward reaches it."""

    __slots__ = ("op_name",)

    def apply(self, grads):
        raise RuntimeError(f"the derivative for '{self.op_name}' is not implemented. lantern has no backward "
                           f"formula for this op yet; compute it outside autograd (under lantern.no_grad()) or "
                           "write an autograd.Function for it.")


def _record_not_implemented(op, args, result):
    tensors = [a for i in op.tensor_positions for a in (args[i],) if isinstance(a, TensorImpl)]
    tensors += [t for i in op.list_positions for t in args[i] if isinstance(t, TensorImpl)]
    if not any(t._requires_grad for t in tensors):
        return result
    node = NotImplementedBackward(tuple(gradient_edge(t) if t._requires_grad else (None, 0) for t in tensors))
    node.op_name = op.functional.schema.name
    outputs = result if isinstance(result, tuple) else (result,)
    node._input_meta = tuple(InputMeta(o) for o in outputs if isinstance(o, TensorImpl))
    for nr, o in enumerate(outputs):
        if isinstance(o, TensorImpl) and o.dtype.category >= 2:
            _set_history(o, node, nr)
    return result
