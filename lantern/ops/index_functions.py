"""Index arithmetic and counting, written with other ops: tril_indices/triu_indices, unravel_index, combinations,
put/put_, index_reduce/index_reduce_, scalar_tensor, histogram and histogramdd.

>>> lantern.tril_indices(2, 2).tolist(), lantern.unravel_index(lantern.tensor(5), (2, 4))
([[0, 1, 1], [0, 0, 1]], (tensor(1), tensor(1)))
"""
import builtins
import math

from ..core import dtype as dt
from ..core.determinism import alert_not_deterministic
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .factory import C_TYPE_NAMES, not_implemented_for
from .linalg_common import _into
from .reduction import out_return_type, return_type
from .registry import COMPOSITES, composite, get
from ..core import user_warnings


def _full(size, value, dtype, device=None):
    return call(get("full"), (tuple(size), value, dtype, None, device, None, False))


# ---- scalar_tensor ----------------------------------------------------------------------------------------------

def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    """A 0-d tensor holding s, in the default float dtype unless dtype says otherwise.

    >>> lantern.scalar_tensor(3)
    tensor(3.)
    """
    dtype = dtype or dt.get_default_dtype()
    if isinstance(s, complex) and not dtype.is_complex:
        raise RuntimeError(f"value cannot be converted to type {C_TYPE_NAMES[dtype]} without overflow")
    t = _full((), s, dtype, device)
    return t.requires_grad_() if requires_grad else t


composite("scalar_tensor", scalar_tensor, method=False)


# ---- tril_indices, triu_indices ---------------------------------------------------------------------------------

def _triangle_indices(name, keep):
    def indices(row, col, offset=0, *, dtype=dt.int64, layout=None, device=None, pin_memory=None):
        if dtype not in (dt.int32, dt.int64):
            raise not_implemented_for(name, dtype)
        mask = keep(_full((row, col), True, dt.bool, device), offset)
        found = COMPOSITES["nonzero"](mask)
        if found._size[0] == 0:
            return _full((2, 0), 0, dtype, device)
        return found.t().to(dtype).contiguous()
    indices.__name__ = name
    indices.__doc__ = (f"The (row, column) indices of the {'lower' if name == 'tril_indices' else 'upper'} "
                       "triangle of a row x col matrix (diagonals from offset), as a 2 x N tensor.")
    return indices


tril_indices = composite("tril_indices", _triangle_indices("tril_indices", lambda m, k: m.tril(k)), method=False)
triu_indices = composite("triu_indices", _triangle_indices("triu_indices", lambda m, k: m.triu(k)), method=False)


# ---- unravel_index ----------------------------------------------------------------------------------------------

def unravel_index(indices, shape):
    """The coordinates in a tensor of `shape` of each flat (row-major) index: one tensor per dim.

    >>> [t.tolist() for t in lantern.unravel_index(lantern.tensor([5, 7]), (2, 4))]
    [[1, 1], [1, 3]]
    """
    if not isinstance(indices, TensorImpl):
        raise TypeError(f"expected 'indices' to be a tensor, but got {type(indices).__name__}")
    if indices.dtype.category != dt.INTEGRAL:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not shape:
        return ()
    if any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    total = math.prod(shape)
    if bool(((indices < -total) | (indices >= total)).any()):
        raise RuntimeError(f"'indices' must be in range [-{total}, {total - 1}] for shape {shape}")
    flat = indices.to(dt.int64).remainder(total) if total else indices.to(dt.int64)
    coords = []
    for n in reversed(shape):
        coords.append(flat.remainder(n))
        flat = flat.div(n, rounding_mode="floor")
    return call(get("stack"), (coords[::-1], -1)).unbind(-1)


composite("unravel_index", unravel_index, method=False)


# ---- combinations -----------------------------------------------------------------------------------------------

def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-d tensor's elements, one per row, in itertools.combinations' order: the
    index tuples of an r-dimensional grid whose indices increase (or, with replacement, do not decrease).

    >>> lantern.combinations(lantern.tensor([1, 2, 3])).tolist()
    [[1, 2], [1, 3], [2, 3]]
    """
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input._size)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    n = input._size[0]
    grids = COMPOSITES["meshgrid"](*[call(get("arange"), (n, None, 1, dt.int64, None, input.device, None, False))] * r,
                                   indexing="ij")
    # the mask depends on n only: made with ones (not input.new_ones, batched under vmap, where a batched bool
    # mask index refuses as torch's does)
    keep = call(get("ones"), ((n,) * r, dt.bool, None, input.device, None, False, None))
    for earlier, later in zip(grids, grids[1:]):  # increasing indices (non-decreasing with replacement)
        keep = keep & ((earlier <= later) if with_replacement else (earlier < later))
    index = call(get("stack"), ([g[keep] for g in grids], 1))
    return input.index_select(0, index.reshape(-1)).reshape(-1, r)


composite("combinations", combinations, method=False)


# ---- put, index_reduce ------------------------------------------------------------------------------------------

def _put_checks(self, index, source):
    if index.dtype is not dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {index.dtype.legacy}")
    if self.dtype is not source.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{self.dtype.legacy} and source.dtype = {source.dtype.legacy}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = self.numel()
    bad = (index < -n) | (index >= n)
    if bool(bad.any()):
        raise IndexError(f"out of range: tried to access index {int(index[bad].reshape(-1)[0].item())} on a tensor "
                         f"of {n} elements.")


def put_(self, index, source, accumulate=False):
    """Write source's elements at the flat (row-major) positions index of self (adding them with accumulate).

    >>> lantern.zeros(2, 2).put_(lantern.tensor([3]), lantern.tensor([1.0])).tolist()
    [[0.0, 0.0], [0.0, 1.0]]
    """
    _put_checks(self, index, source)
    if not accumulate:
        alert_not_deterministic("put_")  # which of several writes to one position wins is unspecified in torch
    if index.numel() == 0:
        return self
    if self.dim() == 0:
        coords = ()
    else:
        coords = unravel_index(index.reshape(-1), self._size)
    return self.index_put_(coords, source.reshape(-1), accumulate) if coords else \
        self.copy_(self + source.reshape(()) if accumulate else source.reshape(()))


def put(input, index, source, accumulate=False):
    """put_ on a copy of input."""
    return put_(input.clone(), index, source, accumulate)


composite("put_", put_)
composite("put", put)


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_reduce_args(self, dim, index, source, reduce):
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    user_warnings.warn("index_reduce() is in beta and the API may change at any time.")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (dt.int32, dt.int64):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    if self.dtype is not source.dtype:
        raise RuntimeError("index_reduce_(): self and source must have the same scalar type")
    d = dim % max(self.dim(), 1)
    shape = tuple(n if i != d else index.numel() for i, n in enumerate(source._size)) if source.dim() else ()
    expanded = index.reshape(tuple(-1 if i == d else 1 for i in range(source.dim()))).expand(shape) \
        if source.dim() else index.reshape(())
    return d, expanded.to(dt.int64)


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """input with source's slices along dim reduced (prod, mean, amax, amin) into the slices index names.

    >>> lantern.ones(2).index_reduce(0, lantern.tensor([0, 0]), lantern.tensor([2.0, 3.0]), "prod").tolist()
    [6.0, 1.0]
    """
    d, expanded = _index_reduce_args(input, dim, index, source, reduce)
    result = input.scatter_reduce(d, expanded, source, reduce, include_self=include_self)
    return _into(out, result, "index_reduce")


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    d, expanded = _index_reduce_args(self, dim, index, source, reduce)
    return self.scatter_reduce_(d, expanded, source, reduce, include_self=include_self)


composite("index_reduce", index_reduce)
composite("index_reduce_", index_reduce_)


# ---- histogram, histogramdd -------------------------------------------------------------------------------------

histogram_rt = return_type("histogram", ["hist", "bin_edges"])
histogram_out_rt = out_return_type(histogram_rt)
histogramdd_rt = return_type("histogramdd", ["hist", "bin_edges"])


def _edges(values, bins, bounds, name):
    """The bin edges along one coordinate: the given tensor itself (histogramdd returns it, as PyTorch's does), or
    bins + 1 evenly spaced over the range (the data's own minimum and maximum by default, [0, 1] for no data; an
    empty range becomes [min - 0.5, max + 0.5])."""
    if isinstance(bins, TensorImpl):
        return bins
    if bins <= 0:
        raise RuntimeError(f"{name}(): bins must be > 0, but got {bins} for dimension 0")
    if bounds is None:
        low, high = (values.min().item(), values.max().item()) if values.numel() else (0.0, 1.0)
    else:
        low, high = bounds
    if low > high:
        raise RuntimeError(f"{name}(): max must be larger than min, but got min {low} max {high}")
    if low == high:
        low, high = low - 0.5, high + 0.5
    return call(get("linspace"), (low, high, bins + 1, values.dtype, None, values.device, None, False))


def _upper_bound(edges, values):
    """For each value, the position std::upper_bound finds in edges (the first edge above it), by the binary search
    PyTorch's histogram kernel runs: the same probes, so that edges given out of order bin as they do there."""
    n = edges._size[0]
    start = values.new_zeros(values._size, dtype=dt.int64)
    end = start + n
    for _ in builtins.range(n.bit_length()):  # each probe halves the range at least: at most this many
        middle = (start + end) // 2
        active = start < end
        above = active & (edges[middle.clamp(max=n - 1)] <= values)
        start = call(get("where"), (above, middle + 1, start))
        end = call(get("where"), (active & ~above, middle, end))
    return start


def _bin_of(values, edges):
    """Each value's bin (the last bin includes its right edge) and whether it is binned at all: only values between
    the first and the last edge are (NaNs never), as in PyTorch."""
    last = edges._size[0] - 2
    position = _upper_bound(edges, values) - 1
    position = call(get("where"), (position == last + 1, last, position))
    return position.clamp(0, max(last, 0)), (values >= edges[0]) & (values <= edges[-1])


def _float_check(input, name):
    if input.dtype.category != dt.FLOATING:
        raise not_implemented_for(name, input.dtype)


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """The D-dimensional histogram of the points in input's last dim: counts (or summed weights) per bin, and each
    coordinate's bin edges.

    >>> lantern.histogramdd(lantern.tensor([[0.0, 0.0], [1.0, 1.0]]), bins=[2, 2]).hist.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    _float_check(input, "histogramdd")
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                           f"have the same dtype, but got input({C_TYPE_NAMES[input.dtype]}), and "
                           f"weight({C_TYPE_NAMES[weight.dtype]})")
    points = input.reshape(-1, input._size[-1])
    n_dims = points._size[1]
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * n_dims
    if len(per_dim) != n_dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    bounds = [None] * n_dims if range is None else [tuple(range[2 * i:2 * i + 2]) for i in builtins.range(n_dims)]
    edges = [_edges(points[:, i], per_dim[i], bounds[i], "histogramdd") for i in builtins.range(n_dims)]
    shape = tuple(e._size[0] - 1 for e in edges)
    flat = points.new_zeros((points._size[0],), dtype=dt.int64)
    inside = points.new_ones((points._size[0],), dtype=dt.bool)
    for i, e in enumerate(edges):
        position, valid = _bin_of(points[:, i], e)
        flat, inside = flat * shape[i] + position, inside & valid
    counts = weight.reshape(-1) if weight is not None else points.new_ones((points._size[0],))
    counts = call(get("where"), (inside, counts, 0)).to(input.dtype)
    hist = input.new_zeros((math.prod(shape),)).index_add(0, flat, counts).reshape(shape)
    if density:
        volume = None
        for i, e in enumerate(edges):
            width = e.diff().reshape(tuple(-1 if j == i else 1 for j in builtins.range(n_dims)))
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return histogramdd_rt(hist, tuple(edges))


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """The histogram of input's values: counts (or summed weights, or a density) per bin, and the bin edges.

    >>> lantern.histogram(lantern.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0)).hist.tolist()
    [0.0, 2.0, 1.0, 0.0]
    """
    _float_check(input, "histogram_cpu")
    hist, (edges,) = histogramdd(input.reshape(-1, 1), [bins], range=range, weight=weight, density=density)
    if edges is bins:
        edges = edges.clone()  # histogram, unlike histogramdd, returns new edges
    if out is None:
        return histogram_rt(hist, edges)
    return histogram_out_rt(_into(out[0], hist, "histogram"), _into(out[1], edges, "histogram"))


composite("histogramdd", histogramdd, method=False)
composite("histogram", histogram)
