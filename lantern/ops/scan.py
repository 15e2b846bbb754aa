"""Scans along one dim: cumsum, cumprod, logcumsumexp, and cummax / cummin (values, indices).

Each output element combines the input elements up to it along `dim`; NumPy's ufunc.accumulate does the work
(np.logaddexp.accumulate keeps logcumsumexp free of overflow); a complex logcumsumexp steps along dim as ATen does.

>>> x = lantern.tensor([[1., 3., 2.], [4., 0., 5.]])
>>> x.cumsum(1).tolist(), x.cumprod(0).tolist(), x.cummax(1).indices.tolist()
([[1.0, 4.0, 6.0], [4.0, 4.0, 9.0]], [[1.0, 3.0, 2.0], [4.0, 0.0, 10.0]], [[0, 1, 1], [0, 0, 2]])
"""
import math

import numpy as np

from ..core import dtype as dt
from . import complex_arithmetic
from .derivative import derivative
from .derivative_helpers import conj
from .call_by_name import call_op as _op
from .meta_util import wrap_dim
from .pointwise_common import _require_tensor
from .reduction import return_type
from .registry import custom, structured


def _accumulate(ufunc, a, dim, dtype=None):
    """ufunc.accumulate along dim; a 0-dim tensor is its own scan."""
    if a.ndim == 0:
        return a.astype(dtype) if dtype is not None else a
    return ufunc.accumulate(a, axis=dim % a.ndim, dtype=dtype)


# ---- cumsum / cumprod ---------------------------------------------------------------------------------------

def _cumulative_meta(name):
    def meta(self, dim, dtype=None):
        _require_tensor(name, self)
        wrap_dim(dim, self.dim())
        if dtype is None:
            dtype = dt.int64 if self.dtype.category <= dt.INTEGRAL else self.dtype
        return self._size, dtype
    return meta


def _cumulative_impl(ufunc_name):
    def impl(xp, out, dtype, self, dim, dtype_arg=None):
        a = self.astype(dtype) if self.dtype != dtype else self
        if dtype.itemsize == 2 and dtype.kind in "fV":  # half types accumulate in float32 (ATen's acc_type)
            a = a.astype(np.float32)
        out[...] = _accumulate(getattr(xp, ufunc_name), a, dim)
    return impl


# with out= and no dtype=, the scan runs in out's dtype (PyTorch's rule for these two)
structured("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", _cumulative_meta("cumsum"),
           _cumulative_impl("add"), dtype_from_out=True)
structured("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", _cumulative_meta("cumprod"),
           _cumulative_impl("multiply"), dtype_from_out=True)


# ---- logcumsumexp -------------------------------------------------------------------------------------------

def _logcumsumexp_meta(self, dim):
    _require_tensor("logcumsumexp", self)
    wrap_dim(dim, self.dim())
    if self.dtype.category < dt.FLOATING:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{self.dtype.legacy}'")
    return self._size, self.dtype


def _logcumsumexp_complex(xp, a, dim):
    """The running log-sum-exp of complex `a` along dim, one step at a time from -inf as ATen's CPU kernel runs it,
    in complex128 (its accumulation type) and rounded to a's dtype at each output."""
    moved = xp.moveaxis(a, dim, 0)
    out = xp.empty(moved.shape, a.dtype)
    total = xp.full(moved.shape[1:], -math.inf, xp.complex128)
    for i in range(moved.shape[0]):
        total = complex_arithmetic.log_add_exp(xp, moved[i].astype(xp.complex128), total)
        out[i] = total
    return xp.moveaxis(out, 0, dim)


def _logcumsumexp_impl(xp, out, dtype, self, dim):
    if self.dtype.kind == "c":
        out[...] = _logcumsumexp_complex(xp, self, dim % self.ndim) if self.ndim else self
        return
    wide = self.astype(np.float32) if self.dtype.itemsize == 2 else self  # float16 / bfloat16 compute in float32
    out[...] = _accumulate(xp.logaddexp, wide, dim)


structured("logcumsumexp(Tensor self, int dim) -> Tensor", _logcumsumexp_meta, _logcumsumexp_impl, inplace=False,
           exact_out_dtype=True)


# ---- cummax / cummin: running extreme and the (last) index where it was reached -------------------------------

cummax_rt = return_type("cummax", ["values", "indices"])
cummin_rt = return_type("cummin", ["values", "indices"])


def _running_extreme(xp, a, d, ufunc):
    """(values, indices): the running extreme, and for each position the latest index holding it (ties move the
    index forward, as PyTorch's `>=`); a nan wins and stays, each later nan taking its index."""
    values = ufunc.accumulate(a, axis=d)
    reached = values == a
    if a.dtype.kind in "fc":
        reached |= xp.isnan(a)
    shape = [1] * a.ndim
    shape[d] = a.shape[d]
    positions = xp.arange(a.shape[d], dtype=np.int64).reshape(shape)
    indices = xp.maximum.accumulate(xp.where(reached, positions, 0), axis=d)
    return values, indices


def _cumextreme(name, ufunc, rt):
    """cummax or cummin: the running extreme by the ufunc xp.<ufunc> (maximum, minimum) and where it was found."""
    def check(self, dim):
        _require_tensor(name, self)
        wrap_dim(dim, self.dim())
        if self.dtype.is_complex:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{self.dtype.legacy}' (complex numbers "
                                      "have no order: scan .abs() instead)")

    def kernel(backend, self, dim):
        check(self, dim)
        values, indices = backend.empty(self._size, self.dtype), backend.empty(self._size, dt.int64)
        a = backend.array(self)
        if a.ndim == 0:
            values._nd[...], indices._nd[...] = a, 0
        elif a.size:
            xp = backend.xp
            values._nd[...], indices._nd[...] = _running_extreme(xp, a, dim % a.ndim, getattr(xp, ufunc))
        return rt(values, indices)

    def meta(backend, self, dim):
        check(self, dim)
        return rt(backend.empty(self._size, self.dtype), backend.empty(self._size, dt.int64))
    return kernel, meta


custom("cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", *_cumextreme("cummax", "maximum", cummax_rt))
custom("cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", *_cumextreme("cummin", "minimum", cummin_rt))


# ==== derivatives ==============================================================================================

def flip_dim(t, dim):
    """t reversed along dim, through indexing (so it is differentiable)."""
    d = dim % t.dim()
    n = t._size[d]
    reverse = _op("arange", n - 1, -1, -1, dt.int64, None, t.device, None, False)
    return _op("index.Tensor", t, [None] * d + [reverse])


def reversed_cumsum(t, dim):
    """out[i] = sum of t[j] for j >= i along dim: cumsum's backward."""
    if t.dim() == 0 or t._size[dim % t.dim()] <= 1:
        return t
    return flip_dim(flip_dim(t, dim).cumsum(dim), dim)


def cumsum_backward(grad, self_meta, dim):
    return reversed_cumsum(grad.to(self_meta.dtype), dim)


def cumprod_backward(grad, self, dim, result):
    """d out_j / d x_i = prod(x_k for k <= j, k != i) for i <= j. Without zeros that is out_j / x_i; with zeros it
    is built directly from running products that leave x_i out (differentiable, so double backward works)."""
    grad = grad.to(self.dtype)
    if self.dim() == 0:
        return grad
    if not (self == 0).any().item():
        return reversed_cumsum(grad * conj(result), dim) / conj(self)
    d = dim % self.dim()
    n = self._size[d]
    # rows[..., i, k, ...] = x_k, with x_i replaced by 1; its running product along k leaves x_i out
    rows = self.unsqueeze(d).expand(self._size[:d] + (n,) + self._size[d:])
    eye_shape = [1] * (self.dim() + 1)
    eye_shape[d] = eye_shape[d + 1] = n
    eye = _op("eye", n, None, dt.bool, None, self.device, None, False).view(eye_shape)
    without_i = _op("where", eye, 1.0, rows).cumprod(d + 1)
    later = _op("tril", _op("ones", (n, n), dt.bool, None, self.device, None, False, None), 0).t().view(eye_shape)
    return _op("where", later, grad.unsqueeze(d) * conj(without_i), 0.0).sum(d + 1)


def cummaxmin_backward(grad, self_meta, indices, dim):
    """The gradient of each output goes to the input position its index names (several outputs may add up)."""
    zeros = _op("zeros", self_meta.size, grad.dtype, None, grad.device, None, False, None)
    if grad.numel() == 0:
        return zeros
    if grad.dim() == 0:  # a 0-d input is its own running extreme
        return grad
    d = dim % grad.dim()
    coordinates = []
    for k, n in enumerate(grad._size):
        shape = [1] * grad.dim()
        shape[k] = n
        coordinates.append(indices if k == d else
                           _op("arange", n, None, 1, dt.int64, None, grad.device, None, False).view(shape))
    return zeros.index_put(coordinates, grad, True)


def logcumsumexp_backward(grad, self, result, dim):
    """PyTorch's stable form: the positive and negative parts of grad go through a reversed logcumsumexp in
    log space, so nothing overflows however large self is (a complex grad needs no split: its log is taken as is,
    conjugated)."""
    if self.dim() == 0 or self._size[dim % self.dim()] <= 1:
        return grad

    def reverse_logcumsumexp(t):
        return flip_dim(flip_dim(t, dim).logcumsumexp(dim), dim)
    if grad.dtype.is_complex:
        return (reverse_logcumsumexp(grad.conj().log() - result) + self).exp().conj()
    lowest = float(np.finfo(grad.dtype.np if grad.dtype is not dt.bfloat16 else np.float32).min)
    log_abs = grad.abs().log()
    positive = _op("where", grad > 0, log_abs, lowest)
    negative = _op("where", grad < 0, log_abs, lowest)
    return (reverse_logcumsumexp(positive - result) + self).exp() - (reverse_logcumsumexp(negative - result)
                                                                     + self).exp()


_HELPERS = {f.__name__: f for f in (cumsum_backward, cumprod_backward, cummaxmin_backward, logcumsumexp_backward)}
derivative("cumsum", helpers=_HELPERS, self="cumsum_backward(grad, self_meta, dim)")
derivative("cumprod", helpers=_HELPERS, self="cumprod_backward(grad, self, dim, result)")
derivative("logcumsumexp", helpers=_HELPERS, self="logcumsumexp_backward(grad, self, result, dim)")
derivative("cummax", helpers=_HELPERS, self="cummaxmin_backward(grad, self_meta, indices, dim)")
derivative("cummin", helpers=_HELPERS, self="cummaxmin_backward(grad, self_meta, indices, dim)")
