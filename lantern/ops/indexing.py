"""Indexing ops, as ATen's TensorAdvancedIndexing and ScatterGatherKernel do them.

- Advanced indexing: `index.Tensor` gathers into a new tensor, `index_put_` scatters in place, `index_put` is its
  out-of-place composite. `x[idx]` and `x[idx] = v` reach them through lantern/_indexing.py.
- One index entry per element along a dim: gather, scatter (src, value, reduce), scatter_add, scatter_reduce;
  take_along_dim (gather with broadcasting), take (over the flattened tensor).
- One index entry per slice along a dim: index_select, index_add, index_copy, index_fill.
- Masks: masked_fill, masked_select, masked_scatter; nonzero and argwhere (data-dependent sizes).

`indices` of index.Tensor holds one entry per leading dim of `self`: None (keep the whole dim) or an index tensor
(int64/int32, or a bool/uint8 mask that stands for as many dims as it has). The index tensors broadcast together,
and their shape replaces the indexed dims: in place when those dims are adjacent, else at the front (NumPy's rule).

>>> from lantern.ops.dispatcher import call
>>> x = lantern.arange(12).view(3, 4)
>>> call(get("index.Tensor"), (x, [None, lantern.tensor([0, 3])])).tolist()
[[0, 3], [4, 7], [8, 11]]
>>> call(get("index_put_"), (x, [lantern.tensor([1, 1])], lantern.tensor(1), True))[1].tolist()
[6, 7, 8, 9]
>>> x.gather(1, lantern.tensor([[3], [0], [1]])).tolist(), x.masked_fill(x > 9, 0)[2].tolist()
([[3], [6], [9]], [8, 9, 0, 0])
>>> lantern.zeros(4).scatter_add(0, lantern.tensor([1, 1, 3]), lantern.ones(3)).tolist()
[0.0, 2.0, 0.0, 1.0]
"""
import warnings
from typing import NamedTuple

from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl, _is_contiguous_in_order, contiguous_strides
from .factory import C_TYPE_NAMES
from .call_by_name import call_op as _op
from .dispatcher import call
from .meta_util import broadcast_all, broadcast_shapes, iterator_strides, shape_str, wrap_dim
from .registry import composite, custom, get, structured
from .views import view_strides
from .derivative import derivative, nondifferentiable

_MASK_DTYPES = (dt.bool, dt.uint8)
_INDEX_DTYPES = (dt.int64, dt.int32) + _MASK_DTYPES


class _Indexer(NamedTuple):
    """One integer index tensor as ATen holds it: its sizes and strides (which decide the result's strides), dtype
    and values (None on the meta device)."""
    size: tuple
    stride: tuple
    dtype: dt.dtype
    values: object


class _Plan(NamedTuple):
    """Where an advanced index reads or writes: `source[key]` on the (maybe permuted) array of self."""
    shape: tuple       # the result's shape
    strides: tuple     # the result's strides, as TensorIterator lays it out
    source: object     # self's array, indexed dims moved to the front if needed; None on meta or if empty
    key: tuple         # slices for the dims before, then the index arrays


def _data(backend, t):
    """The array over t's memory, or None on the meta device (which has no data)."""
    return None if backend.xp is None else backend.array(t)


def _check_indices(self, indices):
    if not any(ix is not None for ix in indices):
        raise IndexError("at least one index must be provided (index: every entry of `indices` is None; use "
                         "self itself, or a view op, to take whole dims)")
    if len(indices) > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()} (got {len(indices)})")
    for ix in indices:
        if ix is not None and ix.dtype not in _INDEX_DTYPES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def _check_mask_shape(self, mask, first_dim):
    for j, n in enumerate(mask._size):
        d = first_dim + j
        if d >= self.dim() or self._size[d] != n:
            raise IndexError(f"The shape of the mask {shape_str(mask._size)} at index {j} does not match the shape "
                             f"of the indexed tensor {shape_str(self._size)} at index {d}")


def _mask_indexers(backend, mask):
    """A k-dim mask becomes k int64 indexers, the columns of its nonzero() (an (n, k) tensor, so stride k)."""
    if mask.dtype is dt.uint8:
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
                      UserWarning, stacklevel=5)
    values = _data(backend, mask)
    if values is None:
        raise NotImplementedError(
            f"index: the result of indexing with a bool mask of shape {shape_str(mask._size)} has a data-dependent "
            "size, which a meta tensor cannot know. Index meta tensors with integer tensors or slices.")
    k = mask.dim()
    return [_Indexer((len(col),), (k,), dt.int64, col) for col in backend.xp.nonzero(values)]


def _expand_masks(backend, self, indices):
    out = []
    for ix in indices:
        if ix is None:
            out.append(None)
        elif ix.dtype in _MASK_DTYPES:
            _check_mask_shape(self, ix, len(out))
            out.extend(_mask_indexers(backend, ix))
        else:
            out.append(_Indexer(ix._size, ix._stride, ix.dtype, _data(backend, ix)))
    return out


def _expand_indexer(backend, ix, shape):
    lead = len(shape) - len(ix.size)
    stride = (0,) * lead + tuple(s if n == m else 0 for n, s, m in zip(ix.size, ix.stride, shape[lead:]))
    values = None if ix.values is None else backend.xp.broadcast_to(ix.values, shape)
    return _Indexer(shape, stride, ix.dtype, values)


def _broadcast(backend, indexers):
    """All index tensors expanded to their common shape (an index tensor already of that shape is kept)."""
    shapes = [ix.size for ix in indexers if ix is not None]
    try:
        shape = broadcast_all(shapes)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(shape_str(s) for s in shapes)) from None
    return shape, [ix if ix is None or ix.size == shape else _expand_indexer(backend, ix, shape) for ix in indexers]


def _front_permutation(indexers):
    """The dim order that puts the indexed dims first when they are not adjacent, else None."""
    where = [i for i, ix in enumerate(indexers) if ix is not None]
    if where[-1] - where[0] + 1 == len(where):
        return None
    return where + [i for i, ix in enumerate(indexers) if ix is None]


def _as_int64(backend, ix):
    """int32 indices become int64, as ATen converts them: a dense tensor keeps its strides, others turn contiguous."""
    order = sorted(range(len(ix.size)), key=lambda d: (ix.stride[d], ix.size[d]))
    stride = ix.stride if _is_contiguous_in_order(ix.size, ix.stride, order) else contiguous_strides(ix.size)
    values = None if ix.values is None else ix.values.astype(backend.xp.int64)
    return _Indexer(ix.size, stride, dt.int64, values)


def _check_bounds(indexers, sizes):
    for j, (ix, n) in enumerate(zip(indexers, sizes)):
        bad = (ix.values < -n) | (ix.values >= n)
        if bad.any():
            raise IndexError(f"index {int(ix.values[bad].flat[0])} is out of bounds for dimension {j} with size {n}")


def _result_strides(out_shape, src_strides, indexer_shape, indexers):
    """The result's layout, as TensorIterator picks it from self restrided over the result (stride 0 along the
    indexed dims) and each indexer viewed with size-1 dims around it."""
    operands = [(out_shape, src_strides)]
    operands += [(indexer_shape, view_strides(ix.size, ix.stride, indexer_shape)) for ix in indexers]
    return iterator_strides(out_shape, operands)


def _source(backend, self, perm, out_shape):
    """self's array with the indexed dims in front, or None when there is no data to touch (meta, no elements)."""
    if backend.xp is None or 0 in out_shape:
        return None
    array = backend.array(self)
    return array if perm is None else array.transpose(perm)


def _plan(backend, self, indices):
    """ATen's make_info + AdvancedIndex: check and normalize `indices`, then say where the result comes from."""
    _check_indices(self, indices)
    shape, indexers = _broadcast(backend, _expand_masks(backend, self, indices))
    indexers += [None] * (self.dim() - len(indexers))
    perm = _front_permutation(indexers)
    order = range(self.dim()) if perm is None else perm
    size, stride = tuple(self._size[d] for d in order), tuple(self._stride[d] for d in order)
    indexers = [indexers[d] for d in order]
    before = next(i for i, ix in enumerate(indexers) if ix is not None)
    used = [ix if ix.dtype is dt.int64 else _as_int64(backend, ix) for ix in indexers if ix is not None]
    after = before + len(used)
    if 0 in size[before:after] and 0 not in shape:
        raise IndexError("index is out of bounds for dimension with size 0")
    out_shape = size[:before] + shape + size[after:]
    strides = _result_strides(out_shape, stride[:before] + (0,) * len(shape) + stride[after:],
                              (1,) * before + shape + (1,) * (len(size) - after), used)
    source = _source(backend, self, perm, out_shape)
    if source is not None:  # ATen checks while it copies: with no elements, nothing is checked
        _check_bounds(used, size[before:after])
    return _Plan(out_shape, strides, source, (slice(None),) * before + tuple(ix.values for ix in used))


def _index(backend, self, indices):
    plan = _plan(backend, self, indices)
    out = backend.empty_strided(plan.shape, plan.strides, self.dtype)
    if plan.source is not None:
        backend.array(out)[...] = plan.source[plan.key]
    return out


custom("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", _index, _index)


# ---- index_put_ ----------------------------------------------------------------------------------------------------

def _warn_if_expanded(self):
    if any(s == 0 and n > 1 for n, s in zip(self._size, self._stride)):
        warnings.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
                      "performing this operation. This also applies to advanced indexing e.g. tensor[indices] = "
                      "tensor", UserWarning, stacklevel=5)


def _single_mask(indices):
    """(position, mask) when the only index is one bool/uint8 mask: ATen then runs masked_fill_ instead."""
    found, position = None, 0
    for ix in indices:
        if ix is None:
            position += 1
        elif ix.dtype not in _MASK_DTYPES or found is not None:
            return None
        else:
            found = (position, ix)
            position += ix.dim()
    return found


def _check_no_overlap(self, values):
    """Refuse values that share memory with self (ATen's assert_no_overlap: dense tensors on one storage)."""
    if self.numel() == 0 or values.numel() == 0 or self._storage is not values._storage:
        return
    if not (self.is_non_overlapping_and_dense() and values.is_non_overlapping_and_dense()):
        return
    a0, b0 = self._offset * self.dtype.itemsize, values._offset * values.dtype.itemsize
    if a0 < b0 + values.nbytes and b0 < a0 + self.nbytes:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           f"operation. (index_put_ of values of shape {shape_str(values._size)} into a tensor of "
                           f"shape {shape_str(self._size)}: pass values.clone())")


def _check_values(values, plan_shape, self):
    try:
        fits = broadcast_shapes(values._size, plan_shape) == plan_shape
    except RuntimeError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {shape_str(values._size)} cannot be broadcast to "
                           f"indexing result of shape {shape_str(plan_shape)}")
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {self.dtype.legacy} "
                           f"for the destination and {values.dtype.legacy} for the source. (cast the values with "
                           f".to({self.dtype}))")


def _masked_fill(backend, self, position, mask, values):
    _check_mask_shape(self, mask, position)
    if backend.xp is not None and self.numel():
        backend.array(self)[(slice(None),) * position + (backend.array(mask).astype(bool),)] = \
            backend.array(values).reshape(())


def _scatter(backend, self, indices, values, accumulate):
    _check_no_overlap(self, values)
    plan = _plan(backend, self, indices)
    _check_values(values, plan.shape, self)
    if plan.source is None:
        return
    if accumulate:
        backend.xp.add.at(plan.source, plan.key, backend.array(values))
    else:
        plan.source[plan.key] = backend.array(values)


def _index_put_(backend, self, indices, values, accumulate=False):
    if len(indices) > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()} (got {len(indices)})")
    _warn_if_expanded(self)
    mask = None if accumulate or values.numel() != 1 else _single_mask(indices)
    if mask is not None:
        _masked_fill(backend, self, mask[0], mask[1], values)
    else:
        _scatter(backend, self, indices, values, accumulate)
    self._bump_version()
    return self


custom("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
       _index_put_, _index_put_)


def index_put(input, indices, values, accumulate=False):
    """Out of place index_put_: a clone of `input` with `values` written (or added) at `indices`."""
    return call(get("index_put_"), (call(get("clone"), (input, None)), indices, values, accumulate))


composite("index_put", index_put)



# ---- gather / scatter: each entry of `index` names one element along `dim` -------------------------------------

def _nonempty_dim(t):
    """ATen's ensure_nonempty_dim: a 0-dim tensor counts as one dim of size 1."""
    return max(t.dim(), 1)


def _nonempty_size(t, d):
    return t._size[d] if t.dim() else 1


def _at_least_1d(a):
    return a.reshape(1) if a.ndim == 0 else a


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
           _gather_impl, inplace=False, exact_out_dtype=True)


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


# ---- index_select / index_add / index_copy / index_fill: whole slices along dim, one per index entry -------------

def _check_index_vector(name, index):
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector (got index of shape {shape_str(index._size)})")
    if index.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index but got: {index.dtype.legacy}")


def _index_select_meta(self, dim, index):
    d = wrap_dim(dim, self.dim())
    _check_index_vector("index_select", index)
    if self.dim() == 0:
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} "
                               "value(s) (a 0-d tensor has one element: index it with [0])")
        return (), self.dtype
    if index.numel() and self.dim() > 1 and self._size[d] == 0:
        raise RuntimeError(f"index_select(): self indexing axis dim should be positive (dimension {d} of "
                           f"{shape_str(self._size)} is empty, so no index can select from it)")
    return self._size[:d] + (index.numel(),) + self._size[d + 1:], self.dtype


def _check_slice_indices(name, index, n, d, error=IndexError, lowest=0):
    bad = (index < lowest) | (index >= n)
    if bad.any():
        raise error(f"{name}(): index {int(index[bad].flat[0])} is out of bounds for dimension {d} with size {n} "
                    "(index out of range in self)")


def _index_select_range_error(self, d):
    """PyTorch's class for an index out of range: its CPU kernels for dim 1 and for empty inputs raise
    RuntimeError ("INDICES element is out of DATA bounds"), the others IndexError."""
    return RuntimeError if self.ndim > 1 and (d == 1 or self.size == 0) else IndexError


def _index_select_impl(xp, out, dtype, self, dim, index):
    self, out, index = _at_least_1d(self), _at_least_1d(out), index.reshape(-1)
    d = dim % self.ndim
    _check_slice_indices("index_select", index, self.shape[d], d, _index_select_range_error(self, d))
    out[...] = xp.take(self, index, axis=d)


structured("index_select(Tensor self, int dim, Tensor index) -> Tensor", _index_select_meta, _index_select_impl,
           inplace=False, exact_out_dtype=True)


def _index_func_meta(name):
    """index_add/index_copy: source's slices along dim go to self's slices named by index."""
    def meta(self, dim, index, source, alpha=1):
        d = wrap_dim(dim, self.dim())
        _check_index_vector(f"{name}_", index)
        if name == "index_copy" and index.dtype is not dt.int64:
            raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {index.dtype.legacy}")
        if source.dtype is not self.dtype:
            raise RuntimeError(f"{name}_(): self and source expected to have the same dtype, but got (self) "
                               f"{self.dtype.legacy} and (source) {source.dtype.legacy} (cast source with "
                               f".to({self.dtype}))")
        rows = source._size[d] if source.dim() else 1
        if index.numel() != rows:
            raise (IndexError if name == "index_copy" else RuntimeError)(
                f"{name}_(): Number of indices ({index.numel()}) should be equal to source.size(dim) ({rows})")
        if source.dim() and self.dim() and (source.dim() != self.dim() or any(
                a != b for i, (a, b) in enumerate(zip(self._size, source._size)) if i != d)):
            raise RuntimeError(f"{name}_(): Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: {shape_str(self._size[:d] + self._size[d + 1:])} at dimension {d} and "
                               f"source slice shape: {shape_str(source._size[:d] + source._size[d + 1:])} at "
                               f"dimension {d}.")
        return self._size, self.dtype
    return meta


def _slices_key(name, out, dim, index, error):
    """(out as at least 1-D, the NumPy key of the slices `index` names along dim)."""
    out = _at_least_1d(out)
    d = dim % out.ndim
    index = index.reshape(-1)
    _check_slice_indices(name, index, out.shape[d], d, error)
    return out, (slice(None),) * d + (index,)


def _index_add_impl(xp, out, dtype, self, dim, index, source, alpha=1):
    out[...] = self
    if source.size == 0 or out.size == 0:  # nothing to add to: PyTorch's kernel never reads the index
        return
    # PyTorch's kernels raise IndexError for an index out of range along a 1-D self or a middle dim, RuntimeError
    # along the first or last dim of more
    middle = out.ndim <= 1 or 0 < dim % out.ndim < out.ndim - 1
    target, key = _slices_key("index_add_", out, dim, index, IndexError if middle else RuntimeError)
    if index.size:
        values = source.reshape(target[key].shape)
        xp.add.at(target, key, values if alpha == 1 else values * alpha)


def _index_copy_impl(xp, out, dtype, self, dim, index, source):
    out[...] = self
    target, key = _slices_key("index_copy_", out, dim, index, IndexError)
    if index.size:
        target[key] = source.reshape(target[key].shape)


structured("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
           _index_func_meta("index_add"), _index_add_impl, exact_out_dtype=True)
structured("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor", _index_func_meta("index_copy"),
           _index_copy_impl, exact_out_dtype=True)


def _index_fill_meta(self, dim, index, value):
    wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise RuntimeError(f"Index has to be a vector/scalar (index_fill got an index of shape "
                           f"{shape_str(index._size)})")
    if index.dtype is not dt.int64:
        raise IndexError(f"index_fill_(): Expected dtype int64 for index. (got {index.dtype}; pass index.long())")
    if isinstance(value, TensorImpl) and value.dim():
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    return self._size, self.dtype


def _index_fill_impl(xp, out, dtype, self, dim, index, value):
    out[...] = self
    target = _at_least_1d(out)
    d = dim % target.ndim
    index = index.reshape(-1)
    _check_slice_indices("index_fill_", index, target.shape[d], d, lowest=-target.shape[d])
    target[(slice(None),) * d + (index,)] = value


structured("index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", _index_fill_meta,
           _index_fill_impl, out=False)
structured("index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor", _index_fill_meta,
           _index_fill_impl, out=False)


def index_fill(input, dim, index, value):
    """Fill the slices along dim that index names with value (a number or a 0-dim tensor)."""
    overload = "int_Tensor" if isinstance(value, TensorImpl) else "int_Scalar"
    return call(get(f"index_fill.{overload}"), (input, dim, index, value))


def index_fill_(self, dim, index, value):
    overload = "int_Tensor" if isinstance(value, TensorImpl) else "int_Scalar"
    return call(get(f"index_fill_.{overload}"), (self, dim, index, value))


for _fn in (index_fill, index_fill_):
    composite(_fn.__name__, _fn)


# ---- masks: masked_fill, masked_select, masked_scatter --------------------------------------------------------

def _check_bool_mask(name, mask):
    if mask.dtype is not dt.bool:
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype "
                           f"{C_TYPE_NAMES[mask.dtype]} (pass mask.bool())")


def _masked_fill_meta(self, mask, value):
    _check_bool_mask("masked_fill_", mask)
    if isinstance(value, TensorImpl) and value.dim():
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    return broadcast_shapes(self._size, mask._size), self.dtype


def _masked_fill_impl(xp, out, dtype, self, mask, value):
    out[...] = self
    xp.copyto(out, value, where=mask, casting="unsafe")


structured("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", _masked_fill_meta,
           _masked_fill_impl, out=False)
structured("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", _masked_fill_meta,
           _masked_fill_impl, out=False)


def masked_fill(input, mask, value):
    """value (a number or a 0-dim tensor) where mask is True, input elsewhere; mask broadcasts with input."""
    overload = "Tensor" if isinstance(value, TensorImpl) else "Scalar"
    return call(get(f"masked_fill.{overload}"), (input, mask, value))


def masked_fill_(self, mask, value):
    overload = "Tensor" if isinstance(value, TensorImpl) else "Scalar"
    return call(get(f"masked_fill_.{overload}"), (self, mask, value))


for _fn in (masked_fill, masked_fill_):
    composite(_fn.__name__, _fn)


def _masked_select_shape(self, mask):
    if mask.dtype is not dt.bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask (got {mask.dtype}; pass mask.bool())")
    return broadcast_shapes(self._size, mask._size)


def _masked_select(backend, self, mask):
    shape = _masked_select_shape(self, mask)
    if backend.xp is None:
        raise NotImplementedError(
            f"masked_select: the result's size depends on the mask's values, which a meta tensor of shape "
            f"{shape_str(mask._size)} does not have.")
    xp = backend.xp
    picked = xp.broadcast_to(backend.array(self), shape)[xp.broadcast_to(backend.array(mask), shape)]
    out = backend.empty(picked.shape, self.dtype)
    backend.array(out)[...] = picked
    return out


custom("masked_select(Tensor self, Tensor mask) -> Tensor", _masked_select, _masked_select)


def _masked_scatter_meta(self, mask, source):
    _check_bool_mask("masked_scatter_", mask)
    if source.dtype is not self.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{self.dtype.legacy} and {source.dtype.legacy}")
    return broadcast_shapes(self._size, mask._size), self.dtype


def _masked_scatter_impl(xp, out, dtype, self, mask, source):
    mask = xp.broadcast_to(mask, out.shape)
    count = int(xp.count_nonzero(mask))
    if count > source.size:
        raise RuntimeError(f"Number of elements of source < number of ones in mask (masked_scatter: source has "
                           f"{source.size} elements, the mask {count} ones)")
    out[...] = self
    out[mask] = source.reshape(-1)[:count]


structured("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", _masked_scatter_meta,
           _masked_scatter_impl, out=False)


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


structured("take(Tensor self, Tensor index) -> Tensor", _take_meta, _take_impl, inplace=False, exact_out_dtype=True)


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
        args = (input_b, d, indices.expand(shape), False)
    return call(get("gather"), args) if out is None else call(get("gather.out"), args + (out,))


composite("take_along_dim", take_along_dim)


# ---- nonzero, argwhere: data-dependent sizes ---------------------------------------------------------------

def _nonzero(backend, self):
    if backend.xp is None:
        raise NotImplementedError(
            f"nonzero: the result's size depends on the values of the input (shape {shape_str(self._size)}), "
            "which a meta tensor does not have.")
    xp = backend.xp
    a = backend.array(self)
    if a.ndim == 0:  # one row with no columns when the value is nonzero
        count = int(a != 0)
        return backend.empty_strided((count, 0), (1, count), dt.int64)
    columns = xp.nonzero(a)
    count = len(columns[0])
    out = backend.empty_strided((count, a.ndim), (1, count), dt.int64)  # column-major, as ATen's
    if count:
        backend.array(out)[...] = xp.stack(columns, axis=1)
    return out


custom("nonzero.default(Tensor self) -> Tensor", _nonzero, _nonzero)


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero elements: an (n, input.dim()) tensor, or with as_tuple one 1-D tensor per dim
    (NumPy's nonzero; a 0-dim input counts as 1-D)."""
    if not as_tuple:
        return call(get("nonzero.default"), (input,))
    if input.dim() == 0:
        input = input.reshape(1)
    return call(get("nonzero.default"), (input,)).unbind(1)


def argwhere(input):
    """input.nonzero(): the indices of the nonzero elements, one row each."""
    return call(get("nonzero.default"), (input,))


for _fn in (nonzero, argwhere):
    composite(_fn.__name__, _fn)



# ---- backward helpers (the formulas below call them; written with lantern ops, so double backward works) ------

def _filled(sizes, like, factory):
    return _op(factory, tuple(sizes), like.dtype, None, like.device, None, False, None)


def _sum_to(grad, sizes):
    """A gradient of a broadcast result, summed back to an input's sizes."""
    return grad if grad._size == tuple(sizes) else grad.sum_to_size(sizes)


def _picked(grad, filled):
    """grad where an op wrote its fill value (grad minus grad with those places zeroed: each place counts once,
    however many times an index names it)."""
    return grad - filled


def index_select_backward(grad, sizes, dim, index):
    if not sizes:
        return grad
    return _filled(sizes, grad, "zeros").index_add(dim, index, grad)


def gather_backward(grad, sizes, dim, index):
    return _filled(sizes, grad, "zeros").scatter_add(dim, index, grad)


def masked_select_backward(grad, meta, mask):
    shape = broadcast_shapes(meta.size, mask._size)
    return _sum_to(_filled(shape, grad, "zeros").masked_scatter(mask, grad), meta.size)


def masked_scatter_backward(grad, mask, sizes):
    """source's gradient: grad at the mask's places, in order, then zeros for the source elements not used."""
    picked = grad.masked_select(mask)
    numel = 1
    for n in sizes:
        numel *= n
    if picked.numel() < numel:
        picked = _op("cat", [picked, _filled((numel - picked.numel(),), grad, "zeros")], 0)
    return picked.view(sizes)


def take_backward(grad, sizes, index):
    numel = 1
    for n in sizes:
        numel *= n
    flat = _filled((numel,), grad, "zeros").index_put([index.reshape(-1)], grad.reshape(-1), True)
    return flat.view(sizes)


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


_BACKWARD_HELPERS = {f.__name__: f for f in (
    index_select_backward, gather_backward, masked_select_backward, masked_scatter_backward, take_backward,
    scatter_reduce_backward, _sum_to, _picked)}


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

# ---- advanced indexing ----
derivative("index.Tensor", self="index_backward(grad, self_meta, indices)")
derivative("index_put_", self="grad if accumulate else grad.index_put(indices, zeros_like(values_meta))",
           values="index(grad, indices)")


# ---- gather, scatter and the index_* family ----
_h = _BACKWARD_HELPERS
derivative("gather", self="gather_backward(grad, self_meta.size, dim, index)", helpers=_h)
derivative("scatter.src", name="ScatterBackward0", self="grad.scatter(dim, index, 0)", src="grad.gather(dim, index)")
derivative("scatter.value", name="ScatterBackward1", self="grad.scatter(dim, index, 0)")
derivative("scatter_add", self="grad", src="grad.gather(dim, index)")
derivative("scatter_reduce", name="ScatterReduceBackward0",
           self="scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result)[0]",
           src="scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result)[1]", helpers=_h)
derivative("index_select", self="index_select_backward(grad, self_meta.size, dim, index)", helpers=_h)
derivative("index_add", self="grad", source="(grad.index_select(dim, index) * alpha).reshape(source_meta.size)")
derivative("index_copy", self="grad.index_fill(dim, index, 0)",
           source="grad.index_select(dim, index).reshape(source_meta.size)")
derivative("index_fill.int_Scalar", name="IndexFillBackward0", self="grad.index_fill(dim, index, 0)")
derivative("index_fill.int_Tensor", name="IndexFillBackward1", self="grad.index_fill(dim, index, 0)",
           value="_picked(grad, grad.index_fill(dim, index, 0)).sum()", helpers=_h)

# ---- masks, take ----
derivative("masked_fill.Scalar", name="MaskedFillBackward0", self="_sum_to(grad.masked_fill(mask, 0), self_meta.size)",
           helpers=_h)
derivative("masked_fill.Tensor", name="MaskedFillBackward1", self="_sum_to(grad.masked_fill(mask, 0), self_meta.size)",
           value="_picked(grad, grad.masked_fill(mask, 0)).sum()", helpers=_h)
derivative("masked_select", self="masked_select_backward(grad, self_meta, mask)", helpers=_h)
derivative("masked_scatter", self="_sum_to(grad.masked_fill(mask, 0), self_meta.size)",
           source="masked_scatter_backward(grad, mask, source_meta.size)", helpers=_h)
derivative("take", self="take_backward(grad, self_meta.size, index)", helpers=_h)
nondifferentiable("nonzero.default")
