"""Reductions: sum, mean, prod, amax, amin, argmax, argmin, any, all, max/min with a dim (values, indices) and
aminmax, each op's record, kernel and derivative together; the helpers the other reduction modules share (dims,
reduced shapes, torch.return_types' named tuples, out= writing). The other families live beside this module:
var/std and their mean forms (reduction_var), logsumexp/nansum/nanmean/norm (reduction_sums), median/mode/quantile
(reduction_order_statistics), count_nonzero/bincount/histc (reduction_counting).

>>> x = lantern.arange(6).view(2, 3)
>>> x.sum(1).tolist(), x.sum(dtype=lantern.float64).dtype, x.max(1).indices.tolist()
([3, 12], lantern.float64, [2, 2])
>>> tuple(lantern.aminmax(x, dim=1).max.tolist())
(2, 5)
"""
from collections import namedtuple
import numpy as np

from ..core import dtype as dt
from ..core.dispatch_keys import DispatchKey
from ..core.promotion import can_cast
from ..core.reference import specialisation
from ..core.shown_name import qualified
from ..core.state import tls
from ..core.tensor_impl import TensorImpl, make_tensor
from .meta_util import wrap_dim, wrap_dims
from .pointwise_common import _require_tensor
from .dispatcher import call
from .registry import composite, custom, get, structured
from .derivative import derivative, nondifferentiable
from .derivative_specialisation import specialise_derivative
from .derivative_helpers import evenly_distribute_backward

_PYTHON_KEY = DispatchKey.Python  # read per call: an enum class attribute costs ~70 ns (see autograd/kernel.py)


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


MAX_REDUCED_DIMS = 64  # PyTorch's reductions over given dims mark them in a 64-bit mask


def _check_dims_fit_mask(name, self):
    """Refuse reducing over given dims of a tensor of more than 64 dims, as PyTorch does (a full reduction, with no
    dim named, has no such limit there)."""
    if self.dim() > MAX_REDUCED_DIMS:
        raise RuntimeError(f"only tensors with up to {MAX_REDUCED_DIMS} dims are supported ({name} over a dim of a "
                           f"tensor of {self.dim()} dims: reshape it to at most {MAX_REDUCED_DIMS} dims first)")


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


def _into_out(name, result, out):
    """Write a result into a user's out= tensor, resized as PyTorch resizes it."""
    from ..backends.base import resize_out
    if not can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {result.dtype.legacy} can't be cast to the desired output type "
                           f"{out.dtype.legacy} (in {name})")
    resize_out(out, result._size, name)
    return out.copy_(result)


def _where(cond, a, b):
    """where(cond, a, b) through the dispatcher, for the backward helpers."""
    return call(get("where"), (cond, a, b))


structured("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _sum_like_meta("sum"), _reduce_impl("add"), inplace=False, dtype_from_out=True)
structured("prod(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _sum_like_meta("prod"), _reduce_impl("multiply"), inplace=False, dtype_from_out=True)


derivative("sum", name=lambda args: "SumBackward0" if args[1] is None else "SumBackward1",
           self="sum_backward(grad, self_meta.size, dim, keepdim)")


def full_sum(grad, dim):
    """The sums sum_backward_as_view serves: over every dim, so that grad is 0-d, and grad not a wrapper subclass
    (whose __torch_dispatch__ makes its expand)."""
    return dim is None and not grad._size and grad._backend.key is not _PYTHON_KEY


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


derivative("prod", name=lambda args: "ProdBackward0" if args[1] is None else "ProdBackward1",
           self="prod_backward(grad, self, result, dim, keepdim)")


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


derivative("mean", name=lambda args: "MeanBackward0" if args[1] is None else "MeanBackward1",
           self="mean_backward(grad, self_meta.size, dim, keepdim)")


def _no_complex(kernel, dtype):
    if dtype.is_complex:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype.legacy}'")


def _minmax_meta(name):
    def meta(self, dim=None, keepdim=False):
        _require_tensor(name, self)
        if not _no_dims(dim):
            _check_dims_fit_mask(name, self)
        dims = _dims(self, dim)
        _check_nonempty(name, self, dim)
        _no_complex(f"{name[1:]}_values_cpu", self.dtype)
        return reduced_shape(self._size, dims, keepdim), self.dtype
    return meta


def _minmax_impl(name):
    """The kernel of amax/amin/max/min: the reduction xp.<name> ('max', 'min') over the dims."""
    def impl(xp, out, dtype, self, dim=None, keepdim=False):
        getattr(xp, name)(self, axis=_axes(self, dim), keepdims=keepdim, out=out)
    return impl


structured("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", _minmax_meta("amax"),
           _minmax_impl("max"), inplace=False, exact_out_dtype=True)
structured("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", _minmax_meta("amin"),
           _minmax_impl("min"), inplace=False, exact_out_dtype=True)


derivative("amax", self="evenly_distribute_backward(grad, self, result, dim, keepdim)")
derivative("amin", self="evenly_distribute_backward(grad, self, result, dim, keepdim)")


def _full_minmax_meta(name):
    def meta(self):
        _require_tensor(name, self)
        _check_nonempty(name, self, None)
        _no_complex(f"{name}_all", self.dtype)
        return (), self.dtype
    return meta


structured("max(Tensor self) -> Tensor", _full_minmax_meta("max"), _minmax_impl("max"), inplace=False, out=False)
structured("min(Tensor self) -> Tensor", _full_minmax_meta("min"), _minmax_impl("min"), inplace=False, out=False)


derivative("max", name="MaxBackward1", self="evenly_distribute_backward(grad, self, result)")
derivative("min", name="MinBackward1", self="evenly_distribute_backward(grad, self, result)")


def _no_complex_or_bool(name, dtype):
    if dtype.is_complex or dtype is dt.bool:
        raise RuntimeError(f"{name}(): does not support {'complex' if dtype.is_complex else 'bool'} input")


def _arg_meta(name):
    def meta(self, dim=None, keepdim=False):
        _require_tensor(name, self)
        _no_complex_or_bool(name, self.dtype)
        _check_nonempty(name, self, dim, error_without_dim=IndexError)
        if dim is None:
            return (1,) * self.dim() if keepdim else (), dt.int64
        _single_dim(name, dim)
        return reduced_shape(self._size, wrap_dims(dim, self.dim()), keepdim), dt.int64
    return meta


def _arg_impl(name):
    """The kernel of argmax/argmin: xp.<name> over one dim, or over the flattened tensor."""
    def impl(xp, out, dtype, self, dim=None, keepdim=False):
        if dim is None:
            out[...] = getattr(xp, name)(self.reshape(-1))
        else:
            getattr(xp, name)(self, axis=dim % self.ndim if self.ndim else None, keepdims=keepdim, out=out)
    return impl


structured("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", _arg_meta("argmax"),
           _arg_impl("argmax"), inplace=False, exact_out_dtype=True)
structured("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", _arg_meta("argmin"),
           _arg_impl("argmin"), inplace=False, exact_out_dtype=True)


def _logical_meta(name):
    def meta(self, dim=None, keepdim=False):
        _require_tensor(name, self)
        dims = () if dim is not None and _no_dims(dim) else _dims(self, dim)  # any(x, dim=()) reduces nothing
        return reduced_shape(self._size, dims, keepdim), dt.uint8 if self.dtype is dt.uint8 else dt.bool
    return meta


def _logical_impl(name):
    """The kernel of any/all: xp.<name> over the dims."""
    def impl(xp, out, dtype, self, dim=None, keepdim=False):
        axis = () if dim is not None and _no_dims(dim) else _axes(self, dim)
        out[...] = getattr(xp, name)(self, axis=axis, keepdims=keepdim)
    return impl


structured("any(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", _logical_meta("any"),
           _logical_impl("any"), inplace=False, exact_out_dtype=True)
structured("all(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", _logical_meta("all"),
           _logical_impl("all"), inplace=False, exact_out_dtype=True)


nondifferentiable("argmax", "argmin", "any", "all")


# ---- max / min along a dim: two outputs, a named tuple, as torch.return_types ------------------------------

class _ReturnType:
    """Base for lantern.return_types: named tuples that print like PyTorch's structseqs."""

    def __repr__(self):
        body = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
        return qualified(f"return_types.{type(self).__name__}(\n{body})")


RETURN_TYPES = {}  # name -> type, every op's; lantern.return_types shows them as torch.return_types does


def return_type(name, fields):
    made = RETURN_TYPES[name] = type(name, (_ReturnType, namedtuple(name, fields)), {"__slots__": ()})
    return made


def out_return_type(rt):
    """The named tuple an out= variant returns (torch.return_types.sort_out for sort's): the same fields."""
    name = rt.__name__ + "_out"
    return RETURN_TYPES.get(name) or return_type(name, rt._fields)


def with_out(name, input, compute, out):
    """compute(), written into the caller's out= tensors when given (resized to fit; dtypes must match exactly),
    as ATen's out variants do."""
    if out is None:
        return compute()
    if input.requires_grad and tls.grad_enabled:
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    result = compute()
    multi = isinstance(result, tuple)
    for target, r in zip(out if multi else (out,), result if multi else (result,)):
        if target.dtype is not r.dtype:
            raise RuntimeError(f"{name}(): Expected out tensor to have dtype {r.dtype}, but got {target.dtype} "
                               f"instead (give an out tensor of dtype {r.dtype})")
        if target._size != r._size:
            target._resize(r._size)
        target.copy_(r)
    return out_return_type(type(result))(*out) if multi else out


max_rt = return_type("max", ["values", "indices"])
min_rt = return_type("min", ["values", "indices"])


def _minmax_dim(name, arg, rt):
    """max.dim/min.dim: the values and their indices, found by xp.<arg> ('argmax', 'argmin')."""
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
        xp, a = backend.xp, backend.array(self)
        d = dim % a.ndim if a.ndim else None
        idx = getattr(xp, arg)(a, axis=d, keepdims=True) if a.ndim else xp.zeros((), np.int64)
        vals = xp.take_along_axis(a, idx, axis=d) if a.ndim else a
        if not keepdim and a.ndim:
            idx, vals = idx.squeeze(d), vals.squeeze(d)
        indices._nd[...] = idx
        values._nd[...] = vals
        return rt(values, indices)

    def meta(backend, self, dim, keepdim=False):
        shape = meta_shapes(self, dim, keepdim)
        return rt(backend.empty(shape, self.dtype), backend.empty(shape, dt.int64))
    return kernel, meta


for _name, _arg, _rt in (("max", "argmax", max_rt), ("min", "argmin", min_rt)):
    _k, _m = _minmax_dim(_name, _arg, _rt)
    custom(f"{_name}.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", _k, _m)


derivative("max.dim", name="MaxBackward0", self="value_selecting_backward(grad, dim, indices, self_meta.size, keepdim)")
derivative("min.dim", name="MinBackward0", self="value_selecting_backward(grad, dim, indices, self_meta.size, keepdim)")


# ---- aminmax: (min, max) in one call -------------------------------------------------------------------------

aminmax_rt = return_type("aminmax", ["min", "max"])


def _aminmax_shape(self, dim, keepdim):
    _require_tensor("aminmax", self)
    if dim is not None:
        _check_dims_fit_mask("aminmax", self)
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


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """(min, max) of input over dim (or all of it); out=(min, max) writes them there."""
    return with_out("aminmax", input, lambda: call(get("aminmax"), (input, dim, keepdim)), out)


composite("aminmax", aminmax, method=False)  # the functional form, with out=; the method comes from the schema


def aminmax_backward(grad_min, grad_max, self, min, max, dim, keepdim):
    grads = [evenly_distribute_backward(g, self, r, dim, keepdim) for g, r in ((grad_min, min), (grad_max, max))
             if g is not None]
    return grads[0] if len(grads) == 1 else grads[0] + grads[1]


derivative("aminmax", helpers={"aminmax_backward": aminmax_backward},
           self="aminmax_backward(grads[0], grads[1], self, min, max, dim, keepdim)")
