"""Views under autograd: in-place ops on views (CopySlices) and views whose memory changed under them.

A view shares memory with its base, so an in-place op through the view changes the base too. The base's history
becomes CopySlices: its gradient is the old one, except in the view's region, where the in-place op's backward
applies. The view itself then reads its gradient out of the base's (AsStridedBackward0). Any other view of the
same memory notices, from the shared version counter, that its grad_fn is stale and gets a fresh one the same way.

>>> x = lantern.tensor([1., 1., 1., 1.], requires_grad=True)
>>> y = x * 1
>>> y.narrow(0, 1, 2).mul_(10)
tensor([10., 10.], grad_fn=<AsStridedBackward0>)
>>> y.sum().backward(); x.grad.tolist()
[1.0, 10.0, 10.0, 1.0]
"""
from ..core.state import tls
from ..ops.derivative_helpers import zeros_like
from ..ops.dispatcher import call
from ..ops.registry import get
from .graph import InputMeta, Node, gradient_edge
from .meta import autograd_meta


class _Geometry:
    """Where a tensor lies in its base's memory, and whether it reads that memory conjugated or negated where the
    base does not (a conjugate view: lantern/ops/math_bits.py)."""

    __slots__ = ("size", "stride", "offset", "dtype", "device", "conj", "neg")

    def __init__(self, t, relative_to=None):
        self.size, self.stride = t._size, t._stride
        self.offset = t._offset - (relative_to._offset if relative_to is not None else 0)
        self.dtype, self.device = t.dtype, t.device
        self.conj, self.neg = t.is_conj(), t.is_neg()
        if relative_to is not None:
            self.conj, self.neg = self.conj != relative_to.is_conj(), self.neg != relative_to.is_neg()

    def through_bits(self, grad):
        """grad passed through this view's bits relative to its base: a gradient of the view's values becomes one
        of the base memory's, and back (conjugation and negation are their own inverses)."""
        if self.conj:
            grad = grad.conj_physical()
        return grad.neg() if self.neg else grad


def _base_shaped(grad, geometry):
    """A tensor laid out like the base (same strides), holding `grad` (made from grad, so that a batched grad under
    vmap gets a batched one)."""
    out = grad.new_empty_strided(geometry.size, geometry.stride, dtype=geometry.dtype, device=geometry.device)
    return call(get("copy_"), (out, grad, False))


class CopySlices(Node):
    """The base's grad_fn after an in-place op on one of its views."""

    __slots__ = ("base", "view", "fn")
    qualified_name = "torch::autograd::CopySlices"  # how PyTorch's messages name it

    @staticmethod
    def rebase(base, view, fn):
        node = CopySlices((gradient_edge(base),) + tuple(fn.next_functions[1:]), (InputMeta(base),))
        node.base = _Geometry(base)
        node.view = _Geometry(view, relative_to=base)
        node.fn = fn
        base._requires_grad = True
        base._grad_fn = node
        base._output_nr = 0
        reader = AsStridedBackward0(((node, 0),), (InputMeta(view),))
        reader.base, reader.view = node.base, node.view
        view._requires_grad = True
        view._grad_fn = reader
        view._output_nr = 0

    def apply(self, grads):
        result = _base_shaped(grads[0], self.base)
        v = self.view
        region = result.as_strided(v.size, v.stride, v.offset)
        res = self.fn.apply((v.through_bits(region.clone()),))
        inner = v.through_bits(res[0]) if res[0] is not None else zeros_like(region)
        # written into the region in place, not with as_strided_scatter: copy_'s derivative gives the region's old
        # values none, where as_strided_scatter's self gradient is torch's (the reverse; view_scatter.py), which
        # would make double backward through in-place ops on views wrong
        call(get("copy_"), (region, inner, False))
        return (result,) + tuple(res[1:])

    def release_saved(self):
        release = getattr(self.fn, "release_saved", None)
        if release is not None:
            release()


class AsStridedBackward0(Node):
    """A view's grad_fn when it reads its gradient out of its base's: scatter into zeros shaped like the base."""

    __slots__ = ("base", "view")

    def apply(self, grads):
        v, b = self.view, self.base
        zeros = call(get("empty_strided"), (b.size, b.stride, b.dtype, None, b.device, None, False)).zero_()
        return (call(get("as_strided_scatter"), (zeros, v.through_bits(grads[0]), v.size, v.stride, v.offset)),)


def record_view(view, source=None):
    """Remember the version a view's grad_fn belongs to (so an in-place change of its memory is noticed). A view of
    a view that may not be modified in place (an output of split, unbind; see below) may not be either."""
    if view._requires_grad:
        autograd_meta(view).attr_version = view._vc[0]
        if source is not None and "_custom_function_view" in source.__dict__:
            view._custom_function_view = _inplace_error(view, source._custom_function_view.partition("This view ")[2])


def record_multi_output_views(views):
    """record_view for each output of an op returning several views (split, unbind): PyTorch forbids modifying
    them in place while autograd records, since their one node could not rebase a single output's history."""
    for view in views:
        if view._requires_grad:
            autograd_meta(view).attr_version = view._vc[0]
            view._custom_function_view = _inplace_error(view, _MULTI_OUTPUT)


_MULTI_OUTPUT = ("is the output of a function that returns multiple views. Such functions do not allow the output "
                 "views to be modified inplace. You should replace the inplace operation by an out-of-place one.")


def _inplace_error(view, why):
    """What kernel._check_inplace_allowed raises, naming the view's node as PyTorch does (Split, Select)."""
    name = view._grad_fn.name()
    return f"Output {view._output_nr} of {name[:name.rindex('Backward')]} is a view and is being modified inplace. " \
           f"This view {why}"


def regenerate_view_grad_fn(view):
    """A fresh grad_fn for a view whose memory was modified in place. An output of split or unbind has none to get:
    PyTorch raises, as for modifying it in place."""
    refused = view.__dict__.get("_custom_function_view", "")
    if refused.endswith(_MULTI_OUTPUT):
        raise RuntimeError(refused.replace("is being modified inplace",
                                           "its base or another view of its base has been modified inplace", 1))
    base = view._base
    node = AsStridedBackward0((gradient_edge(base),), (InputMeta(view),))
    node.base, node.view = _Geometry(base), _Geometry(view, relative_to=base)
    view._grad_fn = node
    view._output_nr = 0
    view._requires_grad = view._requires_grad or base._requires_grad
    view._autograd.attr_version = view._vc[0]
    return node


