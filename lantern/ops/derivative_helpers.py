"""Helpers that derivative formulas call. Each is written with lantern ops, so its result is differentiable too.

>>> g = lantern.ones(2)
>>> sum_backward(g, (2, 3), 1, False).shape
lantern.Size([2, 3])
"""
import math

from ..core import dtype as dt
from ..core.reference import specialisation
from .call_by_name import call_op as _op


def _dims(dim, ndim):
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted(d % ndim for d in dims)) if ndim else ()


def unpack(value, node):
    """A saved value as backward reads it: SavedTensors are unpacked (version-checked), also inside a list (cat's
    tensors, index's indices); the rest pass through."""
    unpack_fn = getattr(value, "unpack", None)
    if unpack_fn is not None:
        return unpack_fn(node)
    if isinstance(value, (list, tuple)):
        return type(value)(v.unpack(node) if hasattr(v, "unpack") else v for v in value)
    return value


def conj(t):
    """The complex conjugate; real tensors and real numbers pass through unchanged (the common, free case)."""
    if isinstance(t, complex):
        return t.conjugate()
    if not hasattr(t, "dtype") or not t.dtype.is_complex:
        return t
    return t.real.to(t.dtype) - t.imag.to(t.dtype) * 1j


def sgn_backward(grad, self, result):
    """sgn(z) = z / |z|: for real z its gradient is zero; for complex z PyTorch's (grad - Re(grad conj(sgn)) sgn) / |z|,
    and zero where z == 0."""
    if not self.dtype.is_complex:
        return zeros_like(grad)
    magnitude = self.abs()
    nonzero = magnitude != 0
    safe = _op("where", nonzero, magnitude, 1.0)
    projected = (grad - (grad * conj(result)).real.to(grad.dtype) * result) / safe.to(grad.dtype)
    return _op("where", nonzero, projected, 0.0)


def to_copy_backward(grad, meta):
    """A dtype/device conversion's gradient, converted back; a complex gradient of a real input keeps its real
    part."""
    if grad.dtype.is_complex and not meta.dtype.is_complex:
        grad = grad.real
    return grad.to(meta.dtype).to(meta.device)


def unsqueeze_reduced(grad, sizes, dim, keepdim):
    """A reduction's gradient with the reduced dims put back (size 1), ready to broadcast over the input."""
    if keepdim or not sizes:
        return grad
    for d in _dims(dim, len(sizes)):
        grad = grad.unsqueeze(d)
    return grad


def sum_backward(grad, sizes, dim, keepdim):
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):  # full reduction: expand broadcasts grad
        return grad.expand(tuple(sizes))
    return unsqueeze_reduced(grad, sizes, dim, keepdim).expand(tuple(sizes))


def mean_backward(grad, sizes, dim, keepdim):
    count = 1
    for d in _dims(dim, len(sizes)):
        count *= sizes[d]
    return sum_backward(grad, sizes, dim, keepdim) / count


def prod_backward(grad, self, result, dim, keepdim):
    """d prod / d x_i = the product of the others: result / x_i when no x is 0, else computed directly (so it
    stays differentiable, double backward included, however many zeros a slice holds)."""
    sizes = self._size
    g = unsqueeze_reduced(grad, sizes, dim, keepdim)
    if not (self == 0).any().item():
        return g * conj(unsqueeze_reduced(result, sizes, dim, keepdim) / self)
    dims = _dims(dim, len(sizes))
    if len(dims) == 1:
        return g * conj(_prod_of_others(self, dims[0]))
    return g * conj(_prod_of_others(self.reshape(-1), 0).reshape(sizes))


def _prod_of_others(x, d):
    """For each position along dim d, the product of the other entries of its slice (x_i replaced by 1)."""
    n = x._size[d]
    rows = x.unsqueeze(d).expand(x._size[:d] + (n,) + x._size[d:])
    eye_shape = [1] * (x.dim() + 1)
    eye_shape[d] = eye_shape[d + 1] = n
    eye = _op("eye", n, None, dt.bool, None, x.device, None, False).view(eye_shape)
    return _op("where", eye, 1.0, rows).prod(d + 1)


def evenly_distribute_backward(grad, self, result, dim=None, keepdim=False):
    """amax/amin/max/min: the gradient is shared equally among the elements equal to the extreme value."""
    sizes = self._size
    r = unsqueeze_reduced(result, sizes, dim, keepdim)
    mask = (self == r).to(grad.dtype)
    dims = _dims(dim, len(sizes))
    count = mask.sum(dims, True) if dims else mask
    return unsqueeze_reduced(grad, sizes, dim, keepdim) * mask / count


def value_selecting_backward(grad, dim, indices, sizes, keepdim):
    """max/min along a dim: the gradient goes to the selected index only."""
    if not sizes:  # a 0-d input: its one element is selected
        return grad
    d = dim % len(sizes)
    g = unsqueeze_reduced(grad, sizes, d, keepdim)
    idx = unsqueeze_reduced(indices, sizes, d, keepdim)
    shape = [1] * len(sizes)
    shape[d] = sizes[d]
    positions = _op("arange", sizes[d], None, 1, dt.int64, None, idx.device, None, False).view(shape)
    return g * (positions == idx).to(grad.dtype)


def pow_backward_self(grad, self, exponent):
    """d (a ** b) / d a = b * a ** (b - 1), taken as 0 where b == 0 (PyTorch's convention)."""
    if isinstance(exponent, (int, float, complex)):
        return zeros_like(grad) if exponent == 0 else grad * conj(exponent * self.pow(exponent - 1))
    out = grad * conj(exponent * self.pow(exponent - 1))
    return _op("where", exponent == 0, 0.0, out)


def pow_backward_exponent(grad, self, exponent, result):
    """d (a ** b) / d b = result * log(a), taken as 0 where a == 0 and b >= 0 (PyTorch's convention)."""
    if not hasattr(self, "dim"):
        if self == 0:  # log(0) = -inf: -inf where b < 0 (result is inf there), 0 where b >= 0
            return _op("where", exponent >= 0, 0.0, grad * result * -math.inf)
        return grad * result * math.log(self) if self > 0 else grad * result * float("nan")
    safe = _op("where", (self == 0) & (exponent >= 0), 1, self)
    return grad * result * safe.log() * (~((self == 0) & (exponent >= 0))).to(result.dtype)


def maximum_backward(grad, self, other, pick_self):
    """maximum/minimum: the winner gets the gradient, ties split it in half."""
    win = (self > other) if pick_self else (self < other)
    tie = self == other
    return grad * (win.to(grad.dtype) + tie.to(grad.dtype) * 0.5)


def clamp_backward(grad, self, min, max):
    keep = None
    if min is not None:
        keep = self >= min
    if max is not None:
        below = self <= max
        keep = below if keep is None else keep & below
    return grad * keep.to(grad.dtype)


def clamp_bound_backward(grad, self, bound, other_bound, is_min):
    """A tensor bound's gradient: where it is the result. clamp is min(max(self, min), max), so when the bounds
    cross, max wins (PyTorch's clamp_backward_min_max)."""
    if bound is None or not hasattr(bound, "dim"):
        return None
    if is_min:
        active = self < bound
        if other_bound is not None:
            active = active & (bound < other_bound)
    else:
        active = self > bound
        if other_bound is not None:
            active = active | (bound < other_bound)
    return grad * active.to(grad.dtype)


def zeros_like(t):
    """Zeros shaped like a tensor or a saved TensorMeta."""
    size = t.size if not callable(t.size) else t._size
    return _op("zeros", size, t.dtype, None, t.device, None, False, None)


def _zeros_for(grad, meta):
    return _op("zeros", meta.size, grad.dtype, None, grad.device, None, False, None)


def select_backward(grad, meta, dim, index):
    return _zeros_for(grad, meta).select_scatter(grad, dim, index)


def slice_backward(grad, meta, dim, start, end, step):
    return _zeros_for(grad, meta).slice_scatter(grad, dim, start, end, step)


def narrow_backward(grad, meta, dim, start, length):
    return slice_backward(grad, meta, dim, *_narrow_bounds(meta, dim, start, length))


def _narrow_bounds(meta, dim, start, length):
    """narrow's (start, end, step) as a slice's: its start may be negative (counted from the end) or a 0-d tensor."""
    start = start.__index__()
    if start < 0:
        start += meta.size[dim]
    return start, start + length, 1


@specialisation(replaces="slice_backward (zeros, then slice_scatter: a second tensor and a copy of the zeros)",
                when="backward without create_graph, fast paths on; on_float_arrays(grad)",
                parity_test="tests/test_ops_specialisations.py::test_slice_backward_on_arrays",
                ops=("slice", "narrow"))
def slice_backward_on_arrays(grad, meta, dim, start, end, step):
    """The gradient written into its slice of one new zero-filled tensor (row-major, as the readable formula's).
    Python's slice clamps start and end as `slice` does (negative ones counted from the end)."""
    backend = grad._backend
    out = backend.empty(meta.size, grad.dtype)
    whole = backend.array(out)
    whole[...] = 0
    where = [slice(None)] * len(meta.size)
    where[dim] = slice(start, end, step)
    whole[tuple(where)] = backend.array(grad)
    return out


def narrow_backward_on_arrays(grad, meta, dim, start, length):
    """narrow_backward through slice_backward_on_arrays."""
    return slice_backward_on_arrays(grad, meta, dim, *_narrow_bounds(meta, dim, start, length))


def diagonal_backward(grad, meta, offset, dim1, dim2):
    return _zeros_for(grad, meta).diagonal_scatter(grad, offset, dim1, dim2)


def as_strided_backward(grad, meta, size, stride, storage_offset):
    """Scatter the gradient into zeros laid out like the input. Where the view reads one storage element at
    several positions (overlapping strides), their gradients add up there first."""
    offset = (meta.offset if storage_offset is None else storage_offset) - meta.offset
    if _overlapping(size, stride):
        return _overlapping_as_strided_backward(grad, meta, size, stride, offset)
    if offset < 0 or offset + _span(size, stride) > _span(meta.size, meta.stride):
        return _partial_view_as_strided_backward(grad, meta, size, stride, offset)
    zeros = _op("empty_strided", meta.size, meta.stride, grad.dtype, None, grad.device, None, False).zero_()
    return zeros.as_strided_scatter(grad, size, stride, offset)


def _span(size, stride):
    """How many storage elements a geometry reaches, from its first to its last (0 when it has no elements)."""
    if 0 in size:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(size, stride))


def _partial_view_as_strided_backward(grad, meta, size, stride, offset):
    """The view reads storage outside the input's own (as_strided of a slice, reaching before or after it): scatter
    the gradient into zeros spanning both geometries, then read the input's part; what lies outside gets none."""
    start = min(0, offset)
    end = max(_span(meta.size, meta.stride), offset + _span(size, stride))
    storage = _op("zeros", (end - start,), grad.dtype, None, grad.device, None, False)
    storage = storage.as_strided_scatter(grad, size, stride, offset - start)
    return storage.as_strided(meta.size, meta.stride, -start)


def _overlapping(size, stride):
    """Whether a view of these sizes and strides reaches some storage element through two positions."""
    extent = 1
    for n, s in sorted((n, s) for n, s in zip(size, stride) if n > 1):
        if s < extent:
            return True
        extent = s * (n - 1) + extent
    return False


def _overlapping_as_strided_backward(grad, meta, size, stride, offset):
    """Sum the gradient per storage element the view reads (relative to the input's offset), then read each input
    element's sum through the input's own geometry."""
    positions = _op("full", (), offset, dt.int64, None, grad.device, None, False)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        positions = positions + _op("arange", n, None, 1, dt.int64, None, grad.device, None, False).view(shape) * s
    reach = sum((n - 1) * s for n, s in zip(meta.size, meta.stride)) + 1
    span = max(reach, int(positions.max().item()) + 1 if grad.numel() else 0)
    sums = _op("zeros", (span,), grad.dtype, None, grad.device, None, False, None)
    sums = sums.index_add(0, positions.expand(tuple(size)).reshape(-1), grad.reshape(-1))
    return sums.as_strided(meta.size, meta.stride, 0).clone()


def unfold_backward(grad, meta, dimension, size, step):
    if not meta.size:  # unfolding a 0-d tensor gives its one element as a window of 1
        return grad.reshape(())
    return _op("unfold_backward", grad, meta.size, dimension, size, step)


def where_zero(cond, grad):
    """grad where cond, else 0."""
    return _op("where", cond, grad, 0.0)


def index(t, indices):
    """t[indices] for a list of index tensors (None for a dim taken whole)."""
    return _op("index.Tensor", t, indices)


def index_backward(grad, meta, indices):
    """x[indices]: the gradient is added into zeros at the indexed positions (an index repeated sums). The zeros are
    grad's new_zeros: under vmap (jacrev) they are batched as grad is, so index_put writes each example's own."""
    return grad.new_zeros(meta.size).index_put(indices, grad, True)


def cat_backward(grad, metas, dim):
    """Slices of grad along dim, one per input of cat, from the inputs' saved geometry (TensorMeta)."""
    d = dim % grad.dim()
    out, start = [], 0
    for t in metas:
        if t.size == (0,):  # legacy empty tensors take part in cat whatever the dim
            out.append(grad.new_zeros((0,)))
            continue
        out.append(grad.narrow(d, start, t.size[d]))
        start += t.size[d]
    return out


def permute_backward(grad, dims):
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[d % n] = i
    return grad.permute(inverse)


LN2 = math.log(2.0)
LN10 = math.log(10.0)
