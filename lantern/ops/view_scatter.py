"""The *_scatter ops: a copy of `self` with `src` written into one view of it (slice, select, diagonal, as_strided).

They are the functional inverses of the view ops, so view ops' backward formulas are built from them (scatter the
gradient into zeros) and stay differentiable.

>>> lantern.zeros(2, 3).select_scatter(lantern.ones(3), 0, 1).tolist()
[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
"""
from .dispatcher import call
from .pointwise_common import _require_tensor
from .registry import custom, get
from .shape import empty_like_strided
from .derivative import derivative
from .indexing_common import _filled


def _scatter(view_name):
    view_op = get(view_name)

    def kernel(backend, self, src, *view_args):
        _require_tensor(f"{view_name}_scatter", self)
        out = empty_like_strided(backend, self, self.dtype)
        view = call(view_op, (out,) + view_args)
        if view._size != src._size:
            raise RuntimeError(f"{view_name}_scatter: expected src to have a size equal to the slice of self. src "
                               f"size = {list(src._size)}, slice size = {list(view._size)}")
        if backend.xp is not None:
            backend.array(out)[...] = backend.array(self)
            backend.array(view)[...] = backend.array(src)
        return out
    return kernel


for _name, _args in (("slice", "int dim=0, int? start=None, int? end=None, int step=1"),
                     ("select", "int dim, int index"),
                     ("diagonal", "int offset=0, int dim1=0, int dim2=1")):
    _k = _scatter(_name)
    custom(f"{_name}_scatter(Tensor self, Tensor src, {_args}) -> Tensor", _k, _k)


def _as_strided_scatter(backend, self, src, size, stride, storage_offset=None):
    """as_strided addresses storage, not self's elements: the result keeps self's sizes, strides and storage offset
    over a copy of self's whole storage, so that the view reaches the storage elements it would reach in self (a
    non-contiguous self's gaps included), as in PyTorch."""
    _require_tensor("as_strided_scatter", self)
    if self.requires_grad and not self.is_contiguous():  # torch's backward formula assumes a contiguous self
        raise RuntimeError("as_strided_scatter is currently only supported for contiguous inputs (self requires "
                           f"grad and has strides {list(self._stride)}: pass self.contiguous())")
    self = self.detach()
    whole = self.untyped_storage().nbytes() // self.dtype.itemsize
    storage = backend.empty((whole,), self.dtype)
    if backend.xp is not None:
        backend.array(storage)[...] = backend.array(call(_AS_STRIDED, (self, (whole,), (1,), 0)))
    out = call(_AS_STRIDED, (storage, self._size, self._stride, self._offset)).detach()
    view = call(_AS_STRIDED, (out, size, stride, storage_offset))
    if view._size != src._size:
        raise RuntimeError(f"as_strided_scatter: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._size)}, slice size = {list(view._size)}")
    if backend.xp is not None:
        backend.array(view)[...] = backend.array(src)
    return out


_AS_STRIDED = get("as_strided")
custom("as_strided_scatter(Tensor self, Tensor src, int[] size, int[] stride, int? storage_offset=None) -> Tensor",
       _as_strided_scatter, _as_strided_scatter)


def _unfold_backward(backend, grad, input_sizes, dimension, size, step):
    """unfold's windows may overlap (step < size), so gradients of shared elements are summed."""
    out = backend.empty(tuple(input_sizes), grad.dtype)
    backend.fill(out, 0)
    if backend.xp is not None:
        xp = backend.xp
        n = len(input_sizes)
        d = dimension % n if n else 0
        g = backend.array(grad)
        o = backend.array(out)
        windows = g.shape[d] if n else 1
        for w in range(windows):  # one slab per window position; the window length is the last axis
            index = [slice(None)] * n
            index[d] = slice(w * step, w * step + size)
            o[tuple(index)] += xp.moveaxis(xp.take(g, w, axis=d), -1, d) if n else g[w]
    return out


custom("unfold_backward(Tensor grad_in, int[] input_sizes, int dim, int size, int step) -> Tensor",
       _unfold_backward, _unfold_backward)


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

# ---- view scatters ----
derivative("slice_scatter", self="grad.slice_scatter(zeros_like(src_meta), dim, start, end, step)",
           src="grad.slice(dim, start, end, step)")
derivative("select_scatter", self="grad.select_scatter(zeros_like(src_meta), dim, index)", src="grad.select(dim, index)")
derivative("diagonal_scatter", self="grad.diagonal_scatter(zeros_like(src_meta), offset, dim1, dim2)",
           src="grad.diagonal(offset, dim1, dim2)")


def as_strided_scatter_self_backward(grad, self_meta, size, stride, storage_offset):
    """self's gradient as PyTorch 2.13 computes it (FunctionsManual's as_strided_scatter_backward): the incoming
    gradient at the positions src overwrote and zeros elsewhere, over a contiguous buffer of self's size read with
    self's strides. The derivative would be the reverse (the overwritten positions no longer depend on self), but
    gradients are compared with torch's, so lantern gives torch's answer.

    >>> x, src = lantern.zeros(2, 3, requires_grad=True), lantern.ones(2, requires_grad=True)
    >>> lantern.as_strided_scatter(x, src, (2,), (2,), 1).backward(lantern.ones(2, 3))
    >>> x.grad.tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    overwritten = grad.contiguous().as_strided(size, stride, storage_offset)
    buffer = _filled(self_meta.size, grad, "zeros").as_strided_scatter(overwritten, size, stride, storage_offset)
    return buffer.as_strided(self_meta.size, self_meta.stride, 0)


derivative("as_strided_scatter", self="as_strided_scatter_self_backward(grad, self_meta, size, stride, storage_offset)",
           src="grad.as_strided(size, stride, storage_offset)",
           helpers={"as_strided_scatter_self_backward": as_strided_scatter_self_backward})
derivative("unfold_backward", grad_in="grad.unfold(dim, size, step)")
