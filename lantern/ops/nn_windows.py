"""Strided windows over arrays: the views that convolution, pooling and im2col read, and their adjoint.

`windows(xp, a, kernel, stride, dilation)` is a read-only view with one window per output position (no copy);
`col2im_array` sums windows back into an image (one strided add per kernel tap); `pad_array` pads or crops.

>>> import numpy as np
>>> windows(np, np.arange(5), (2,), (2,), (1,)).tolist()
[[0, 1], [2, 3]]
"""
import itertools

import numpy as np


def _tuple(value, n, name, op_name):
    """An int or a sequence of n ints, as a tuple of n ints."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {name}={list(value)} (in {op_name})")
    return value


def _compute_dtype(np_dtype):
    """Half precision accumulates in float32, as PyTorch's CPU kernels do."""
    return np.dtype(np.float32) if np_dtype.itemsize == 2 and np_dtype.kind in "fV" else np_dtype


# ---- strided windows -----------------------------------------------------------------------------------------

def pad_array(xp, a, lo, hi, value=0):
    """a with its last len(lo) dims padded by lo/hi elements of `value`; negative amounts crop."""
    nd = len(lo)
    crop = tuple(slice(max(-l, 0), a.shape[a.ndim - nd + i] - max(-h, 0)) for i, (l, h) in enumerate(zip(lo, hi)))
    a = a[(Ellipsis,) + crop]
    widths = [(0, 0)] * (a.ndim - nd) + [(max(l, 0), max(h, 0)) for l, h in zip(lo, hi)]
    if not any(l or h for l, h in widths):
        return a
    return xp.pad(a, widths, constant_values=value)


def windows(xp, a, kernel, stride, dilation):
    """A read-only view of shape (*a.shape[:-nd], *out, *kernel): each output position's window over the last
    nd dims of `a` (no copy)."""
    nd = len(kernel)
    spatial = a.shape[-nd:]
    out = tuple((n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(spatial, kernel, stride, dilation))
    st = a.strides[-nd:]
    return xp.lib.stride_tricks.as_strided(
        a, a.shape[:-nd] + out + tuple(kernel),
        a.strides[:-nd] + tuple(x * s for x, s in zip(st, stride)) + tuple(x * d for x, d in zip(st, dilation)),
        writeable=False)


def col2im_array(xp, cols, size, kernel, dilation, padding, stride, dtype):
    """The adjoint of windows(): sum columns (..., *kernel, *blocks) back into an image (..., *size), one strided
    add per kernel position. Windows may reach past the padded image (ceil_mode pooling): what lands there is
    dropped."""
    nd = len(kernel)
    blocks = cols.shape[-nd:]
    padded = tuple(max(n + 2 * p, (b - 1) * s + d * (k - 1) + 1)
                   for n, p, b, s, d, k in zip(size, padding, blocks, stride, dilation, kernel))
    acc = xp.zeros(cols.shape[:-2 * nd] + padded, dtype)
    for position in itertools.product(*(range(k) for k in kernel)):
        target = tuple(slice(i * d, i * d + (b - 1) * s + 1, s) for i, d, b, s in zip(position, dilation, blocks,
                                                                                     stride))
        acc[(Ellipsis,) + target] += cols[(Ellipsis,) + position + (slice(None),) * nd]
    return acc[(Ellipsis,) + tuple(slice(p, p + n) for p, n in zip(padding, size))]
