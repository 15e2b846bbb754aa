"""interpolate(..., antialias=True): PIL-style resampling of (N, C, H, W) float input, bilinear (a triangle filter)
or bicubic (Keys' cubic with a = -0.5), as PyTorch's `_upsample_bilinear2d_aa` / `_upsample_bicubic2d_aa` compute
it on the CPU.

Downsampling by a scale s widens the filter by s (its support is 1 or 2 input pixels times max(s, 1) on each side of
the centre), so every input pixel under it contributes: no aliasing. Each output pixel's weights are the filter's
values at its taps, normalised to sum to 1. The two dims are resampled separately, the width first, then the
height, each pass a weighted sum over its taps in order; the arithmetic follows ATen's single-precision rounding
(float32 weights computed with its mix of float and double steps, fused multiply-adds in the filter and per tap).
The weights and sums of up to 4 taps agree with torch's bit for bit; longer sums (strong downsampling) round
differently in the compiled kernel, an ulp or two apart.

>>> x = lantern.arange(8.).reshape(1, 1, 1, 8)
>>> y = lantern.nn.functional.interpolate(x, size=(1, 4), mode="bilinear", antialias=True)
>>> [round(v, 4) for v in y.flatten().tolist()]
[0.7143, 2.5, 4.5, 6.2857]
"""
import math

import numpy as np

from .derivative import derivative
from .meta_util import shape_str
from .nn_common import _op
from .registry import structured

_FILTER_SIZE = {"bilinear": 2, "bicubic": 4}  # taps of the filter without antialiasing


def _triangle(xp, x):
    x = xp.abs(x)
    return xp.where(x < 1, 1 - x, 0)


def fused_multiply_add(xp, a, b, c):
    """a * b + c rounded once in float32 (the product is exact in float64), as the compiled kernel's fused
    multiply-add; float64 as a * b + c (NumPy has none)."""
    if a.dtype != np.float32:
        return a * b + c
    return (a.astype(np.float64) * b + c).astype(np.float32)


def _keys_cubic(xp, x):
    """Keys' cubic convolution kernel with a = -0.5 (PIL's), as ATen's aa_filter evaluates it: each Horner step
    one fused multiply-add."""
    a = -0.5
    x = xp.abs(x)
    near = fused_multiply_add(xp, fused_multiply_add(xp, x, a + 2, -(a + 3)) * x, x, 1)
    far = fused_multiply_add(xp, fused_multiply_add(xp, fused_multiply_add(xp, x, a, -5 * a), x, 8 * a), x,
                              -4 * a)
    return xp.where(x < 1, near, xp.where(x < 2, far, 0))


_FILTERS = {"bilinear": _triangle, "bicubic": _keys_cubic}


def _scale(real, n_in, n_out, align_corners, scale):
    """ATen's area_pixel_compute_scale in the working precision: input pixels per output pixel."""
    if align_corners:
        return real(n_in - 1) / real(n_out - 1) if n_out > 1 else real(0)
    if scale is not None and scale > 0:
        return real(1.0 / scale)
    return real(n_in) / real(n_out)


def tap_weights(xp, n_in, n_out, mode, align_corners, scale, real):
    """For each output position along one dim: its first input tap (n_out,), its tap count (n_out,) and its
    normalised weights (n_out, max taps), in the working precision `real` (float32 or float64)."""
    scale = _scale(real, n_in, n_out, align_corners, scale)
    half = _FILTER_SIZE[mode] * 0.5
    support = real(half * scale if scale >= 1 else half)
    inverse = real(1.0 / float(scale)) if scale >= 1 else real(1)
    max_taps = int(math.ceil(support)) * 2 + 1
    # ATen mixes precisions here: the centre is a double product rounded to `real`; the tap distances subtract in
    # `real`, then add 0.5 and scale in double before the filter sees them in `real`
    centre = (float(scale) * (xp.arange(n_out) + 0.5)).astype(real)
    first = xp.maximum(xp.trunc((centre - support).astype(np.float64) + 0.5).astype(np.int64), 0)
    last = xp.minimum(xp.trunc((centre + support).astype(np.float64) + 0.5).astype(np.int64), n_in)
    count = xp.clip(last - first, 0, max_taps)
    taps = xp.arange(max_taps)
    distance = (((first[:, None] + taps).astype(real) - centre[:, None]).astype(np.float64) + 0.5) * float(inverse)
    weights = _FILTERS[mode](xp, distance.astype(real)).astype(real)
    weights = xp.where(taps < count[:, None], weights, real(0))
    total = xp.zeros(n_out, real)
    for j in range(max_taps):  # summed in tap order, in `real`
        total = (total + weights[:, j]).astype(real)
    weights = xp.where(total[:, None] != 0, weights / xp.where(total != 0, total, 1)[:, None], weights)
    return first, count, weights.astype(real)


def _resample_axis(xp, a, axis, n_out, mode, align_corners, scale):
    """One pass along `axis`: each output the sum over its taps of weight * input, in tap order, one fused
    multiply-add per tap (float32 through float64, where the product is exact)."""
    real = a.dtype.type
    n_in = a.shape[axis]
    first, count, weights = tap_weights(xp, n_in, n_out, mode, align_corners, scale, real)
    a = xp.moveaxis(a, axis, -1)
    total = a[..., first] * weights[:, 0]
    for j in range(1, weights.shape[1]):
        tap = a[..., xp.minimum(first + j, n_in - 1)]
        total = xp.where(j < count, fused_multiply_add(xp, tap, weights[:, j], total), total)
    return xp.moveaxis(total, -1, axis)


def _transposed_axis(xp, g, axis, n_in, mode, align_corners, scale):
    """The adjoint of _resample_axis: each output's gradient spread back over its taps with their weights."""
    real = g.dtype.type
    n_out = g.shape[axis]
    first, count, weights = tap_weights(xp, n_in, n_out, mode, align_corners, scale, real)
    matrix = xp.zeros((n_out, n_in), real)
    for j in range(weights.shape[1]):
        rows = xp.nonzero(j < count)[0]
        matrix[rows, first[rows] + j] += weights[rows, j]
    return xp.moveaxis(xp.tensordot(xp.moveaxis(g, axis, -1), matrix, axes=([-1], [0])), -1, axis)


def _check(self, output_size, mode):
    if self.dim() != 4:
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if min(self._size[2:]) <= 0 or min(output_size) <= 0:
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"{shape_str(self._size[2:])} output {shape_str(output_size)}")
    if not self.dtype.is_floating_point or self.dtype.itemsize < 4:
        raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for '{self.dtype.legacy}' "
                                  "(lantern antialiases float32 and float64 images)")


def _upsample_aa_meta(self, output_size, mode, align_corners=False, scales=None):
    _check(self, output_size, mode)
    return self._size[:2] + tuple(output_size), self.dtype


def _upsample_aa_impl(xp, out, dtype, self, output_size, mode, align_corners=False, scales=None):
    a = self
    for axis in (3, 2):  # the width first, then the height, as ATen's separable passes
        if a.shape[axis] != output_size[axis - 2]:
            a = _resample_axis(xp, a, axis, output_size[axis - 2], mode, align_corners,
                               scales[axis - 2] if scales else None)
    out[...] = a


structured("_upsample_aa(Tensor self, int[] output_size, str mode, bool align_corners=False, float[]? scales=None) "
           "-> Tensor", _upsample_aa_meta, _upsample_aa_impl, inplace=False, out=False, method=False)


def _upsample_aa_backward_meta(grad_output, input_size, mode, align_corners=False, scales=None):
    if len(input_size) != 4:
        raise RuntimeError(f"It is expected input_size equals to 4, but got size {len(input_size)} (the "
                           "antialiased resampling's input is (N, C, H, W))")
    return tuple(input_size), grad_output.dtype


def _upsample_aa_backward_impl(xp, out, dtype, grad, input_size, mode, align_corners=False, scales=None):
    g = grad
    for axis in (2, 3):
        if g.shape[axis] != input_size[axis]:
            g = _transposed_axis(xp, g, axis, input_size[axis], mode, align_corners,
                                 scales[axis - 2] if scales else None)
    out[...] = g


structured("_upsample_aa_backward(Tensor grad_output, int[] input_size, str mode, bool align_corners=False, "
           "float[]? scales=None) -> Tensor", _upsample_aa_backward_meta, _upsample_aa_backward_impl, inplace=False,
           out=False, method=False)


def upsample_aa(input, output_size, mode, align_corners, scales):
    """interpolate's antialiased path (mode 'bilinear' or 'bicubic', 4-D input)."""
    return _op("_upsample_aa", input, output_size, mode, align_corners, scales)


derivative("_upsample_aa", helpers={"call_op": _op},
           name=lambda args: f"Upsample{args[2].capitalize()}2DAaBackward0",
           self="call_op('_upsample_aa_backward', grad, self_meta.size, mode, align_corners, scales)")
derivative("_upsample_aa_backward", helpers={"call_op": _op}, name="UpsampleAaBackwardBackward0",
           grad_output="call_op('_upsample_aa', grad, grad_output_meta.size[2:], mode, align_corners, scales)")
