"""Helpers that derivative formulas call. Each is written with lantern ops, so its result is differentiable too.

>>> g = lantern.ones(2)
>>> sum_backward(g, (2, 3), 1, False).shape
lantern.Size([2, 3])
"""
import math

from ..core import dtype as dt
from .dispatcher import call
from .registry import get


def _op(name, *args):
    return call(get(name), args)


def _dims(dim, ndim):
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted(d % ndim for d in dims)) if ndim else ()


def unpack(value, node):
    """A saved value as backward reads it: SavedTensors are unpacked (version-checked), the rest pass through."""
    unpack_fn = getattr(value, "unpack", None)
    if unpack_fn is not None:
        return unpack_fn(node)
    if isinstance(value, (list, tuple)) and value and hasattr(value[0], "unpack"):
        return type(value)(v.unpack(node) for v in value)
    return value


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
    """d prod / d x_i = product of the others, computed without dividing by zero (one zero: only it gets grad)."""
    sizes = self._size
    g = unsqueeze_reduced(grad, sizes, dim, keepdim)
    r = unsqueeze_reduced(result, sizes, dim, keepdim)
    zero = self == 0
    if not zero.any().item():
        return g * r / self
    dims = _dims(dim, len(sizes))
    one = _op("where", zero, 1, self)
    prod_others = one.prod(dims[0], True) if len(dims) == 1 else one.prod()
    zeros_in_slice = zero.sum(dims[0], True) if len(dims) == 1 else zero.sum()
    at_zero = (zeros_in_slice == 1).to(self.dtype) * prod_others
    return g * _op("where", zero, at_zero, r / one)


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
    d = dim % len(sizes) if sizes else 0
    g = unsqueeze_reduced(grad, sizes, d, keepdim)
    idx = unsqueeze_reduced(indices, sizes, d, keepdim)
    shape = [1] * len(sizes)
    shape[d] = sizes[d]
    positions = _op("arange", sizes[d], None, 1, dt.int64, None, idx.device, None, False).view(shape)
    return g * (positions == idx).to(grad.dtype)


def pow_backward_self(grad, self, exponent):
    if isinstance(exponent, (int, float)) and exponent == 0:
        return grad * 0
    return grad * exponent * self.pow(exponent - 1)


def pow_backward_exponent(grad, self, exponent, result):
    """d (a ** b) / d b = result * log(a), taken as 0 where a == 0 and b >= 0 (PyTorch's convention)."""
    if not hasattr(self, "dim"):
        return grad * result * math.log(self) if self > 0 else grad * result * float("nan") if self < 0 \
            else grad * 0
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
    if bound is None or not hasattr(bound, "dim"):
        return None
    active = (self < bound) if is_min else (self > bound)
    if other_bound is not None:
        active = active & ((bound <= other_bound) if is_min else (bound >= other_bound))
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


def diagonal_backward(grad, meta, offset, dim1, dim2):
    return _zeros_for(grad, meta).diagonal_scatter(grad, offset, dim1, dim2)


def as_strided_backward(grad, meta, size, stride, storage_offset):
    """Scatter the gradient into zeros laid out like the input (a non-overlapping as_strided view is assumed)."""
    zeros = _op("empty_strided", meta.size, meta.stride, grad.dtype, None, grad.device, None, False).zero_()
    offset = (meta.offset if storage_offset is None else storage_offset) - meta.offset
    return zeros.as_strided_scatter(grad, size, stride, offset)


def unfold_backward(grad, meta, dimension, size, step):
    return _op("unfold_backward", grad, meta.size, dimension, size, step)


def where_zero(cond, grad):
    """grad where cond, else 0."""
    return _op("where", cond, grad, 0.0)


def cat_backward(grad, tensors, dim):
    d = dim % grad.dim()
    out, start = [], 0
    for t in tensors:
        if t._size == (0,):
            out.append(None)
            continue
        out.append(grad.narrow(d, start, t._size[d]))
        start += t._size[d]
    return out


def permute_backward(grad, dims):
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[d % n] = i
    return grad.permute(inverse)


def squeeze_backward(grad, sizes):
    return grad.reshape(sizes)


def mv_backward_self(grad, vec):
    return grad.unsqueeze(1) * vec.unsqueeze(0)


LN2 = math.log(2.0)
LN10 = math.log(10.0)
