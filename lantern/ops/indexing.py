"""Advanced indexing, as ATen's TensorAdvancedIndexing does it: `index.Tensor` gathers into a new tensor,
`index_put_` scatters in place, `index_put` is its out-of-place composite. `x[idx]` and `x[idx] = v` reach them
through lantern/_indexing.py. The other indexing families live beside this module: gather/scatter/take
(indexing_gather_scatter), whole slices along a dim (indexing_slices), masks and nonzero (indexing_masks).

`indices` of index.Tensor holds one entry per leading dim of `self`: None (keep the whole dim) or an index tensor
(int64/int32, or a bool/uint8 mask that stands for as many dims as it has). The index tensors broadcast together,
and their shape replaces the indexed dims: in place when those dims are adjacent, else at the front (NumPy's rule).

>>> from lantern.ops.dispatcher import call
>>> x = lantern.arange(12).view(3, 4)
>>> call(get("index.Tensor"), (x, [None, lantern.tensor([0, 3])])).tolist()
[[0, 3], [4, 7], [8, 11]]
>>> call(get("index_put_"), (x, [lantern.tensor([1, 1])], lantern.tensor(1), True))[1].tolist()
[6, 7, 8, 9]
"""
from typing import NamedTuple

from ..core import dtype as dt
from ..core.tensor_impl import _is_contiguous_in_order, contiguous_strides
from .dispatcher import call
from .meta_util import broadcast_all, broadcast_shapes, iterator_strides, shape_str
from .registry import composite, custom, get
from .views import view_strides
from .derivative import derivative
from ..core import user_warnings


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
        user_warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
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


derivative("index.Tensor", self="index_backward(grad, self_meta, indices)")


# ---- index_put_ ----------------------------------------------------------------------------------------------------

def _warn_if_expanded(self):
    if any(s == 0 and n > 1 for n, s in zip(self._size, self._stride)):
        user_warnings.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
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


derivative("index_put_", self="grad if accumulate else grad.index_put(indices, zeros_like(values_meta))",
           values="index(grad, indices)")


def index_put(input, indices, values, accumulate=False):
    """Out of place index_put_: a clone of `input` with `values` written (or added) at `indices`."""
    return call(get("index_put_"), (call(get("clone"), (input, None)), indices, values, accumulate))


composite("index_put", index_put)
