"""Sorting and searching: sort, argsort, msort, topk, kthvalue, searchsorted, bucketize, unique,
unique_consecutive.

NaN sorts as the largest value, as in PyTorch. `stable=True` keeps equal values in index order (NumPy's
kind="stable"); otherwise equal values come out where PyTorch's CPU kernels leave them: sort runs std::sort (a
radix sort, which is stable, for a long 1-D integer input sorted ascending), topk std::partial_sort or
std::nth_element, kthvalue ATen's quick-select; sorting_tie_order replays those algorithms on the slices that hold
ties. The gradient of sort, topk and kthvalue goes back to the selected positions.

>>> values, indices = lantern.tensor([[3.0, 1.0, 2.0]]).sort(descending=True)
>>> values.tolist(), indices.tolist()
([[3.0, 2.0, 1.0]], [[0, 2, 1]])
>>> lantern.searchsorted(lantern.tensor([1, 3, 5]), lantern.tensor([0, 3, 6]), right=True).tolist()
[0, 2, 3]
>>> lantern.unique(lantern.tensor([2, 1, 2, 2]), return_counts=True)
(tensor([1, 2]), tensor([1, 3]))
"""
import math

from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .factory import like_strides
from .meta_util import FULL, PARTIAL, iterator_strides, overlap_status, shape_str, wrap_dim
from .reduction import out_return_type, reduced_shape, return_type, with_out as _with_out
from .registry import composite, custom, get, structured
from .derivative import derivative, nondifferentiable
from .sorting_tie_order import aten_quick_select, has_ties, ranks, std_nth_element, std_partial_sort, std_sort

sort_rt = return_type("sort", ["values", "indices"])
topk_rt = return_type("topk", ["values", "indices"])
kthvalue_rt = return_type("kthvalue", ["values", "indices"])


def _no_complex(name, t):
    if t.dtype.is_complex:
        raise RuntimeError(f"{name}(): does not support complex input (sort the real part or the absolute value "
                           "instead)")


def _like_input(backend, self, shape, dtype):
    """A new output laid out in self's memory order, as ATen's sort and topk allocate theirs."""
    return backend.empty_strided(shape, iterator_strides(shape, [(self._size, self._stride)]), dtype)


def _sorted_order(xp, a, d, descending):
    """Indices that sort `a` along axis d, stably; descending keeps equal values in their original order and puts
    NaN first (the reverse of the ascending order of the reversed array)."""
    if not descending:
        return xp.argsort(a, axis=d, kind="stable")
    n = a.shape[d]
    reverse = [slice(None)] * a.ndim
    reverse[d] = slice(None, None, -1)
    reverse = tuple(reverse)
    return (n - 1) - xp.argsort(a[reverse], axis=d, kind="stable")[reverse]


RADIX_SORT_MIN_NUMEL = 32768  # ATen's GRAIN_SIZE: from this length a 1-D integer sort goes to fbgemm's radix sort


def _with_torch_ties(backend, a, d, order, descending, arrange, every_slice=False):
    """`order` (indices along d from a stable sort, or the first of them) with each slice of `a` that holds equal
    values (every slice, with `every_slice`) replaced by `arrange(keys)`, the indices PyTorch's CPU kernel leaves
    there. Other devices keep the stable order."""
    if backend.device.type != "cpu" or a.shape[d] < 2 or order.shape[d] == 0:
        return order
    xp = backend.xp
    keys = xp.moveaxis(ranks(xp, a, descending), d, -1).reshape(-1, a.shape[d])  # one slice a row
    moved = xp.moveaxis(order, d, -1)
    rows = moved.reshape(-1, moved.shape[-1]).copy()
    redo = xp.ones(len(rows), bool) if every_slice else has_ties(xp, keys, 1)
    for row in xp.flatnonzero(redo).tolist():
        rows[row] = xp.asarray(arrange(keys[row].tolist()))
    return xp.moveaxis(rows.reshape(moved.shape), -1, d)


def _uses_radix_sort(a, descending):
    """ATen's can_use_radix_sort: a long 1-D integer (not bool) input sorted ascending goes to a stable radix
    sort."""
    return a.ndim == 1 and not descending and a.dtype.kind in "iu" and a.size >= RADIX_SORT_MIN_NUMEL


def _write_pair(backend, self, values, indices, value_array, index_array):
    if backend.xp is not None:
        backend.array(values)[...] = value_array
        backend.array(indices)[...] = index_array


def _sort(backend, self, dim=-1, descending=False, stable=False):
    d = wrap_dim(dim, self.dim())
    _no_complex("sort", self)
    strides = like_strides(self, None)  # empty_like(self): a dense (or empty) input's strides are kept
    values = backend.empty_strided(self._size, strides, self.dtype)
    indices = backend.empty_strided(self._size, strides, dt.int64)
    if backend.xp is not None:
        a = backend.array(self)
        if a.ndim == 0:
            _write_pair(backend, self, values, indices, a, 0)
        else:
            order = _sorted_order(backend.xp, a, d, descending)
            if not stable and not _uses_radix_sort(a, descending):
                order = _with_torch_ties(backend, a, d, order, descending, std_sort)
            _write_pair(backend, self, values, indices, backend.xp.take_along_axis(a, order, d), order)
    return sort_rt(values, indices)


custom("sort(Tensor self, int dim=-1, bool descending=False, *, bool stable=False) -> (Tensor values, Tensor indices)",
       _sort, _sort)


def sort(input, dim=-1, descending=False, *, stable=False, out=None):
    """(values, indices) of input sorted along dim; out=(values, indices) writes them there."""
    return _with_out("sort", input, lambda: call(get("sort"), (input, dim, descending, stable)), out)


def _refuse_out_overlap(input, out):
    """topk and kthvalue refuse out= tensors sharing memory with input, as ATen's assert_no_overlap does."""
    for target in out or ():
        if overlap_status(input, target) in (FULL, PARTIAL):
            raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                               "refer to a single memory location. Please clone() the tensor before performing the "
                               "operation.")


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The k largest (or smallest) values along dim and their indices."""
    _refuse_out_overlap(input, out)
    return _with_out("topk", input, lambda: call(get("topk"), (input, k, dim, largest, sorted)), out)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The k-th smallest value along dim (k counts from 1) and its index."""
    _refuse_out_overlap(input, out)
    return _with_out("kthvalue", input, lambda: call(get("kthvalue"), (input, k, dim, keepdim)), out)


for _fn in (sort, topk, kthvalue):
    composite(_fn.__name__, _fn, method=False)  # the functional forms, with out=; methods come from the schemas


def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort input along dim (sort's second output)."""
    return call(get("sort"), (input, dim, descending, stable))[1]


def msort(input, *, out=None):
    """input sorted along its first dim."""
    return _with_out("msort", input, lambda: call(get("sort"), (input, 0, False, False))[0], out)


composite("argsort", argsort)
composite("msort", msort)


# ---- topk, kthvalue: a few of the sorted values ------------------------------------------------------------

def _topk_shape(self, k, dim):
    d = wrap_dim(dim, self.dim())
    _no_complex("topk", self)
    if self.dtype is dt.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU (topk: convert with .to(lantern.uint8) first, "
                           "or use sort)")
    n = self._size[d] if self.dim() else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"selected index k out of range (topk: k={k} for a dim of size {n} in a tensor of shape "
                           f"{shape_str(self._size)})")
    return d, (self._size[:d] + (k,) + self._size[d + 1:]) if self.dim() else ()


def _topk(backend, self, k, dim=-1, largest=True, sorted=True):
    d, shape = _topk_shape(self, k, dim)
    values = _like_input(backend, self, shape, self.dtype)
    indices = _like_input(backend, self, shape, dt.int64)
    if backend.xp is not None:
        a = backend.array(self)
        if a.ndim == 0:
            _write_pair(backend, self, values, indices, a, 0)
        else:
            order = backend.xp.take(_sorted_order(backend.xp, a, d, largest), range(k), axis=d)
            order = _with_torch_ties(backend, a, d, order, largest, _topk_arrangement(k, a.shape[d], sorted),
                                     every_slice=not sorted)
            _write_pair(backend, self, values, indices, backend.xp.take_along_axis(a, order, d), order)
    return topk_rt(values, indices)


def _topk_arrangement(k, n, sorted):
    """The k indices ATen's topk picks from a slice's keys: std::partial_sort where k is small next to the slice
    (k * 64 <= n), else std::nth_element on the k-th, with the k - 1 before it then std::sort-ed if `sorted`."""
    if k * 64 <= n:
        return lambda keys: std_partial_sort(keys, k)
    return lambda keys: std_nth_element(keys, k - 1, sort_before_nth=sorted)[:k]


custom("topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
       _topk, _topk)


def _kthvalue(backend, self, k, dim=-1, keepdim=False):
    d = wrap_dim(dim, self.dim())
    _no_complex("kthvalue", self)
    n = self._size[d] if self.dim() else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k={k}, size {n}; k counts "
                         "from 1)")
    shape = reduced_shape(self._size, (d,), keepdim)
    values, indices = backend.empty(shape, self.dtype), backend.empty(shape, dt.int64)
    if backend.xp is not None:
        xp = backend.xp
        a = backend.array(self)
        if a.ndim == 0:
            _write_pair(backend, self, values, indices, a, 0)
        else:
            order = xp.take(_sorted_order(xp, a, d, False), [k - 1], axis=d)
            order = _with_torch_ties(backend, a, d, order, False, lambda keys: [aten_quick_select(keys, k - 1)])
            picked = xp.take_along_axis(a, order, d)
            if not keepdim:
                order, picked = order.squeeze(d), picked.squeeze(d)
            _write_pair(backend, self, values, indices, picked, order)
    return kthvalue_rt(values, indices)


custom("kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", _kthvalue,
       _kthvalue)


# ---- searchsorted, bucketize ------------------------------------------------------------------------------

def _side(right, side):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        return side
    return "right" if right else "left"


def _check_boundaries(sorted_sequence, self, sorter):
    size = self._size if isinstance(self, TensorImpl) else ()
    seq = sorted_sequence._size
    if len(seq) > 1 and (len(seq) != len(size) or seq[:-1] != size[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                           f"of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{shape_str(seq)} and input value tensor {shape_str(size)}")
    if sorter is not None:
        if sorter.dtype is not dt.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but it got "
                               f"{sorter.dtype.legacy}")
        if sorter._size != seq:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {shape_str(seq)}and got sorter tensor {shape_str(sorter._size)}")


def _searchsorted_meta(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    _side(right, side)
    if sorted_sequence.dim() == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    _check_boundaries(sorted_sequence, self, sorter)
    return self._size if isinstance(self, TensorImpl) else (), dt.int32 if out_int32 else dt.int64


def _positions(xp, boundaries, values, side):
    """For each value, how many boundaries (of its row) lie before it: NumPy's searchsorted for 1-D boundaries,
    else a broadcast comparison over each row (vectorised over the batch)."""
    if boundaries.ndim == 1:
        return xp.searchsorted(boundaries, values, side=side)
    values = values[..., None]
    before = boundaries[..., None, :] <= values if side == "right" else boundaries[..., None, :] < values
    return before.sum(-1)


def _searchsorted_impl(xp, out, dtype, sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    if sorter is not None:
        sorted_sequence = xp.take_along_axis(sorted_sequence, sorter, -1)
    out[...] = _positions(xp, sorted_sequence, xp.asarray(self), _side(right, side))


structured("searchsorted(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, "
           "str? side=None, Tensor? sorter=None) -> Tensor", _searchsorted_meta, _searchsorted_impl, inplace=False,
           exact_out_dtype=True)


def _bucketize_meta(self, boundaries, out_int32=False, right=False):
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()}) (bucketize: use "
                           "searchsorted for a batch of boundaries)")
    return self._size if isinstance(self, TensorImpl) else (), dt.int32 if out_int32 else dt.int64


def _bucketize_impl(xp, out, dtype, self, boundaries, out_int32=False, right=False):
    out[...] = xp.searchsorted(boundaries, xp.asarray(self), side="right" if right else "left")


structured("bucketize(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor",
           _bucketize_meta, _bucketize_impl, inplace=False, exact_out_dtype=True, method=False)


# ---- unique, unique_consecutive ---------------------------------------------------------------------------

def _data_dependent(name, self):
    raise NotImplementedError(f"{name}: the result's size depends on the values of the input (shape "
                              f"{shape_str(self._size)}), which a meta tensor does not have.")


def _check_slices_not_empty(self, d):
    """unique over slices along d needs slices with elements, unless d itself is the empty dim (ATen's rule)."""
    if 0 in self._size and self._size[d] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied "
                           f"(unique along dim {d} of a tensor of shape {shape_str(self._size)})")


def _dim_first_strides(shape, d):
    """Contiguous strides for `shape` with dim d moved to the front: the layout ATen's unique(dim=d) returns."""
    order = [d] + [k for k in range(len(shape)) if k != d]
    strides, step = [0] * len(shape), 1
    for k in reversed(order):
        strides[k] = step
        step *= shape[k]
    return tuple(strides)


def _three(backend, self, values, inverse, counts, dim=None):
    """(values, inverse, counts) as new tensors: values of self's dtype (dim first in memory when unique works
    on slices along dim and there are some), the others int64."""
    shape = tuple(values.shape)
    out = [backend.empty(shape, self.dtype) if dim is None or 0 in shape else
           backend.empty_strided(shape, _dim_first_strides(shape, dim), self.dtype)]
    out += [backend.empty(tuple(a.shape), dt.int64) for a in (inverse, counts)]
    for t, array in zip(out, (values, inverse, counts)):
        backend.array(t)[...] = array
    return tuple(out)


def _unique2(backend, self, sorted=True, return_inverse=False, return_counts=False):
    if backend.xp is None:
        _data_dependent("unique", self)
    a = backend.array(self)
    values, inverse, counts = backend.xp.unique(a.reshape(-1), return_inverse=True, return_counts=True,
                                                equal_nan=False)
    return _three(backend, self, values, inverse.reshape(a.shape), counts)


def _unique_dim(backend, self, dim, sorted=True, return_inverse=False, return_counts=False):
    d = wrap_dim(dim, self.dim())
    _check_slices_not_empty(self, d)
    if backend.xp is None:
        _data_dependent("unique", self)
    a = backend.array(self)
    if a.shape[d] == 0:
        nothing = backend.xp.zeros(0, dtype=backend.xp.int64)
        return _three(backend, self, a, nothing, nothing, d)
    values, inverse, counts = backend.xp.unique(a, axis=d, return_inverse=True, return_counts=True,
                                                equal_nan=False)
    return _three(backend, self, values, inverse.reshape(-1), counts, d)


custom("_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> "
       "(Tensor, Tensor, Tensor)", _unique2, _unique2)
custom("unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> "
       "(Tensor, Tensor, Tensor)", _unique_dim, _unique_dim, method=False)


def _chosen(outputs, return_inverse, return_counts):
    """PyTorch's unique returns the values alone, or a tuple with the inverse and/or the counts."""
    values, inverse, counts = outputs
    extra = [t for t, wanted in ((inverse, return_inverse), (counts, return_counts)) if wanted]
    return (values, *extra) if extra else values


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of input (sorted), or its distinct slices along dim; optionally where each element went
    (inverse) and how many times each value occurs (counts)."""
    if dim is None:
        outputs = call(get("_unique2"), (input, sorted, return_inverse, return_counts))
    else:
        outputs = call(get("unique_dim"), (input, dim, sorted, return_inverse, return_counts))
    return _chosen(outputs, return_inverse, return_counts)


def _unique_consecutive(backend, self, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        d = wrap_dim(dim, self.dim())
        _check_slices_not_empty(self, d)
    if backend.xp is None:
        _data_dependent("unique_consecutive", self)
    xp = backend.xp
    a = backend.array(self)
    # explicit sizes, not -1: NumPy cannot infer a dim of a reshape to zero rows
    rows = (a.reshape(a.size, 1) if dim is None else
            xp.moveaxis(a, d, 0).reshape(a.shape[d], math.prod(a.shape[:d] + a.shape[d + 1:])))
    n = rows.shape[0]
    starts = xp.ones(n, dtype=bool)
    if n > 1:
        starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    inverse = xp.cumsum(starts) - 1
    counts = xp.diff(xp.append(xp.flatnonzero(starts), n))
    if dim is None:
        return _three(backend, self, a.reshape(-1)[starts], inverse.reshape(a.shape), counts)
    return _three(backend, self, xp.compress(starts, a, axis=d), inverse, counts, d)


custom("unique_consecutive.default(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) "
       "-> (Tensor, Tensor, Tensor)", _unique_consecutive, _unique_consecutive)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal consecutive values (or slices along dim) into one (itertools.groupby's rule)."""
    outputs = call(get("unique_consecutive.default"), (input, return_inverse, return_counts, dim))
    return _chosen(outputs, return_inverse, return_counts)


composite("unique", unique)
composite("unique_consecutive", unique_consecutive)


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

def sort_backward(grad, dim, indices, sizes):
    """sort/topk: each output's gradient goes back to the position it was taken from."""
    if not sizes:
        return grad
    zeros = call(get("zeros"), (tuple(sizes), grad.dtype, None, grad.device, None, False, None))
    return zeros.scatter(dim, indices, grad)


derivative("sort", self="sort_backward(grad, dim, indices, self_meta.size)",
           name=lambda args: "SortBackward1" if args[3] else "SortBackward0", helpers={"sort_backward": sort_backward})
derivative("topk", self="sort_backward(grad, dim, indices, self_meta.size)", helpers={"sort_backward": sort_backward})
derivative("kthvalue", self="value_selecting_backward(grad, dim, indices, self_meta.size, keepdim)")
nondifferentiable("searchsorted", "bucketize", "_unique2", "unique_dim", "unique_consecutive.default")
