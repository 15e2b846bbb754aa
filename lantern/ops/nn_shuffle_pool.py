"""nn.functional's channel_shuffle, fractional max pooling (2-d and 3-d) and pdist, written with other ops.

Fractional max pooling (Graham, 2014) pools windows of a fixed size whose starts follow a pseudo-random sequence:
for output i of n along a dim of input size N and window k, start(i) = int((i + u) α) - int(u α) with
α = (N - k) / (n - 1), and the last window ends at the input's end. u is one sample per (batch, channel, dim)
(`_random_samples`, uniform in [0, 1)).

>>> x = lantern.arange(8.0).view(1, 4, 1, 2)
>>> lantern.nn.functional.channel_shuffle(x, 2)[0, :, 0, 0].tolist()
[0.0, 4.0, 2.0, 6.0]
"""
import math

from ..core import dtype as dt
from ..core.layout import channels_last, contiguous_format
from ..core.overridable import overridable
from .dispatcher import call
from .registry import COMPOSITES, composite, get

__all__ = ["channel_shuffle", "native_channel_shuffle", "fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices", "pdist"]


# ---- channel_shuffle ----------------------------------------------------------------------------------------------

def channel_shuffle(input, groups):
    """Interleave the channels of `groups` groups: channel g·(C/groups) + j moves to j·groups + g."""
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input._size)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input._size[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = input._size[2:]
    grouped = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    shuffled = grouped.clone(memory_format=contiguous_format).view(input._size)  # always a new tensor
    if input.dim() == 4 and not input.is_contiguous() and input.is_contiguous(memory_format=channels_last):
        return shuffled.contiguous(memory_format=channels_last)
    return shuffled


native_channel_shuffle = composite("native_channel_shuffle", channel_shuffle, method=False)
channel_shuffle = composite("channel_shuffle", channel_shuffle, method=False)


# ---- fractional_max_pool2d / 3d -----------------------------------------------------------------------------------

def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _window_starts(samples, in_size, out_size, window):
    """The start of each output's window along one dim, per (batch, channel): int64 of shape (N, C, out_size)."""
    steps = call(get("arange"), (out_size, None, 1, samples.dtype, None, samples.device, None, False))
    if out_size == 1:
        return (samples.unsqueeze(-1) * 0 + (in_size - window)).to(dt.int64)
    alpha = samples.new_full((), in_size - window) / samples.new_full((), out_size - 1)
    u = samples.unsqueeze(-1)
    starts = ((steps + u) * alpha).to(dt.int64) - (u * alpha).to(dt.int64)
    last = starts.new_full(starts._size[:-1] + (1,), in_size - window)
    return call(get("cat"), ((starts.narrow(-1, 0, out_size - 1), last), -1))


def _fractional_max_pool(name, d, input, kernel_size, output_size, output_ratio, _random_samples):
    if input.dim() < d + 1:  # torch's Python wrapper reads input.size(-(d + 1)) first
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(input.dim(), 1)}, "
                         f"{max(input.dim(), 1) - 1}], but got {-(d + 1)})")
    if input.dim() != d + 2 and input.dim() != d + 1:
        raise RuntimeError(f"{name}(): Expected {d + 1}D or {d + 2}D tensor, but got: {list(input._size)}")
    batched = input if input.dim() == d + 2 else input.unsqueeze(0)
    spatial = batched._size[2:]
    window = _tuple(kernel_size, d)
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
        output_size = tuple(int(n * r) for n, r in zip(spatial, _tuple(output_ratio, d)))
    out = _tuple(output_size, d)
    for axis, (n, o, k) in enumerate(zip(spatial, out, window)):
        if o + k - 1 > n:
            raise RuntimeError(f"{name}(): pool size {k} too large relative to input size {n} and output size {o} "
                               f"along dim {axis}")
    b, c = batched._size[:2]
    samples = _random_samples
    if samples is None:
        samples = call(get("rand"), ((b, c, d), None, batched.dtype, None, batched.device, None, False))
    flat = None
    for axis in range(d):
        # 2-d pooling gives sample 0 to the width and 1 to the height; 3-d pooling gives them in order (T, H, W)
        sample = d - 1 - axis if d == 2 else axis
        starts = _window_starts(samples.select(-1, sample), spatial[axis], out[axis], window[axis])
        offsets = call(get("arange"), (window[axis], None, 1, dt.int64, None, input.device, None, False))
        positions = starts.unsqueeze(-1) + offsets  # (N, C, out, window)
        shape = [b, c] + [1] * (2 * d)
        shape[2 + axis], shape[2 + d + axis] = out[axis], window[axis]
        positions = positions.reshape(shape)
        flat = positions if flat is None else flat * spatial[axis] + positions
    flat = flat.expand([b, c] + list(out) + list(window)).reshape(b, c, math.prod(out) * math.prod(window))
    picked = batched.reshape(b, c, math.prod(spatial)).gather(2, flat).reshape((b, c) + out + (math.prod(window),))
    values, which = picked.max(-1)
    indices = flat.reshape((b, c) + out + (math.prod(window),)).gather(-1, which.unsqueeze(-1)).squeeze(-1)
    if input.dim() == d + 1:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


def _fractional_max_pool_functions(d):
    name = f"fractional_max_pool{d}d"

    def with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                     _random_samples=None):
        return _fractional_max_pool(name, d, input, kernel_size, output_size, output_ratio, _random_samples)

    def pool(input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        values, indices = _fractional_max_pool(name, d, input, kernel_size, output_size, output_ratio,
                                               _random_samples)
        return (values, indices) if return_indices else values

    pool.__name__, with_indices.__name__ = name, f"{name}_with_indices"
    pool.__doc__ = (f"{d}-d fractional max pooling: windows of kernel_size at pseudo-random starts giving "
                    "output_size (or input size × output_ratio) outputs; with return_indices, also each maximum's "
                    "flat index in its input plane.")
    with_indices.__doc__ = f"{name} that always returns (values, indices)."
    return overridable(pool), overridable(with_indices)


fractional_max_pool2d, fractional_max_pool2d_with_indices = _fractional_max_pool_functions(2)
fractional_max_pool3d, fractional_max_pool3d_with_indices = _fractional_max_pool_functions(3)


# ---- pdist --------------------------------------------------------------------------------------------------------

def pdist(input, p=2):
    """The p-norm distance between each pair of input's rows (i < j, row-major order).

    >>> lantern.nn.functional.pdist(lantern.tensor([[0.0, 0.0], [3.0, 4.0]])).tolist()
    [5.0]
    """
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if input.dtype.category != dt.FLOATING:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input._size[0]
    rows = COMPOSITES["triu_indices"](n, n, 1, device=input.device)
    difference = input.index_select(0, rows[0]) - input.index_select(0, rows[1])
    return call(get("linalg_vector_norm"), (difference, p, [1], False, None))


pdist = composite("pdist", pdist, method=False)
