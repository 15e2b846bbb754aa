"""One index entry per element along a dim, as ATen's ScatterGatherKernel does it: gather, scatter (src, value,
reduce), scatter_add, scatter_reduce; take (over the flattened tensor) and take_along_dim (gather with
broadcasting). Each op's record, kernel and derivative sit together.

>>> x = lantern.arange(12).view(3, 4)
>>> x.gather(1, lantern.tensor([[3], [0], [1]])).tolist()
[[3], [4], [9]]
>>> lantern.zeros(4).scatter_add(0, lantern.tensor([1, 1, 3]), lantern.ones(3)).tolist()
[0.0, 2.0, 0.0, 1.0]
>>> x.take(lantern.tensor([0, 11])).tolist()
[0, 11]
"""
from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .call_by_name import call_op as _op
from .dispatcher import call
from .meta_util import broadcast_shapes, shape_str, wrap_dim
from .registry import composite, get, structured
from .derivative import derivative
from .indexing_common import _at_least_1d, _filled


# ---- gather / scatter: each entry of `index` names one element along `dim` -------------------------------------

def _nonempty_dim(t):
    """ATen's ensure_nonempty_dim: a 0-dim tensor counts as one dim of size 1."""
    return max(t.dim(), 1)


def _nonempty_size(t, d):
    return t._size[d] if t.dim() else 1


def _check_int_index(name, index):
    if index.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index (got {index.dtype}; pass index.long())")


def _check_gather_shape(self, d, index):
    if _nonempty_dim(self) != _nonempty_dim(index):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as input tensor (gather: input "
                           f"{shape_str(self._size)}, index {shape_str(index._size)})")
    for i in range(_nonempty_dim(self)):
        if i != d and _nonempty_size(index, i) > _nonempty_size(self, i):
            raise RuntimeError(f"Size does not match at dimension {i} expected index {shape_str(index._size)} to be "
                               f"no larger than self {shape_str(self._size)} apart from dimension {d}")


def _check_scatter_shape(name, self, d, index, src):
    if index.numel() == 0:
        return
    if _nonempty_dim(self) != _nonempty_dim(index):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as self tensor ({name}: self "
                           f"{shape_str(self._size)}, index {shape_str(index._size)})")
    is_src = isinstance(src, TensorImpl)
    if is_src and _nonempty_dim(src) != _nonempty_dim(index):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as src tensor ({name}: src "
                           f"{shape_str(src._size)}, index {shape_str(index._size)})")
    dims = range(_nonempty_dim(index))
    if any(i != d and _nonempty_size(index, i) > _nonempty_size(self, i) for i in dims) or \
            (is_src and any(_nonempty_size(index, i) > _nonempty_size(src, i) for i in dims)):
        tail = f" and to be smaller size than src {shape_str(src._size)}" if is_src else ""
        raise RuntimeError(f"Expected index {shape_str(index._size)} to be smaller than self {shape_str(self._size)} "
                           f"apart from dimension {d}{tail}")


def _check_in_range(name, values, n, d):
    bad = (values < 0) | (values >= n)
    if bad.any():
        raise RuntimeError(f"{name}(): index {int(values[bad].flat[0])} is out of bounds for dimension {d} with "
                           f"size {n}")


def _along_dim_key(xp, index, d):
    """The NumPy index of the elements gather reads and scatter writes: entry i of `index` addresses the element
    at i's own position, with its coordinate along d replaced by the entry's value."""
    n = index.ndim
    key = [xp.arange(s).reshape((s,) + (1,) * (n - 1 - k)) for k, s in enumerate(index.shape)]
    key[d] = index
    return tuple(key)


def _gather_meta(self, dim, index, sparse_grad=False):
    d = wrap_dim(dim, self.dim())
    if index.numel() == 0:  # an empty index gathers nothing: PyTorch checks neither its dtype nor its shape
        return index._size, self.dtype
    _check_int_index("gather", index)
    _check_gather_shape(self, d, index)
    return index._size, self.dtype


def _gather_impl(xp, out, dtype, self, dim, index, sparse_grad=False):
    if index.size == 0:
        return
    self, index, out = _at_least_1d(self), _at_least_1d(index), _at_least_1d(out)
    d = dim % self.ndim
    _check_in_range("gather", index, self.shape[d], d)
    out[...] = self[_along_dim_key(xp, index, d)]


structured("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", _gather_meta,
           _gather_impl, inplace=False, out=False, exact_out_dtype=True)  # gather.out: lantern.ops.out_overlap


def gather_backward(grad, sizes, dim, index):
    return _filled(sizes, grad, "zeros").scatter_add(dim, index, grad)


derivative("gather", self="gather_backward(grad, self_meta.size, dim, index)",
           helpers={"gather_backward": gather_backward})


_SCATTER_REDUCES = {"add": "add", "multiply": "multiply"}
_SCATTER_REDUCE_TWO = {"sum": "add", "prod": "multiply", "mean": "add", "amax": "maximum", "amin": "minimum"}


def _scatter_meta(name, reduces=None):
    def meta(self, dim, index, src, reduce=None, include_self=True):
        d = wrap_dim(dim, self.dim())
        if index.numel():  # PyTorch reads nothing of an empty index, so checks nothing of it
            _check_int_index(name, index)
        if isinstance(src, TensorImpl) and src.dtype is not self.dtype:
            raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype (got {self.dtype} and "
                               f"{src.dtype}; cast src with .to({self.dtype}))")
        _check_scatter_shape(name, self, d, index, src)
        if reduces is _SCATTER_REDUCES and reduce not in reduces:
            raise RuntimeError(f"reduce argument must be either add or multiply. (scatter got reduce={reduce!r})")
        if reduces is _SCATTER_REDUCE_TWO and reduce not in reduces:
            raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
        if reduce in ("amax", "amin") and self.dtype.is_complex:
            raise NotImplementedError(f"\"scatter_gather_tensor_cpu_reduce_{reduce}\" not implemented for "
                                      f"'{self.dtype.legacy}'")
        return self._size, self.dtype
    return meta


def _scatter_target(xp, out, self, dim, index, src):
    """Copy self into out and return (out, NumPy key, src values) for the elements index addresses, or None when
    index is empty."""
    out[...] = self
    if index.size == 0:
        return None
    out, index = _at_least_1d(out), _at_least_1d(index)
    d = dim % out.ndim
    _check_in_range("scatter", index, out.shape[d], d)
    if hasattr(src, "shape"):
        src = _at_least_1d(src)[tuple(slice(0, n) for n in index.shape)]
    return out, _along_dim_key(xp, index, d), src


def _scatter_impl(xp, out, dtype, self, dim, index, src, reduce=None):
    target = _scatter_target(xp, out, self, dim, index, src)
    if target is None:
        return
    out, key, src = target
    if reduce is None:
        out[key] = src
    else:
        if not hasattr(src, "shape"):  # a Scalar value is converted to self's dtype first: 2.5 adds 2 to integers
            src = xp.asarray(src).astype(out.dtype)
        getattr(xp, _SCATTER_REDUCES[reduce]).at(out, key, src)


def _scatter_add_impl(xp, out, dtype, self, dim, index, src):
    _scatter_impl(xp, out, dtype, self, dim, index, src, "add")


structured("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", _scatter_meta("scatter"),
           _scatter_impl, out=False)
structured("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", _scatter_meta("scatter"),
           _scatter_impl, out=False)
structured("scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor",
           _scatter_meta("scatter", _SCATTER_REDUCES), _scatter_impl, out=False)
structured("scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor",
           _scatter_meta("scatter", _SCATTER_REDUCES), _scatter_impl, out=False)
structured("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", _scatter_meta("scatter_add"),
           _scatter_add_impl, exact_out_dtype=True)


def _identity(xp, reduce, dtype):
    """The value a reduction starts from when include_self=False leaves self out of it."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    category = dt.from_numpy_dtype(dtype).category
    if category >= dt.FLOATING:
        return -xp.inf if reduce == "amax" else xp.inf
    if category == dt.BOOL:
        return reduce == "amin"
    info = xp.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _scatter_reduce_impl(xp, out, dtype, self, dim, index, src, reduce, include_self=True):
    target = _scatter_target(xp, out, self, dim, index, src)
    if target is None:
        return
    out, key, src = target
    if not include_self:
        out[key] = _identity(xp, reduce, out.dtype)
    getattr(xp, _SCATTER_REDUCE_TWO[reduce]).at(out, key, src)
    if reduce == "mean":
        count = xp.full(out.shape, 1 if include_self else 0, dtype=xp.int64)
        xp.add.at(count, key, 1)
        count = xp.maximum(count, 1)
        if dt.from_numpy_dtype(out.dtype).category >= dt.FLOATING:
            xp.true_divide(out, count, out=out, casting="unsafe")
        else:
            xp.floor_divide(out, count, out=out, casting="unsafe")


structured("scatter_reduce(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True)"
           " -> Tensor", _scatter_meta("scatter_reduce", _SCATTER_REDUCE_TWO), _scatter_reduce_impl,
           exact_out_dtype=True)


def _scatter_overload(src, reduce):
    tensor = isinstance(src, TensorImpl)
    if reduce is None:
        return "src" if tensor else "value"
    return "reduce" if tensor else "value_reduce"


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """scatter(dim, index, src) writes src's values (a tensor, or one number) where index points along dim;
    reduce='add'/'multiply' combines them with what is there instead."""
    src = value if src is None else src
    overload = _scatter_overload(src, reduce)
    args = (input, dim, index, src) if reduce is None else (input, dim, index, src, reduce)
    return call(get(f"scatter.{overload}"), args)


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """In-place scatter (see scatter)."""
    src = value if src is None else src
    overload = _scatter_overload(src, reduce)
    args = (self, dim, index, src) if reduce is None else (self, dim, index, src, reduce)
    return call(get(f"scatter_.{overload}"), args)


for _fn in (scatter, scatter_):
    composite(_fn.__name__, _fn)


def scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result):
    """(self's gradient, src's gradient) of scatter_reduce, as ATen's scatter_reduce_backward computes them."""
    if reduce == "sum":
        grad_self, grad_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        count = _filled(self._size, grad, "ones" if include_self else "zeros")
        count = count.scatter_add(dim, index, _filled(index._size, grad, "ones"))
        count = count.masked_fill(count == 0, 1)
        grad_self = grad / count
        grad_src = grad_self.gather(dim, index)
    elif reduce in ("amax", "amin"):
        self_is_result = (self == result).to(grad.dtype)
        src_is_result = (src == result.gather(dim, index)).to(grad.dtype)
        count = self_is_result.scatter_add(dim, index, src_is_result)
        distributed = grad / count
        grad_self = self_is_result * distributed
        grad_src = src_is_result * distributed.gather(dim, index)
    else:
        grad_self, grad_src = _scatter_prod_backward(grad, self, dim, index, src, include_self, result)
    if not include_self:
        grad_self = grad_self.scatter(dim, index, 0)
    return grad_self, grad_src


def _scatter_prod_backward(grad, self, dim, index, src, include_self, result):
    """prod: the product of the others, computed without dividing by a zero (a lone zero's gradient is the product
    of the rest; with two zeros in a group every gradient is zero)."""
    masked_self = self.masked_fill(self == 0, 1)
    grad_self = grad * masked_self.scatter_reduce(dim, index, src, "prod", include_self=include_self) / masked_self
    src_zero = src == 0
    zeros_per_group = _filled(self._size, grad, "zeros").scatter_add(dim, index, src_zero.to(grad.dtype))
    src_single_zero = src_zero & (zeros_per_group.gather(dim, index) == 1)
    masked_src = src.masked_fill(src_single_zero, 1)
    masked_src_result = self.scatter_reduce(dim, index, masked_src, "prod", include_self=include_self)
    grad_src = _op("where", src_single_zero, (grad * masked_src_result).gather(dim, index),
                   (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1))
    return grad_self, grad_src


derivative("scatter.src", name="ScatterBackward0", self="grad.scatter(dim, index, 0)", src="grad.gather(dim, index)")
derivative("scatter.value", name="ScatterBackward1", self="grad.scatter(dim, index, 0)")
derivative("scatter_add", self="grad", src="grad.gather(dim, index)")
derivative("scatter_reduce", name="ScatterReduceBackward0",
           self="scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result)[0]",
           src="scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result)[1]",
           helpers={"scatter_reduce_backward": scatter_reduce_backward})


# ---- take, take_along_dim: flat and per-dim gathers ----------------------------------------------------------

def _take_meta(self, index):
    if index.dtype is not dt.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.legacy}")
    return index._size, self.dtype


def _take_impl(xp, out, dtype, self, index):
    n = self.size
    if index.size and n == 0:
        raise IndexError("take(): tried to take from an empty tensor")
    bad = (index < -n) | (index >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(index[bad].flat[0])} on a tensor of {n} "
                         "elements.")
    out[...] = self.reshape(-1)[index]


structured("take(Tensor self, Tensor index) -> Tensor", _take_meta, _take_impl, inplace=False, out=False,
           exact_out_dtype=True)  # take.out: lantern.ops.out_overlap


def take_backward(grad, sizes, index):
    numel = 1
    for n in sizes:
        numel *= n
    flat = _filled((numel,), grad, "zeros").index_put([index.reshape(-1)], grad.reshape(-1), True)
    return flat.view(sizes)


derivative("take", self="take_backward(grad, self_meta.size, index)", helpers={"take_backward": take_backward})


def take_along_dim(input, indices, dim=None, *, out=None):
    """input's values picked along dim by indices (broadcast with input in the other dims); with no dim, picked
    from input flattened."""
    if indices.dtype is not dt.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {indices.dtype.legacy}")
    if dim is None:
        args = (input.view(-1), 0, indices.view(-1), False)
    else:
        if input.dim() != indices.dim():
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                               f"dimensions, but got {input.dim()} dimensions for input, and {indices.dim()} "
                               "dimensions for indices")
        d = wrap_dim(dim, input.dim())
        shape = list(broadcast_shapes(tuple(1 if i == d else n for i, n in enumerate(input._size)),
                                      tuple(1 if i == d else n for i, n in enumerate(indices._size))))
        shape[d] = input._size[d]
        input_b = input.expand(shape)
        shape[d] = indices._size[d]
        if input._size[d]:  # PyTorch wraps indices along dim modulo its size (-1 is the last, 3 of 3 the first)
            indices = indices.remainder(input._size[d])
        args = (input_b, d, indices.expand(shape), False)
    return call(get("gather"), args) if out is None else call(get("gather.out"), args + (out,))


composite("take_along_dim", take_along_dim)
