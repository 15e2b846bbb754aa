"""Reductions: sum, mean, prod, amax, amin, argmax, argmin, any, all, and max/min with a dim (values, indices);
var, std, var_mean, std_mean (correction= / unbiased=), logsumexp, nansum, nanmean, count_nonzero, aminmax, norm
(a frontend over linalg.vector_norm), and the order statistics median, nanmedian, mode, quantile, nanquantile.

>>> x = lantern.arange(6).view(2, 3)
>>> x.sum(1).tolist(), x.sum(dtype=lantern.float64).dtype, x.max(1).indices.tolist()
([3, 12], lantern.float64, [2, 2])
>>> y = lantern.tensor([[1., 5., 3.], [2., 2., 8.]])
>>> y.var(1).tolist(), y.var(1, unbiased=False).tolist(), y.median(1).indices.tolist()
([4.0, 12.0], [2.6666667461395264, 8.0], [2, 1])
>>> lantern.quantile(y, 0.75, dim=1).tolist(), lantern.logsumexp(lantern.tensor([1000., 1000.]), 0).item()
([4.0, 5.0], 1000.6931762695312)
"""
from collections import namedtuple

import numpy as np

from ..core import dtype as dt
from ..core.promotion import can_cast
from ..core.reference import specialisation
from ..core.tensor_impl import TensorImpl, make_tensor
from .meta_util import wrap_dim, wrap_dims
from .pointwise_common import _require_tensor
from .dispatcher import call
from .registry import composite, custom, get, structured
from .derivative import derivative, nondifferentiable
from .derivative_specialisation import specialise_derivative
from .derivative_helpers import (
    conj, evenly_distribute_backward, mean_backward, sum_backward, unsqueeze_reduced,
)


def reduced_shape(size, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(size))
    return tuple(s for i, s in enumerate(size) if i not in dims)


def _no_dims(dim):
    """True when the caller named no dim: None or an empty list (which means every dim)."""
    return dim is None or (not isinstance(dim, int) and len(dim) == 0)


def _dims(self, dim):
    n = self.dim()
    if _no_dims(dim):
        return tuple(range(n))
    return wrap_dims(dim, n)


def _single_dim(name, dim):
    if not isinstance(dim, int) and not hasattr(dim, "__index__"):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")


def _check_nonempty(name, self, dim, error_without_dim=RuntimeError):
    """Max-like reductions have no identity: refuse reducing an empty dim (IndexError) or an empty tensor."""
    if _no_dims(dim):
        if self.numel() == 0:
            raise error_without_dim(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                                    "Specify the reduction dim with the 'dim' argument.")
        return
    for d in wrap_dims(dim, self.dim()):
        if self._size and self._size[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _sum_like_meta(name):
    def meta(self, dim=None, keepdim=False, dtype=None):
        if dim is None and isinstance(self, TensorImpl):  # a full reduction (the common case)
            shape = (1,) * len(self._size) if keepdim else ()
        else:
            _require_tensor(name, self)
            if name == "prod" and dim is not None:
                _single_dim(name, dim)
            shape = reduced_shape(self._size, _dims(self, dim), keepdim)
        if dtype is None:
            dtype = dt.int64 if self.dtype.category <= dt.INTEGRAL else self.dtype
        return shape, dtype
    return meta


def _axes(a, dim):
    """NumPy axes for a schema's dim argument (None, an int or a list); None means every axis."""
    n = a.ndim
    if n == 0 or dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return None
    return tuple(d % n for d in ((dim,) if isinstance(dim, int) else dim))


def _reduce_impl(ufunc_name):
    """sum/prod through the ufunc's own reduce (np.add.reduce): np.sum's Python wrapper costs ~2 µs per call."""
    def impl(xp, out, dtype, self, dim=None, keepdim=False, dtype_arg=None):
        getattr(xp, ufunc_name).reduce(self, axis=None if dim is None else _axes(self, dim), keepdims=keepdim,
                                       dtype=dtype, out=out)
    return impl


structured("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _sum_like_meta("sum"), _reduce_impl("add"), inplace=False, dtype_from_out=True)
structured("prod(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _sum_like_meta("prod"), _reduce_impl("multiply"), inplace=False, dtype_from_out=True)


def _mean_meta(self, dim=None, keepdim=False, dtype=None):
    _require_tensor("mean", self)
    out_dtype = dtype or self.dtype
    if out_dtype.category < dt.FLOATING:  # checked before the dims, as PyTorch does
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(f"mean(): could not infer output dtype. {which} dtype must be either a floating point or "
                           f"complex dtype. Got: {out_dtype.legacy} (pass dtype=lantern.float32, or call .float())")
    dims = _dims(self, dim)
    return reduced_shape(self._size, dims, keepdim), out_dtype


def _mean_impl(xp, out, dtype, self, dim=None, keepdim=False, dtype_arg=None):
    """sum / count: the mean of nothing is nan, without NumPy's 'Mean of empty slice' warning."""
    axis = _axes(self, dim)
    xp.sum(self, axis=axis, keepdims=keepdim, dtype=dtype, out=out)
    count = 1
    for d in range(self.ndim) if axis is None else axis:
        count *= self.shape[d]
    xp.true_divide(out, count, out=out, casting="unsafe")


structured("mean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _mean_meta, _mean_impl, inplace=False)


def _no_complex(kernel, dtype):
    if dtype.is_complex:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype.legacy}'")


def _minmax_meta(name):
    def meta(self, dim=None, keepdim=False):
        _require_tensor(name, self)
        dims = _dims(self, dim)
        _check_nonempty(name, self, dim)
        _no_complex(f"{name[1:]}_values_cpu", self.dtype)
        return reduced_shape(self._size, dims, keepdim), self.dtype
    return meta


def _minmax_impl(fn):
    def impl(xp, out, dtype, self, dim=None, keepdim=False):
        fn(self, axis=_axes(self, dim), keepdims=keepdim, out=out)
    return impl


structured("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", _minmax_meta("amax"),
           _minmax_impl(np.max), inplace=False, exact_out_dtype=True)
structured("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", _minmax_meta("amin"),
           _minmax_impl(np.min), inplace=False, exact_out_dtype=True)


def _full_minmax_meta(name):
    def meta(self):
        _require_tensor(name, self)
        _check_nonempty(name, self, None)
        _no_complex(f"{name}_all", self.dtype)
        return (), self.dtype
    return meta


structured("max(Tensor self) -> Tensor", _full_minmax_meta("max"), _minmax_impl(np.max), inplace=False, out=False)
structured("min(Tensor self) -> Tensor", _full_minmax_meta("min"), _minmax_impl(np.min), inplace=False, out=False)


def _no_complex_or_bool(name, dtype):
    if dtype.is_complex or dtype is dt.bool:
        raise RuntimeError(f"{name}(): does not support {'complex' if dtype.is_complex else 'bool'} input")


def _arg_meta(name):
    def meta(self, dim=None, keepdim=False):
        _require_tensor(name, self)
        _no_complex_or_bool(name, self.dtype)
        _check_nonempty(name, self, dim, error_without_dim=IndexError)
        if dim is None:
            return ((1,) * self.dim() if keepdim else ()), dt.int64
        _single_dim(name, dim)
        return reduced_shape(self._size, wrap_dims(dim, self.dim()), keepdim), dt.int64
    return meta


def _arg_impl(fn):
    def impl(xp, out, dtype, self, dim=None, keepdim=False):
        if dim is None:
            out[...] = fn(self.reshape(-1))
        else:
            fn(self, axis=dim % self.ndim if self.ndim else None, keepdims=keepdim, out=out)
    return impl


structured("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", _arg_meta("argmax"),
           _arg_impl(np.argmax), inplace=False, exact_out_dtype=True)
structured("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", _arg_meta("argmin"),
           _arg_impl(np.argmin), inplace=False, exact_out_dtype=True)


def _logical_meta(name):
    def meta(self, dim=None, keepdim=False):
        _require_tensor(name, self)
        dims = () if dim is not None and _no_dims(dim) else _dims(self, dim)  # any(x, dim=()) reduces nothing
        return reduced_shape(self._size, dims, keepdim), dt.uint8 if self.dtype is dt.uint8 else dt.bool
    return meta


def _logical_impl(fn):
    def impl(xp, out, dtype, self, dim=None, keepdim=False):
        axis = () if dim is not None and _no_dims(dim) else _axes(self, dim)
        out[...] = fn(self, axis=axis, keepdims=keepdim)
    return impl


structured("any(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", _logical_meta("any"),
           _logical_impl(np.any), inplace=False, exact_out_dtype=True)
structured("all(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", _logical_meta("all"),
           _logical_impl(np.all), inplace=False, exact_out_dtype=True)


# ---- max / min along a dim: two outputs, a named tuple, as torch.return_types ------------------------------

class _ReturnType:
    """Base for lantern.return_types: named tuples that print like PyTorch's structseqs."""

    def __repr__(self):
        body = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
        return f"lantern.return_types.{type(self).__name__}(\n{body})"


RETURN_TYPES = {}  # name -> type, every op's; lantern.return_types shows them as torch.return_types does


def return_type(name, fields):
    made = RETURN_TYPES[name] = type(name, (_ReturnType, namedtuple(name, fields)), {"__slots__": ()})
    return made


def out_return_type(rt):
    """The named tuple an out= variant returns (torch.return_types.sort_out for sort's): the same fields."""
    name = rt.__name__ + "_out"
    return RETURN_TYPES.get(name) or return_type(name, rt._fields)


max_rt = return_type("max", ["values", "indices"])
min_rt = return_type("min", ["values", "indices"])


def _minmax_dim(name, arg, rt):
    def meta_shapes(self, dim, keepdim):
        _require_tensor(name, self)
        _single_dim(name, dim)
        wrap_dim(dim, self.dim())  # the dim first, then the dtype: PyTorch's order
        if self.dtype.is_complex:
            raise RuntimeError(f"{name}(): does not support complex input")
        _check_nonempty(name, self, dim)
        return reduced_shape(self._size, wrap_dims(dim, self.dim()), keepdim)

    def kernel(backend, self, dim, keepdim=False):
        shape = meta_shapes(self, dim, keepdim)
        values = backend.empty(shape, self.dtype)
        indices = backend.empty(shape, dt.int64)
        a = backend.array(self)
        d = dim % a.ndim if a.ndim else None
        idx = arg(a, axis=d, keepdims=True) if a.ndim else np.zeros((), np.int64)
        vals = np.take_along_axis(a, idx, axis=d) if a.ndim else a
        if not keepdim and a.ndim:
            idx, vals = idx.squeeze(d), vals.squeeze(d)
        indices._nd[...] = idx
        values._nd[...] = vals
        return rt(values, indices)

    def meta(backend, self, dim, keepdim=False):
        shape = meta_shapes(self, dim, keepdim)
        return rt(backend.empty(shape, self.dtype), backend.empty(shape, dt.int64))
    return kernel, meta


for _name, _arg, _rt in (("max", np.argmax, max_rt), ("min", np.argmin, min_rt)):
    _k, _m = _minmax_dim(_name, _arg, _rt)
    custom(f"{_name}.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", _k, _m)


# ---- var / std and their mean-returning forms (correction=, unbiased=) --------------------------------------

def _count(sizes, dim):
    """How many elements a reduction over `dim` (None or [] = every dim) combines."""
    n = 1
    for d in range(len(sizes)) if _no_dims(dim) else wrap_dims(dim, len(sizes)):
        n *= sizes[d]
    return n


def _wide(a):
    """a in float64 / complex128: reductions accumulate there (PyTorch's CPU accumulate type for var and norm)."""
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64, copy=False)


def _moments(xp, a, dim, correction, keepdim):
    """(variance, mean) of `a` over `dim`, two-pass in double precision; the divisor is max(N - correction, 0)."""
    axis = _axes(a, dim)
    a = _wide(a)
    n = a.size if axis is None else int(np.prod([a.shape[d] for d in axis]))
    mean = xp.sum(a, axis=axis, keepdims=True) / n
    dev = a - mean
    square = dev.real * dev.real + dev.imag * dev.imag if a.dtype.kind == "c" else dev * dev
    c = 1 if correction is None else correction
    var = xp.sum(square, axis=axis, keepdims=keepdim) / max(n - c, 0)
    return var, mean.reshape(np.shape(var))


def _var_meta(name):
    def meta(self, dim=None, correction=None, keepdim=False):
        _require_tensor(name, self)
        if self.dtype.category < dt.FLOATING:
            raise RuntimeError(f"std and var only support floating point and complex dtypes (in {name}: got "
                               f"{self.dtype}; convert the input with .float() first)")
        return reduced_shape(self._size, _dims(self, dim), keepdim), self.dtype.to_real()
    return meta


def _var_impl(xp, out, dtype, self, dim=None, correction=None, keepdim=False):
    out[...] = _moments(xp, self, dim, correction, keepdim)[0]


def _std_impl(xp, out, dtype, self, dim=None, correction=None, keepdim=False):
    out[...] = xp.sqrt(_moments(xp, self, dim, correction, keepdim)[0])


def _into_out(name, result, out):
    """Write a result into a user's out= tensor, resized as PyTorch resizes it."""
    from ..backends.base import resize_out
    if not can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {result.dtype.legacy} can't be cast to the desired output type "
                           f"{out.dtype.legacy} (in {name})")
    resize_out(out, result._size, name)
    return out.copy_(result)


_VAR_ARGS = "(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)"
structured(f"var.correction{_VAR_ARGS} -> Tensor", _var_meta("var"), _var_impl, inplace=False, out=False)
structured(f"std.correction{_VAR_ARGS} -> Tensor", _var_meta("std"), _std_impl, inplace=False, out=False)


def _var_mean_kernel(name, root):
    meta_of = _var_meta(name)

    def kernel(backend, self, dim=None, correction=None, keepdim=False):
        shape, dtype = meta_of(self, dim, correction, keepdim)
        var, mean = _moments(backend.xp, backend.array(self), dim, correction, keepdim)
        spread, center = backend.empty(shape, dtype), backend.empty(shape, self.dtype)
        spread._nd[...] = backend.xp.sqrt(var) if root else var
        center._nd[...] = mean
        return spread, center

    def meta(backend, self, dim=None, correction=None, keepdim=False):
        shape, dtype = meta_of(self, dim, correction, keepdim)
        return backend.empty(shape, dtype), backend.empty(shape, self.dtype)
    return kernel, meta


custom(f"var_mean.correction{_VAR_ARGS} -> (Tensor, Tensor)", *_var_mean_kernel("var_mean", False))
custom(f"std_mean.correction{_VAR_ARGS} -> (Tensor, Tensor)", *_var_mean_kernel("std_mean", True))


def _correction(name, dim, unbiased, correction):
    """(dim, correction) from PyTorch's overloads: name(x, dim, unbiased, keepdim), name(x, unbiased) and
    name(x, dim, *, correction=, keepdim=)."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"{name}(): pass either unbiased= or correction=, not both (unbiased=True is "
                            "correction=1, unbiased=False is correction=0)")
        correction = 1 if unbiased else 0
    return dim, correction


def _var_frontend(name):
    op = get(name + ".correction")

    def frontend(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        dim, correction = _correction(name, dim, unbiased, correction)
        result = call(op, (input, dim, correction, keepdim))
        return result if out is None else _into_out(name, result, out)
    return frontend


def _var_mean_frontend(name):
    op = get(name + ".correction")

    def frontend(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        dim, correction = _correction(name, dim, unbiased, correction)
        return call(op, (input, dim, correction, keepdim))
    return frontend


for _name, _make in (("var", _var_frontend), ("std", _var_frontend), ("var_mean", _var_mean_frontend),
                     ("std_mean", _var_mean_frontend)):
    _fn = _make(_name)
    _fn.__name__ = _fn.__qualname__ = _name
    _fn.__doc__ = f"{_name}(input, dim=None, unbiased=None, keepdim=False, *, correction=None): see " \
                  f"lantern.ops.registry.get('{_name}.correction')."
    composite(_name, _fn, method=_name in ("var", "std"))


# ---- logsumexp, nansum, nanmean, count_nonzero -------------------------------------------------------------

def _float_result(dtype):
    return dt.get_default_dtype() if dtype.category < dt.FLOATING else dtype


def _logsumexp_meta(self, dim, keepdim=False):
    _require_tensor("logsumexp", self)
    if dim is None:  # a required argument: None does not mean every dim here
        raise TypeError("logsumexp(): argument 'dim' (position 2) must be tuple of ints, not NoneType (pass the "
                        "dims to reduce, () for all)")
    return reduced_shape(self._size, _dims(self, dim), keepdim), _float_result(self.dtype)


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


def _count_nonzero_meta(self, dim=None):
    _require_tensor("count_nonzero", self)
    return reduced_shape(self._size, _dims(self, dim), False), dt.int64


def _count_nonzero_impl(xp, out, dtype, self, dim=None):
    out[...] = xp.count_nonzero(self, axis=_axes(self, dim))


structured("count_nonzero(Tensor self, int[1]? dim=None) -> Tensor", _count_nonzero_meta, _count_nonzero_impl,
           inplace=False, out=False)


# ---- norm: torch.norm's frontend over linalg.vector_norm / matrix_norm (declared in ops/linalg_norms.py) --

def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: the p-norm over `dim` (every element by default); 'fro' and None mean the 2-norm, any other
    string is a matrix norm (as torch/functional.py routes it)."""
    from . import linalg  # cycle: ops.linalg imports reduction
    dims = [dim] if isinstance(dim, int) else dim
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return linalg.vector_norm(input, 2, dims, keepdim, dtype=dtype, out=out)
        dims = list(range(input.dim())) if dims is None else dims
        return linalg.matrix_norm(input, p, dims, keepdim, dtype=dtype, out=out)
    return linalg.vector_norm(input, 2.0 if p is None else p, dims, keepdim, dtype=dtype, out=out)


composite("norm", norm)


# ---- aminmax: (min, max) in one call -------------------------------------------------------------------------

aminmax_rt = return_type("aminmax", ["min", "max"])


def _aminmax_shape(self, dim, keepdim):
    _require_tensor("aminmax", self)
    _check_nonempty("aminmax", self, dim)
    _no_complex("aminmax_cpu", self.dtype)
    if dim is None:
        return (1,) * self.dim() if keepdim else ()
    return reduced_shape(self._size, wrap_dims(dim, self.dim()), keepdim)


def _aminmax_kernel(backend, self, dim=None, keepdim=False):
    shape = _aminmax_shape(self, dim, keepdim)
    a = backend.array(self)
    axis = None if dim is None or a.ndim == 0 else dim % a.ndim
    low, high = backend.empty(shape, self.dtype), backend.empty(shape, self.dtype)
    low._nd[...] = backend.xp.min(a, axis=axis, keepdims=keepdim)
    high._nd[...] = backend.xp.max(a, axis=axis, keepdims=keepdim)
    return aminmax_rt(low, high)


def _aminmax_meta(backend, self, dim=None, keepdim=False):
    shape = _aminmax_shape(self, dim, keepdim)
    return aminmax_rt(backend.empty(shape, self.dtype), backend.empty(shape, self.dtype))


custom("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)", _aminmax_kernel,
       _aminmax_meta)


# ---- median, nanmedian, mode: order statistics through a stable sort --------------------------------------

median_rt = return_type("median", ["values", "indices"])
nanmedian_rt = return_type("nanmedian", ["values", "indices"])
mode_rt = return_type("mode", ["values", "indices"])


def _no_order(kernel, dtype, bool_ok=False):
    if dtype.is_complex or (dtype is dt.bool and not bool_ok):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype.legacy}'")


def _nan_count(xp, a, axis):
    """How many non-nan values each slice along `axis` holds (kept as a size-1 axis)."""
    if a.dtype.kind not in "fV":
        return xp.full(a.shape[:axis] + (1,) + a.shape[axis + 1:], a.shape[axis], np.int64)
    return xp.sum(~xp.isnan(a), axis=axis, keepdims=True)


def _sort_order(xp, a, axis):
    """A stable argsort with nan last (bfloat16, which NumPy cannot order with nan, is ordered as float32)."""
    return xp.argsort(a.astype(np.float32) if a.dtype.kind == "V" else a, axis=axis, kind="stable")


def _median_select(xp, a, axis, ignore_nan):
    """(values, indices) of the lower median along `axis` (kept, size 1). A stable sort puts nan last: median
    picks the first nan of a slice that has one, nanmedian the lower median of the non-nan values."""
    order = _sort_order(xp, a, axis)
    ordered = xp.take_along_axis(a, order, axis=axis)
    n, valid = a.shape[axis], _nan_count(xp, a, axis)
    pick = xp.maximum((valid - 1) // 2, 0) if ignore_nan else xp.where(valid < n, valid, (n - 1) // 2)
    return xp.take_along_axis(ordered, pick, axis=axis), xp.take_along_axis(order, pick, axis=axis)


def _full_median_meta(name):
    def meta(self):
        _require_tensor(name, self)
        _no_order(f"{name}_cpu" if name == "median" else "nanmedian_cpu", self.dtype)
        return (), self.dtype
    return meta


def _full_median_impl(ignore_nan):
    def impl(xp, out, dtype, self):
        flat = self.reshape(-1)
        if flat.size == 0:
            out[...] = np.nan if out.dtype.kind in "fV" else np.iinfo(out.dtype).min
        else:
            out[...] = _median_select(xp, flat, 0, ignore_nan)[0][0]
    return impl


# named median.all (not plain median): a plain op would bind Tensor.median ahead of the dim-taking frontend below
structured("median.all(Tensor self) -> Tensor", _full_median_meta("median"), _full_median_impl(False), inplace=False,
           out=False)
structured("nanmedian.all(Tensor self) -> Tensor", _full_median_meta("nanmedian"), _full_median_impl(True),
           inplace=False, out=False)


def _selection_dim(name, rt, select, bool_ok=False):
    """A (values, indices) reduction along one dim: select(xp, a, axis) gives both with the axis kept."""
    def shape_of(self, dim, keepdim):
        _require_tensor(name, self)
        _single_dim(name, dim)
        _no_order(f"{name}_cpu", self.dtype, bool_ok)
        _check_nonempty(name, self, dim)
        return reduced_shape(self._size, wrap_dims(dim, self.dim()), keepdim)

    def kernel(backend, self, dim=-1, keepdim=False):
        shape = shape_of(self, dim, keepdim)
        values, indices = backend.empty(shape, self.dtype), backend.empty(shape, dt.int64)
        a = backend.array(self)
        if a.ndim == 0:
            values._nd[...], indices._nd[...] = a, 0
        elif a.size:
            v, i = select(backend.xp, a, dim % a.ndim)
            values._nd[...], indices._nd[...] = v.reshape(shape), i.reshape(shape)
        return rt(values, indices)

    def meta(backend, self, dim=-1, keepdim=False):
        shape = shape_of(self, dim, keepdim)
        return rt(backend.empty(shape, self.dtype), backend.empty(shape, dt.int64))
    return kernel, meta


def _mode_select(xp, a, axis):
    """The most frequent value of each slice (the smallest among equally frequent ones) and the last index
    holding it: runs of equal values in the stably sorted slice, measured by where they start and end."""
    order = _sort_order(xp, a, axis)
    ordered = xp.moveaxis(xp.take_along_axis(a, order, axis=axis), axis, -1)
    order = xp.moveaxis(order, axis, -1)
    n = ordered.shape[-1]
    change = ordered[..., 1:] != ordered[..., :-1]
    edge = xp.ones(ordered.shape[:-1] + (1,), bool)
    positions = xp.arange(n)
    starts = xp.maximum.accumulate(xp.where(xp.concatenate([edge, change], -1), positions, 0), axis=-1)
    ends = xp.where(xp.concatenate([change, edge], -1), positions, n)
    ends = xp.minimum.accumulate(ends[..., ::-1], axis=-1)[..., ::-1]
    best = xp.argmax(ends - starts, axis=-1)[..., None]
    last = xp.take_along_axis(ends, best, axis=-1)
    values, indices = xp.take_along_axis(ordered, best, axis=-1), xp.take_along_axis(order, last, axis=-1)
    return xp.moveaxis(values, -1, axis), xp.moveaxis(indices, -1, axis)


custom("median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
       *_selection_dim("median", median_rt, lambda xp, a, axis: _median_select(xp, a, axis, False)))
custom("nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
       *_selection_dim("nanmedian", nanmedian_rt, lambda xp, a, axis: _median_select(xp, a, axis, True)))
custom("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
       *_selection_dim("mode", mode_rt, _mode_select, bool_ok=True))


def _median_frontend(name):
    full, along = get(name + ".all"), get(name + ".dim")

    def frontend(input, dim=None, keepdim=False):
        if dim is None:
            return call(full, (input,))
        return call(along, (input, dim, keepdim))
    frontend.__name__ = frontend.__qualname__ = name
    frontend.__doc__ = f"{name}(input): the lower median of every element; {name}(input, dim, keepdim=False): " \
                       "(values, indices) along dim."
    return frontend


for _name in ("median", "nanmedian"):
    composite(_name, _median_frontend(_name))


# ---- quantile / nanquantile: ranks in the sorted slice (a kernel), then a gather and a lerp (differentiable) ----

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_ranks_check(name, input, q, dim, interpolation):
    if input.dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype (got {input.dtype}; "
                           "convert it with .float())")
    if q.dtype is not input.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor ({q.dtype} vs {input.dtype})")
    if q.dim() > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor (got shape {list(q._size)})")
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if dim is not None:
        wrap_dim(dim, input.dim())


def _quantile_ranks(backend, input, q, dim, interpolation, ignore_nan):
    """For each slice and quantile: (index below, index above, weight), positions along the slice (`input`
    flattened, or with `dim` moved last); shaped (other dims..., len(q)), or (other dims...) for a 0-dim q."""
    name = "nanquantile" if ignore_nan else "quantile"
    _quantile_ranks_check(name, input, q, dim, interpolation)
    xp, a, qa = backend.xp, backend.array(input), backend.array(q)
    if (qa < 0).any() or (qa > 1).any():
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    a = a.reshape(-1) if dim is None or a.ndim == 0 else xp.moveaxis(a, dim % a.ndim, -1)
    order = xp.argsort(a, axis=-1, kind="stable")
    n, valid = a.shape[-1], _nan_count(xp, xp.take_along_axis(a, order, axis=-1), a.ndim - 1)
    qa = qa.reshape((1,) * (a.ndim - 1) + (qa.size,))
    if ignore_nan:
        ranks = xp.maximum(qa * (valid - 1).astype(a.dtype), 0)
    else:
        ranks = xp.where(valid < n, a.dtype.type(n - 1), qa * a.dtype.type(n - 1))
    ranks = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.round}.get(interpolation, lambda r: r)(ranks)
    below, above = xp.floor(ranks).astype(np.int64), xp.ceil(ranks).astype(np.int64)
    weight = xp.full(ranks.shape, 0.5, a.dtype) if interpolation == "midpoint" else ranks - below
    results = []
    for arr, dtype in ((xp.take_along_axis(order, below, -1), dt.int64),
                       (xp.take_along_axis(order, above, -1), dt.int64), (weight, input.dtype)):
        arr = arr if q.dim() else arr[..., 0]
        t = backend.empty(arr.shape, dtype)
        t._nd[...] = arr
        results.append(t)
    return tuple(results)


def _quantile_ranks_meta(backend, input, q, dim, interpolation, ignore_nan):
    _quantile_ranks_check("nanquantile" if ignore_nan else "quantile", input, q, dim, interpolation)
    others = () if dim is None or input.dim() == 0 else reduced_shape(input._size, (dim % input.dim(),), False)
    shape = others + q._size
    return backend.empty(shape, dt.int64), backend.empty(shape, dt.int64), backend.empty(shape, input.dtype)


custom("_quantile_ranks(Tensor input, Tensor q, int? dim, str interpolation, bool ignore_nan) -> (Tensor, Tensor, "
       "Tensor)", _quantile_ranks, _quantile_ranks_meta)


def _gather_last(x, index):
    """x[..., index] along x's last dim, where index has x's leading dims and possibly a trailing quantile dim: a
    differentiable take_along_dim."""
    coordinates = []
    for k, n in enumerate(x._size[:-1]):
        shape = [1] * index.dim()
        shape[k] = n
        coordinates.append(call(get("arange"), (n, None, 1, dt.int64, None, x.device, None, False)).view(shape))
    return call(get("index.Tensor"), (x, coordinates + [index]))


def _quantile(name, ignore_nan):
    def frontend(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
        _require_tensor(name, input)
        if not isinstance(q, TensorImpl):
            if not 0 <= q <= 1:
                raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
            q = call(get("full"), ((), q, input.dtype, None, input.device, None, False))
        below, above, weight = call(get("_quantile_ranks"), (input, q, dim, interpolation, ignore_nan))
        flat = dim is None or input.dim() == 0
        x = input.reshape(-1) if flat else input.movedim(dim, -1)
        result = _gather_last(x, below)
        if interpolation in ("linear", "midpoint"):
            result = result + weight * (_gather_last(x, above) - result)
        if keepdim:  # the result is computed with the quantiles last, then moved first, as PyTorch lays it out
            kept = list(input._size)
            for d in range(input.dim()) if flat else (dim % input.dim(),):
                kept[d] = 1
            result = result.reshape(tuple(kept) + q._size)
        if q.dim():
            result = result.movedim(-1, 0)
        return result if out is None else _into_out(name, result, out)
    frontend.__name__ = frontend.__qualname__ = name
    frontend.__doc__ = f"{name}(input, q, dim=None, keepdim=False, *, interpolation='linear'): the q-th " \
                       f"quantiles{' ignoring nan' if ignore_nan else ''}, interpolated between the sorted values."
    return frontend


composite("quantile", _quantile("quantile", False))
composite("nanquantile", _quantile("nanquantile", True))



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
        counts = np.bincount(values, minlength=minlength)
    else:
        dtype = weights.dtype if weights.dtype.category == dt.FLOATING else dt.float64
        counts = np.bincount(values, weights=backend.array(weights).astype(np.float64), minlength=minlength)
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
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite (drop NaN/inf values, or pass min "
                           "and max)")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    inside = x[(x >= lo) & (x <= hi)]  # NaN compares false: left out
    index = np.minimum(((inside - lo) * bins / (hi - lo)).astype(np.int64), bins - 1)
    backend.array(out)[...] = np.bincount(index, minlength=bins)
    return out


def _histc_meta(backend, self, bins=100, min=0, max=0):
    _histc_checks(self, bins, min, max)
    return backend.empty((bins,), self.dtype)


custom("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor", _histc, _histc_meta)

# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

# ---- reductions ----
derivative("sum", name=lambda args: "SumBackward0" if args[1] is None else "SumBackward1",
           self="sum_backward(grad, self_meta.size, dim, keepdim)")


def full_sum(grad, dim):
    """The sums sum_backward_as_view serves: over every dim, so that grad is 0-d."""
    return dim is None and not grad._size


@specialisation(replaces="sum's derivative sum_backward (the expand op)",
                when="backward without create_graph, fast paths on; full_sum(grad, dim)",
                parity_test="tests/test_ops_specialisations.py::test_sum_backward_as_view", ops=("sum",))
def sum_backward_as_view(grad, sizes):
    """A full sum's gradient, its 0-d grad expanded to the input's size, made here as that view (strides all 0)
    without dispatching `expand`."""
    base = grad._base
    return make_tensor(grad._storage, tuple(sizes), (0,) * len(sizes), grad._offset, grad.dtype, grad._backend,
                       None, grad._vc, grad if base is None else base)


specialise_derivative("sum", {"sum_backward(grad, self_meta.size, dim, keepdim)": (
    "sum_backward_as_view(grad, self_meta.size)", "full_sum(grad, dim)")},
    helpers={"sum_backward_as_view": sum_backward_as_view, "full_sum": full_sum})
derivative("mean", name=lambda args: "MeanBackward0" if args[1] is None else "MeanBackward1",
           self="mean_backward(grad, self_meta.size, dim, keepdim)")
derivative("prod", name=lambda args: "ProdBackward0" if args[1] is None else "ProdBackward1",
           self="prod_backward(grad, self, result, dim, keepdim)")
derivative("amax", self="evenly_distribute_backward(grad, self, result, dim, keepdim)")
derivative("amin", self="evenly_distribute_backward(grad, self, result, dim, keepdim)")
derivative("max", name="MaxBackward1", self="evenly_distribute_backward(grad, self, result)")
derivative("min", name="MinBackward1", self="evenly_distribute_backward(grad, self, result)")
derivative("max.dim", name="MaxBackward0", self="value_selecting_backward(grad, dim, indices, self_meta.size, keepdim)")
derivative("min.dim", name="MinBackward0", self="value_selecting_backward(grad, dim, indices, self_meta.size, keepdim)")
nondifferentiable("argmax", "argmin", "any", "all")


# ---- the backward helpers of the ops added above (derivatives.yaml's var_backward, norm_backward, ...) ----

def _where(cond, a, b):
    return call(get("where"), (cond, a, b))


def var_backward(grad, self, dim, correction, keepdim):
    """d var / d x = 2 (x - mean) / (N - correction), the gradient spread back over the reduced dims."""
    sizes = self._size
    dof = max(_count(sizes, dim) - (1 if correction is None else correction), 0)
    scale = 2.0 / dof if dof else float("inf")
    centered = self - self.mean(_dims(self, dim), True)
    return scale * unsqueeze_reduced(grad, sizes, dim, keepdim) * centered


def std_backward(result, grad, self, dim, correction, keepdim):
    """std = sqrt(var): d std = d var / (2 std), taken as 0 where std is 0."""
    return var_backward(_where(result == 0, 0.0, grad / (result * 2)), self, dim, correction, keepdim)


def var_mean_backward(grad_var, grad_mean, self, dim, correction, keepdim):
    grads = []
    if grad_var is not None:
        grads.append(var_backward(grad_var, self, dim, correction, keepdim))
    if grad_mean is not None:
        grads.append(mean_backward(grad_mean, self._size, dim, keepdim))
    return grads[0] if len(grads) == 1 else grads[0] + grads[1]


def std_mean_backward(grad_std, grad_mean, self, std, dim, correction, keepdim):
    grad_var = None if grad_std is None else _where(std == 0, 0.0, grad_std / (std * 2))
    return var_mean_backward(grad_var, grad_mean, self, dim, correction, keepdim)


def logsumexp_backward(grad, self, result, dim, keepdim):
    sizes = self._size
    weights = (self - unsqueeze_reduced(result, sizes, dim, keepdim)).exp()
    return unsqueeze_reduced(grad, sizes, dim, keepdim) * conj(weights)


def nansum_backward(grad, self, dim, keepdim):
    return _where(self.isnan(), 0.0, sum_backward(grad.to(self.dtype), self._size, dim, keepdim))


def aminmax_backward(grad_min, grad_max, self, min, max, dim, keepdim):
    grads = [evenly_distribute_backward(g, self, r, dim, keepdim) for g, r in ((grad_min, min), (grad_max, max))
             if g is not None]
    return grads[0] if len(grads) == 1 else grads[0] + grads[1]


_HELPERS = {f.__name__: f for f in (var_backward, std_backward, var_mean_backward, std_mean_backward,
                                    logsumexp_backward, nansum_backward, aminmax_backward)}
derivative("var.correction", name="VarBackward0", helpers=_HELPERS,
           self="var_backward(grad, self, dim, correction, keepdim)")
derivative("std.correction", name="StdBackward0", helpers=_HELPERS,
           self="std_backward(result, grad, self, dim, correction, keepdim)")
derivative("var_mean.correction", name="VarMeanBackward0", helpers=_HELPERS,
           self="var_mean_backward(grads[0], grads[1], self, dim, correction, keepdim)")
derivative("std_mean.correction", name="StdMeanBackward0", helpers=_HELPERS,
           self="std_mean_backward(grads[0], grads[1], self, result0, dim, correction, keepdim)")
derivative("logsumexp", helpers=_HELPERS, self="logsumexp_backward(grad, self, result, dim, keepdim)")
derivative("nansum", helpers=_HELPERS, self="nansum_backward(grad, self, dim, keepdim)")
derivative("aminmax", helpers=_HELPERS, self="aminmax_backward(grads[0], grads[1], self, min, max, dim, keepdim)")
derivative("median.all", name="MedianBackward0", self="evenly_distribute_backward(grad, self, result)")
derivative("nanmedian.all", name="NanmedianBackward0", self="evenly_distribute_backward(grad, self, result)")
for _name, _node in (("median.dim", "MedianBackward1"), ("nanmedian.dim", "NanmedianBackward1"),
                     ("mode", "ModeBackward0")):
    derivative(_name, name=_node, self="value_selecting_backward(grad, dim, indices, self_meta.size, keepdim)")
nondifferentiable("count_nonzero", "_quantile_ranks")
nondifferentiable("histc")
