"""Order statistics through a stable sort: median, nanmedian, mode (values and indices), quantile and nanquantile
(ranks in the sorted slice from a kernel, then a gather and a lerp, so their derivative is automatic).

>>> y = lantern.tensor([[1., 5., 3.], [2., 2., 8.]])
>>> y.median(1).indices.tolist(), y.mode(1).values.tolist()
([2, 1], [1.0, 2.0])
>>> lantern.quantile(y, 0.75, dim=1).tolist()
[4.0, 5.0]
"""
import math

import numpy as np

from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .meta_util import wrap_dim, wrap_dims
from .pointwise_common import _require_tensor
from .dispatcher import call
from .registry import composite, custom, get, structured
from .derivative import derivative, nondifferentiable
from .reduction import _check_nonempty, _into_out, _single_dim, reduced_shape, return_type
from .sorting_tie_order import has_ties, ranks, std_sort


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
            out[...] = math.nan if out.dtype.kind in "fV" else np.iinfo(out.dtype).min
        else:
            out[...] = _median_select(xp, flat, 0, ignore_nan)[0][0]
    return impl


# named median.all (not plain median): a plain op would bind Tensor.median ahead of the dim-taking frontend below
structured("median.all(Tensor self) -> Tensor", _full_median_meta("median"), _full_median_impl(False), inplace=False,
           out=False)
structured("nanmedian.all(Tensor self) -> Tensor", _full_median_meta("nanmedian"), _full_median_impl(True),
           inplace=False, out=False)


derivative("median.all", name="MedianBackward0", self="evenly_distribute_backward(grad, self, result)")
derivative("nanmedian.all", name="NanmedianBackward0", self="evenly_distribute_backward(grad, self, result)")


def _selection_dim(name, rt, select, bool_ok=False):
    """A (values, indices) reduction along one dim: select(backend, a, axis) gives both with the axis kept."""
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
            v, i = select(backend, a, dim % a.ndim)
            values._nd[...], indices._nd[...] = v.reshape(shape), i.reshape(shape)
        return rt(values, indices)

    def meta(backend, self, dim=-1, keepdim=False):
        shape = shape_of(self, dim, keepdim)
        return rt(backend.empty(shape, self.dtype), backend.empty(shape, dt.int64))
    return kernel, meta


def _mode_select(backend, a, axis):
    """The most frequent value of each slice (the smallest among equally frequent ones) and the last index
    holding it: runs of equal values in the stably sorted slice, measured by where they start and end. On the CPU
    a slice with repeated values (or NaN) takes its index from `_aten_mode` instead, as torch's CPU kernel does."""
    xp = backend.xp
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
    if backend.device.type == "cpu":
        rows = xp.moveaxis(a, axis, -1).reshape(-1, n)
        orderable = rows.astype(np.float32) if rows.dtype.kind == "V" else rows  # bfloat16: NumPy cannot order it
        redo = has_ties(xp, ranks(xp, rows), 1)
        if rows.dtype.kind in "fV":
            redo |= xp.isnan(orderable).any(axis=1)
        values, indices = values.reshape(-1), indices.reshape(-1)
        for row in xp.flatnonzero(redo).tolist():
            index = _aten_mode(orderable[row].tolist())
            values[row], indices[row] = rows[row, index], index
        values, indices = values.reshape(ordered.shape[:-1] + (1,)), indices.reshape(ordered.shape[:-1] + (1,))
    return xp.moveaxis(values, -1, axis), xp.moveaxis(indices, -1, axis)


def _aten_mode(row):
    """The index of one slice's mode as torch's CPU kernel finds it: std::sort of the (value, index) pairs by
    `value <` (NaN compares false both ways, as in C++), then the first of the longest runs of values that do not
    compare unequal to their successor, reported with the index the run ends at."""
    order = std_sort(row)
    best, best_count, count = order[0], 0, 0
    for position, index in enumerate(order):
        count += 1
        if position == len(order) - 1 or row[index] != row[order[position + 1]]:
            if count > best_count:
                best, best_count = index, count
            count = 0
    return best


custom("median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
       *_selection_dim("median", median_rt, lambda backend, a, axis: _median_select(backend.xp, a, axis, False)))
custom("nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
       *_selection_dim("nanmedian", nanmedian_rt,
                       lambda backend, a, axis: _median_select(backend.xp, a, axis, True)))
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


for _name, _node in (("median.dim", "MedianBackward1"), ("nanmedian.dim", "NanmedianBackward1"),
                     ("mode", "ModeBackward0")):
    derivative(_name, name=_node, self="value_selecting_backward(grad, dim, indices, self_meta.size, keepdim)")


# ---- quantile / nanquantile: ranks in the sorted slice (a kernel), then a gather and a lerp (differentiable) ----
# The rank of quantile q is q * scale, scale = n - 1 (nanquantile: the count of non-nan values - 1), except in a
# slice that pins it (quantile: one holding nan, at n - 1; nanquantile: all nan, at 0). The frontend forms the
# linear weight from q itself, as torch does, so that q gets its gradient: (above - below) * scale, 0 where pinned.

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
    """For each slice and quantile: (index below, index above, scale of the rank, whether it is pinned), indices
    being positions along the slice (`input` flattened, or with `dim` moved last); shaped (other dims..., len(q)), or (other
    dims...) for a 0-dim q."""
    name = "nanquantile" if ignore_nan else "quantile"
    _quantile_ranks_check(name, input, q, dim, interpolation)
    xp, a, qa = backend.xp, backend.array(input), backend.array(q)
    if (qa < 0).any() or (qa > 1).any():
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    a = a.reshape(-1) if dim is None or a.ndim == 0 else xp.moveaxis(a, dim % a.ndim, -1)
    order = xp.argsort(a, axis=-1, kind="stable")
    n, valid = a.shape[-1], _nan_count(xp, xp.take_along_axis(a, order, axis=-1), a.ndim - 1)
    qa = qa.reshape((1,) * (a.ndim - 1) + (qa.size,))
    scale = (valid - 1 if ignore_nan else xp.full_like(valid, n - 1)).astype(a.dtype)
    ranks = qa * scale
    if ignore_nan:
        pinned = ranks < 0  # an all-nan slice: rank 0
        ranks = xp.where(pinned, a.dtype.type(0), ranks)
    else:
        pinned = xp.broadcast_to(valid < n, ranks.shape)  # a slice holding nan: rank n - 1, where nan sorts
        ranks = xp.where(pinned, scale, ranks)
    ranks = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.round}.get(interpolation, lambda r: r)(ranks)
    below, above = xp.floor(ranks).astype(np.int64), xp.ceil(ranks).astype(np.int64)
    results = []
    for arr, dtype in ((xp.take_along_axis(order, below, -1), dt.int64),
                       (xp.take_along_axis(order, above, -1), dt.int64),
                       (xp.broadcast_to(scale, ranks.shape), input.dtype), (pinned, dt.bool)):
        arr = arr if q.dim() else arr[..., 0]
        t = backend.empty(arr.shape, dtype)
        t._nd[...] = arr
        results.append(t)
    return tuple(results)


def _quantile_ranks_meta(backend, input, q, dim, interpolation, ignore_nan):
    _quantile_ranks_check("nanquantile" if ignore_nan else "quantile", input, q, dim, interpolation)
    others = () if dim is None or input.dim() == 0 else reduced_shape(input._size, (dim % input.dim(),), False)
    shape = others + q._size
    return (backend.empty(shape, dt.int64), backend.empty(shape, dt.int64), backend.empty(shape, input.dtype),
            backend.empty(shape, dt.bool))


custom("_quantile_ranks(Tensor input, Tensor q, int? dim, str interpolation, bool ignore_nan) -> (Tensor, Tensor, "
       "Tensor, Tensor)", _quantile_ranks, _quantile_ranks_meta)


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
        below, above, scale, pinned = call(get("_quantile_ranks"), (input, q, dim, interpolation, ignore_nan))
        flat = dim is None or input.dim() == 0
        x = input.reshape(-1) if flat else input.movedim(dim, -1)
        result = _gather_last(x, below)
        if interpolation in ("linear", "midpoint"):
            rank = call(get("where"), (pinned, 0.0 if ignore_nan else scale, q * scale))
            weight = rank - rank.floor() if interpolation == "linear" else 0.5
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


nondifferentiable("_quantile_ranks")
