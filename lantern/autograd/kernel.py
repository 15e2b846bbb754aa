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
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..ops import dispatcher
from ..ops.derivative import TensorMeta
from .graph import InputMeta, Node, SavedTensor, _sequence, gradient_edge
from .meta import autograd_meta
from .node import node_class, save_value
from .saved_hooks import _hooks as _hook_stack
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
    differentiable = d is not None and not d.nondifferentiable
    if differentiable:
        edges, needs, edge_counts = _edges(d, args)
        if True not in needs:
            differentiable = False
        else:
            to_save, saves_result = d._plans.get(needs) or d.plan(needs)
            # an in-place op's formulas read `self` as it was before the op
            self_before = _copy_before_inplace(args[0]) if inplace and ("self", 0, "tensor") in to_save else None

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
    if not differentiable:
        return result

    cls = d.node_cls
    if cls is None:
        name = d._name
        if callable(name):  # the name depends on the call (SumBackward0 / SumBackward1)
            cls = node_class(name(args))
        else:
            cls = d.node_cls = node_class(name)
    node = _new(cls)
    node.next_functions = edges
    node._seq = next(_sequence)
    node.derivative, node.needs, node.edge_counts = d, needs, edge_counts
    saved = {}
    plain = not _hook_stack.stack  # no saved-tensor hooks: inputs are kept as they are
    for name, index, kind in to_save:
        if kind == "tensor":
            if self_before is not None and name == "self":
                saved[name] = self_before
            else:
                a = args[index]
                if plain and isinstance(a, TensorImpl) and not a._is_inference:
                    st = saved[name] = _new(SavedTensor)  # SavedTensor(a), written out
                    st.tensor, st.version, st.is_output, st.output_nr = a, a._vc[0], False, 0
                    st.hooks_packed, st.unpack_hook = False, None
                else:
                    saved[name] = save_value(a)
        elif kind == "meta":
            a = args[index]
            m = saved[name] = _new(TensorMeta)  # TensorMeta(a), written out
            m.size, m.stride, m.offset, m.dtype, m.device = a._size, a._stride, a._offset, a.dtype, a._backend.device
        elif kind == "metas":
            saved[name] = [TensorMeta(t) for t in args[index]]
        else:
            saved[name] = args[index]
    multi = isinstance(result, tuple)
    if multi:
        node._input_meta = tuple(InputMeta(o) for o in result)
    else:
        meta = _new(InputMeta)  # InputMeta(result), written out: every recorded op makes one
        meta.shape, meta.dtype, meta.backend = result._size, result.dtype, result._backend
        node._input_meta = (meta,)
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
    for name, index in saves_result:  # after the history is set: a pack hook sees the output as the user will
        if index is not None:
            saved[name] = save_value(result[index], True, index)
        else:
            saved[name] = (tuple(save_value(o, True, i) for i, o in enumerate(result))
                           if multi else save_value(result, True, 0))
    return result


def _set_history(t, node, nr):
    t._requires_grad = True
    t._grad_fn = node
    t._output_nr = nr


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


def _copy_before_inplace(self_):
    """`self` as it was before an in-place op, for formulas that read it; cloned with grad mode on, so double
    backward still reaches self's history (PyTorch saves `original_self = self.clone()` the same way)."""
    return save_value(self_.clone())


_NO_EDGE = (None, 0)


def _single_tensor_inputs(d):
    """Is every formula's input a single Tensor argument (no list, no Scalar overload)? Then a call whose inputs
    are all tensors has one edge per formula."""
    schema_args = d.op.schema.args
    return not d.scalar_groups and all(schema_args[i].is_tensor and not schema_args[i].is_list
                                       for i in d.arg_indices)


_SIMPLE = {}  # Derivative -> _single_tensor_inputs(d)


def _edges(d, args):
    """(edges, needs per formula, edge counts): one edge per differentiable input; `counts` (None when every
    formula has exactly one) maps a formula to its number of edges: a list argument (cat's tensors) has one per
    element, a number given for a Scalar-overload argument has none."""
    simple = _SIMPLE.get(d)
    if simple is None:
        simple = _SIMPLE[d] = _single_tensor_inputs(d)
    if simple:
        edges, needs = [], []
        for index in d.arg_indices:
            a = args[index]
            if not isinstance(a, TensorImpl):
                break
            if a._requires_grad:
                needs.append(True)
                meta = a._autograd  # gradient_edge(a), its common cases written out
                if meta is None or meta.attr_version is None:
                    fn = a._grad_fn
                    if fn is not None:
                        edges.append((fn, a._output_nr))
                    elif meta is not None and meta.grad_accumulator is not None:
                        edges.append((meta.grad_accumulator, 0))
                    else:
                        edges.append(gradient_edge(a))
                else:
                    edges.append(gradient_edge(a))
            else:
                needs.append(False)
                edges.append(_NO_EDGE)
        else:
            return tuple(edges), tuple(needs), None
    edges, needs, counts = [], [], None
    for k, index in enumerate(d.arg_indices):
        a = args[index]
        if isinstance(a, TensorImpl):
            need = a._requires_grad
            needs.append(need)
            edges.append(gradient_edge(a) if need else _NO_EDGE)
        elif isinstance(a, (list, tuple)):
            if counts is None:
                counts = {}
            counts[k] = len(a)
            needs.append(any(isinstance(t, TensorImpl) and t._requires_grad for t in a))
            edges.extend(gradient_edge(t) if isinstance(t, TensorImpl) and t._requires_grad else _NO_EDGE
                         for t in a)
        else:
            needs.append(False)
            group = d.scalar_groups.get(k)
            if group is not None and not any(isinstance(args[i], TensorImpl) for i in group):
                if counts is None:
                    counts = {}
                counts[k] = 0
            else:
                edges.append(_NO_EDGE)
    return tuple(edges), tuple(needs), counts


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
        raise RuntimeError(f"derivative for aten::{self.op_name} is not implemented: the derivative for "
                           f"'{self.op_name}' is not implemented in lantern; compute it outside autograd (under "
                           "lantern.no_grad()) or write an autograd.Function for it.")


NotImplementedBackward.__name__ = "NotImplemented"  # type(grad_fn).__name__ as in PyTorch


def _record_not_implemented(op, args, result):
    tensors = [a for i in op.tensor_positions for a in (args[i],) if isinstance(a, TensorImpl)]
    tensors += [t for i in op.list_positions for t in args[i] if isinstance(t, TensorImpl)]
    if not any(t._requires_grad for t in tensors):
        return result
    node = NotImplementedBackward(tuple(gradient_edge(t) if t._requires_grad else (None, 0) for t in tensors))
    node.op_name = op.schema.name
    outputs = result if isinstance(result, tuple) else (result,)
    node._input_meta = tuple(InputMeta(o) for o in outputs if isinstance(o, TensorImpl))
    for nr, o in enumerate(outputs):
        if isinstance(o, TensorImpl) and o.dtype.category >= 2:
            _set_history(o, node, nr)
    return result
