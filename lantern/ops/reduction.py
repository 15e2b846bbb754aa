"""Reductions: sum, mean, prod, amax, amin, argmax, argmin, any, all, and max/min with a dim (values, indices).

>>> x = lantern.arange(6).view(2, 3)
>>> x.sum(1).tolist(), x.sum(dtype=lantern.float64).dtype, x.max(1).indices.tolist()
([3, 12], lantern.float64, [2, 2])
"""
from collections import namedtuple

import numpy as np

from ..core import dtype as dt
from .meta_util import wrap_dims
from .pointwise import _require_tensor
from .registry import custom, structured
from .derivative import derivative, nondifferentiable


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
        _require_tensor(name, self)
        if name == "prod" and dim is not None:
            _single_dim(name, dim)
        dims = _dims(self, dim)
        if dtype is None:
            dtype = dt.int64 if self.dtype.category <= dt.INTEGRAL else self.dtype
        return reduced_shape(self._size, dims, keepdim), dtype
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
        getattr(xp, ufunc_name).reduce(self, axis=_axes(self, dim), keepdims=keepdim, dtype=dtype, out=out)
    return impl


structured("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _sum_like_meta("sum"), _reduce_impl("add"), inplace=False, dtype_from_out=True)
structured("prod(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _sum_like_meta("prod"), _reduce_impl("multiply"), inplace=False, dtype_from_out=True)


def _mean_meta(self, dim=None, keepdim=False, dtype=None):
    _require_tensor("mean", self)
    dims = _dims(self, dim)
    out_dtype = dtype or self.dtype
    if out_dtype.category < dt.FLOATING:
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(f"mean(): could not infer output dtype. {which} dtype must be either a floating point or "
                           f"complex dtype. Got: {out_dtype.legacy}")
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


def return_type(name, fields):
    return type(name, (_ReturnType, namedtuple(name, fields)), {"__slots__": ()})


max_rt = return_type("max", ["values", "indices"])
min_rt = return_type("min", ["values", "indices"])


def _minmax_dim(name, arg, rt):
    def meta_shapes(self, dim, keepdim):
        _require_tensor(name, self)
        _single_dim(name, dim)
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


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

# ---- reductions ----
derivative("sum", name=lambda args: "SumBackward0" if args[1] is None else "SumBackward1",
           self="sum_backward(grad, self_meta.size, dim, keepdim)")
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
