"""Sums of a kind: logsumexp, nansum, nanmean, and torch.norm (a frontend over linalg.vector_norm / matrix_norm),
each op's record, kernel and derivative together.

>>> lantern.logsumexp(lantern.tensor([1000., 1000.]), 0).item()
1000.6931762695312
>>> z = lantern.tensor([1., float("nan"), 3.])
>>> z.nansum().item(), z.nanmean().item(), lantern.norm(lantern.tensor([3., 4.])).item()
(4.0, 2.0, 5.0)
"""
import numpy as np

from ..core import dtype as dt
from .pointwise_common import FLOAT, _require_tensor
from .dispatcher import call
from .registry import composite, get, structured
from .derivative import derivative
from .linalg_norms import matrix_norm, vector_norm
from .derivative_helpers import conj, sum_backward, unsqueeze_reduced
from .reduction import _axes, _dims, _sum_like_meta, _where, reduced_shape


# ---- logsumexp, nansum, nanmean, count_nonzero -------------------------------------------------------------

def _logsumexp_meta(self, dim, keepdim=False):
    _require_tensor("logsumexp", self)
    if dim is None:  # a required argument: None does not mean every dim here
        raise TypeError("logsumexp(): argument 'dim' (position 2) must be tuple of ints, not NoneType (pass the "
                        "dims to reduce, () for all)")
    return reduced_shape(self._size, _dims(self, dim), keepdim), FLOAT(self.dtype)


def _logsumexp_impl(xp, out, dtype, self, dim, keepdim=False):
    """max + log(sum(exp(x - max))): no overflow; an infinite max is taken as 0 so inf and -inf slices stay exact.
    float16/bfloat16 compute in float32 and round to their dtype after each step, as PyTorch's chain of half
    precision ops does."""
    half = dtype.itemsize == 2
    a = self.astype(np.float32 if half else dtype)
    rounded = (lambda v: v.astype(dtype).astype(np.float32)) if half else (lambda v: v)
    axis = _axes(a, dim)
    peak = xp.amax(a.real if a.dtype.kind == "c" else a, axis=axis, keepdims=True) if a.size else xp.zeros(
        (1,) * a.ndim)
    peak = xp.where(xp.isfinite(peak), peak, 0)
    total = rounded(xp.log(rounded(xp.sum(rounded(xp.exp(rounded(a - peak))), axis=axis, keepdims=True)))) + peak
    out[...] = total.reshape(out.shape)


structured("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", _logsumexp_meta, _logsumexp_impl,
           inplace=False)


def logsumexp_backward(grad, self, result, dim, keepdim):
    sizes = self._size
    weights = (self - unsqueeze_reduced(result, sizes, dim, keepdim)).exp()
    return unsqueeze_reduced(grad, sizes, dim, keepdim) * conj(weights)


derivative("logsumexp", helpers={"logsumexp_backward": logsumexp_backward},
           self="logsumexp_backward(grad, self, result, dim, keepdim)")


def _nansum_meta(self, dim=None, keepdim=False, dtype=None):
    _require_tensor("nansum", self)
    if self.dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    return _sum_like_meta("nansum")(self, dim, keepdim, dtype)


def _nansum_impl(xp, out, dtype, self, dim=None, keepdim=False, dtype_arg=None):
    """nan counts as 0 (np.nansum would miss bfloat16's nans); half types add up in float32."""
    a = xp.where(xp.isnan(self), self.dtype.type(0), self) if self.dtype.kind in "fV" else self
    wide = np.float32 if dtype.itemsize == 2 and dtype.kind in "fV" else dtype
    out[...] = xp.sum(a, axis=_axes(a, dim), keepdims=keepdim, dtype=wide)


structured("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _nansum_meta, _nansum_impl, inplace=False, dtype_from_out=True)


def nansum_backward(grad, self, dim, keepdim):
    return _where(self.isnan(), 0.0, sum_backward(grad.to(self.dtype), self._size, dim, keepdim))


derivative("nansum", helpers={"nansum_backward": nansum_backward}, self="nansum_backward(grad, self, dim, keepdim)")


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean of the non-nan elements: nansum / their count (PyTorch's composite, so its node is DivBackward0)."""
    _require_tensor("nanmean", input)
    if input.dtype.category < dt.FLOATING:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype.legacy}")
    count = input.isnan().logical_not().sum(dim, keepdim)
    total = call(get("nansum"), (input, dim, keepdim, dtype))
    if out is None:
        return total / count
    return call(get("div.out"), (total, count, None, out))


composite("nanmean", nanmean)


# ---- norm: torch.norm's frontend over linalg.vector_norm / matrix_norm (declared in ops/linalg_norms.py) --

def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: the p-norm over `dim` (every element by default); 'fro' and None mean the 2-norm, any other
    string is a matrix norm (as torch/functional.py routes it)."""
    dims = [dim] if isinstance(dim, int) else dim
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return vector_norm(input, 2, dims, keepdim, dtype=dtype, out=out)
        dims = list(range(input.dim())) if dims is None else dims
        return matrix_norm(input, p, dims, keepdim, dtype=dtype, out=out)
    return vector_norm(input, 2.0 if p is None else p, dims, keepdim, dtype=dtype, out=out)


composite("norm", norm)
