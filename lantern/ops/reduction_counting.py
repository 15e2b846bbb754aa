"""Counting: count_nonzero, bincount and histc (whose output lengths come from the data or from `bins`, so a meta
tensor can run histc but not bincount).

>>> lantern.tensor([[0, 1], [2, 0]]).count_nonzero(0).tolist()
[1, 1]
>>> lantern.tensor([0, 1, 1, 3]).bincount().tolist()
[1, 2, 0, 1]
>>> lantern.tensor([1., 2., 1.]).histc(bins=2, min=0, max=4).tolist()
[2.0, 1.0]
"""
import math

import numpy as np

from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .pointwise_common import _require_tensor
from .registry import custom, structured
from .derivative import nondifferentiable
from .reduction import _axes, _dims, reduced_shape


def _count_nonzero_meta(self, dim=None):
    _require_tensor("count_nonzero", self)
    return reduced_shape(self._size, _dims(self, dim), False), dt.int64


def _count_nonzero_impl(xp, out, dtype, self, dim=None):
    out[...] = xp.count_nonzero(self, axis=_axes(self, dim))


structured("count_nonzero(Tensor self, int[1]? dim=None) -> Tensor", _count_nonzero_meta, _count_nonzero_impl,
           inplace=False, out=False)
nondifferentiable("count_nonzero")


# ---- counting: bincount and histc (their output lengths come from the data or from `bins`) --------------------

def _bincount_checks(self, weights, minlength):
    if not isinstance(self, TensorImpl) or self.dtype.category != dt.INTEGRAL:
        got = self.dtype.legacy if isinstance(self, TensorImpl) else type(self).__name__
        raise NotImplementedError(f'"bincount_cpu" not implemented for \'{got}\'')
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.dim() != 1 or weights._size[0] != self.numel()):
        raise RuntimeError("weights should be 1-d and have the same length as input")


def _bincount(backend, self, weights=None, minlength=0):
    """Occurrences of each value of a 1-d non-negative int tensor (weighted sums with `weights`)."""
    _bincount_checks(self, weights, minlength)
    values = backend.array(self)
    if self.dim() != 1 or (values.size and values.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        dtype = dt.int64
        counts = backend.xp.bincount(values, minlength=minlength)
    else:
        dtype = weights.dtype if weights.dtype.category == dt.FLOATING else dt.float64
        counts = backend.xp.bincount(values, weights=backend.array(weights).astype(np.float64), minlength=minlength)
    out = backend.empty((counts.shape[0],), dtype)
    backend.array(out)[...] = counts
    return out


def _bincount_meta(backend, self, weights=None, minlength=0):
    raise NotImplementedError("bincount on the meta device: its output length depends on the values, which a meta "
                              "tensor does not have")


custom("bincount(Tensor self, Tensor? weights=None, int minlength=0) -> Tensor", _bincount, _bincount_meta)


def _histc_checks(self, bins, min, max):
    _require_tensor("histc", self)
    if self.dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"histogram_cpu" not implemented for \'{self.dtype.legacy}\'')
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")


def _histc(backend, self, bins=100, min=0, max=0):
    """Counts in `bins` equal-width bins over [min, max] (the data's range when min == max); values outside, and
    NaN, are left out; a value equal to max falls in the last bin."""
    _histc_checks(self, bins, min, max)
    out = backend.empty((bins,), self.dtype)
    x = backend.array(self).astype(np.float64).reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and x.size:  # the data's own range, NaN and inf included (then it is refused, as in PyTorch)
        lo, hi = float(x.min()), float(x.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite (drop NaN/inf values, or pass min "
                           "and max)")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    inside = x[(x >= lo) & (x <= hi)]  # NaN compares false: left out
    index = backend.xp.minimum(((inside - lo) * bins / (hi - lo)).astype(np.int64), bins - 1)
    backend.array(out)[...] = backend.xp.bincount(index, minlength=bins)
    return out


def _histc_meta(backend, self, bins=100, min=0, max=0):
    _histc_checks(self, bins, min, max)
    return backend.empty((bins,), self.dtype)


custom("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor", _histc, _histc_meta)


nondifferentiable("histc")
