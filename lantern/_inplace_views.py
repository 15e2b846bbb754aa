"""The in-place view methods (`t_`, `transpose_`, `squeeze_`, `unsqueeze_`, `as_strided_`, ...): the tensor itself
takes the geometry its view op would give a new tensor.

The view op runs first (with its checks, its errors and its autograd node); then the tensor adopts the view's sizes,
strides and offset, and its version counter moves on, as after any in-place op. Under autograd the tensor's history
becomes the view's node (`x.t_()` leaves x with a TBackward node over its old history); a tensor that is itself a
view of some base stays that base's view, and reads its gradient out of the base's as any view written in place.

>>> import lantern as torch
>>> x = torch.zeros(2, 3)
>>> x.t_() is x, x.shape, x.stride(), x._version
(True, lantern.Size([3, 2]), (1, 3), 1)
>>> x.unsqueeze_(0).squeeze_().shape
lantern.Size([3, 2])
"""
from .autograd.kernel import _check_inplace_allowed
from .core.state import tls
from .ops.dispatcher import refuse_inference_write
from .core.overridable import overridable


def _adopt_view(self, view):
    """Give `self` the geometry (and, under autograd, the history) of `view`, an alias of self's memory."""
    self._size, self._stride, self._offset, self._nd = view._size, view._stride, view._offset, None
    if view._requires_grad and self._base is None:
        self._grad_fn, self._output_nr = view._grad_fn, view._output_nr
    self._bump_version()
    return self


def _in_place(self, view_of):
    """Run `view_of(self)` and make self that view; refuse what an in-place op on self must refuse."""
    if self._is_inference and not tls.inference_mode:
        refuse_inference_write(self)
    if tls.grad_enabled:
        _check_inplace_allowed(self)
    return _adopt_view(self, view_of(self))


class InplaceViewMethods:
    """Tensor's in-place view methods (a mixin of lantern.Tensor)."""

    __slots__ = ()

    @overridable
    def t_(self):
        if self.dim() > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return _in_place(self, lambda t: t.t())

    @overridable
    def transpose_(self, dim0, dim1):
        return _in_place(self, lambda t: t.transpose(dim0, dim1))

    swapaxes_ = swapdims_ = transpose_

    @overridable
    def squeeze_(self, dim=None):
        return _in_place(self, lambda t: t.squeeze(dim))

    @overridable
    def unsqueeze_(self, dim):
        return _in_place(self, lambda t: t.unsqueeze(dim))

    @overridable
    def as_strided_(self, size, stride, storage_offset=None):
        return _in_place(self, lambda t: t.as_strided(size, stride, storage_offset))
