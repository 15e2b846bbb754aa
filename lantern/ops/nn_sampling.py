"""Resampling: interpolate (one interpolation matrix per spatial dim, an op with its derivative),
affine_grid and grid_sample over 4-D or 5-D input (composites of differentiable ops), and torch's grid_sampler,
grid_sampler_2d and grid_sampler_3d (grid_sample with PyTorch's enum numbers for the modes).

>>> x = lantern.tensor([[[0., 1.]]])
>>> lantern.nn.functional.interpolate(x, size=4, mode="linear", align_corners=True).tolist()
[[[0.0, 0.3333333432674408, 0.6666666865348816, 1.0]]]
"""
import itertools

import numpy as np

from ..core import dtype as dt
from ..core.layout import channels_last, channels_last_3d
from .meta_util import shape_str
from .registry import composite, structured
from .derivative import derivative
from .nn_common import _op
from .nn_extra import adaptive_avg_pool3d
from .nn_pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
from .nn_sampling_antialias import fused_multiply_add, upsample_aa
from .nn_windows import _compute_dtype
from ..core.overridable import overridable


__all__ = ["interpolate", "affine_grid", "grid_sample"]


# ---- interpolate: one interpolation matrix per spatial dim -------------------------------------------------------

_SPATIAL_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_NODE_MODES = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear", "bilinear": "Bilinear",
               "bicubic": "Bicubic", "trilinear": "Trilinear"}


def _source_scale(n_in, n_out, align_corners, scale):
    """PyTorch's area_pixel_compute_scale: output-to-input coordinate ratio (1/scale_factor when one was given)."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None else n_in / n_out


def _nearest_index(xp, n_in, n_out, scale, exact):
    """Input index of each output position; computed in float32 as PyTorch's nearest kernels do, so ties land
    where they land in PyTorch."""
    ratio = np.float32(1.0 / scale if scale is not None else np.float32(n_in) / np.float32(n_out))
    dst = xp.arange(n_out, dtype=np.float32)
    src = xp.floor(((dst + np.float32(0.5)) if exact else dst) * ratio).astype(np.int64)
    return xp.minimum(src, n_in - 1)


def _cubic_weights(xp, t):
    """Keys' cubic convolution weights (A = -0.75) for the four taps around a fractional offset t, each Horner
    step one fused multiply-add as ATen's compiled kernels evaluate them."""
    a = -0.75

    def near(x):
        return fused_multiply_add(xp, fused_multiply_add(xp, x, a + 2, -(a + 3)) * x, x, 1)

    def far(x):
        return fused_multiply_add(xp, fused_multiply_add(xp, fused_multiply_add(xp, x, a, -5 * a), x, 8 * a), x,
                                  -4 * a)
    return (far(t + 1), near(t), near(1 - t), far(2 - t))


def _source_index(xp, dst, ratio):
    """(dst + 0.5) * ratio - 0.5, the input coordinate of output position dst, rounded once in float32 as ATen's
    compiled kernels compute it (a fused multiply-add; the product is exact in float64). Rounded twice otherwise
    (NumPy has no fused multiply-add)."""
    if dst.dtype != np.float32:
        return (dst + 0.5) * ratio - 0.5
    return ((dst + np.float32(0.5)).astype(np.float64) * np.float32(ratio) - 0.5).astype(np.float32)


def interpolation_matrix(xp, n_in, n_out, mode, align_corners, scale, dtype):
    """(n_out, n_in): row i holds the weights output position i gives each input position along one dim."""
    if mode in ("nearest", "nearest-exact"):
        taps = [(_nearest_index(xp, n_in, n_out, scale, mode == "nearest-exact"), 1.0)]
    else:
        ratio = _source_scale(n_in, n_out, align_corners, scale)
        dst = xp.arange(n_out, dtype=dtype)
        src = dst * ratio if align_corners else _source_index(xp, dst, ratio)
        if mode == "bicubic":
            i0 = xp.floor(src)
            t = src - i0
            taps = [(xp.clip(i0.astype(np.int64) + k - 1, 0, n_in - 1), w)
                    for k, w in enumerate(_cubic_weights(xp, t))]
        else:
            src = xp.maximum(src, 0)
            i0 = xp.floor(src).astype(np.int64)
            i1 = xp.minimum(i0 + 1, n_in - 1)
            t = src - i0
            taps = [(i0, 1 - t), (i1, t)]
    columns = xp.arange(n_in)
    matrix = xp.zeros((n_out, n_in), dtype)
    for index, weight in taps:
        matrix += (index[:, None] == columns) * (weight[:, None] if hasattr(weight, "shape") else weight)
    return matrix


def along(xp, a, matrix, axis):
    """Apply a (new, old) matrix along one axis of a."""
    return xp.moveaxis(xp.tensordot(a, matrix, axes=([axis], [1])), -1, axis)


def _upsample_check(self, output_size, mode):
    spatial = self._size[2:]
    if min(spatial) <= 0 or min(output_size) <= 0:  # the sizes before the dtype, as in PyTorch
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input {shape_str(spatial)} "
                           f"output {shape_str(output_size)} (in interpolate, mode={mode!r})")
    if self._size[1] == 0:
        raise RuntimeError(f"Non-empty {self.dim()}D data tensor expected but got a tensor with sizes "
                           f"{shape_str(self._size)} (interpolate needs at least one channel)")
    if mode in ("nearest", "nearest-exact"):
        if self.dtype.category != dt.FLOATING and self.dtype is not dt.uint8:
            raise NotImplementedError(f"\"upsample_{mode.replace('-', '_')}{len(output_size)}d\" not implemented for "
                                      f"'{self.dtype.legacy}'")
    elif self.dtype.category != dt.FLOATING and not (self.dtype is dt.uint8 and len(output_size) == 2
                                                     and mode in ("bilinear", "bicubic")):
        raise NotImplementedError(f"\"upsample_{mode}{len(output_size)}d\" not implemented for '{self.dtype.legacy}'")


def _upsample_meta(self, output_size, mode, align_corners=False, scales=None):
    _upsample_check(self, output_size, mode)
    return self._size[:2] + tuple(output_size), self.dtype


def _upsample_apply(xp, out, a, in_sizes, out_sizes, mode, align_corners, scales, transpose):
    """a's last spatial dims mapped through each dim's interpolation matrix (transposed: the gradient)."""
    nd = len(in_sizes)
    if mode.startswith("nearest") and not transpose:  # a selection: exact for every dtype
        for d in range(nd):
            index = _nearest_index(xp, in_sizes[d], out_sizes[d], scales[d] if scales else None,
                                   mode == "nearest-exact")
            a = xp.take(a, index, axis=a.ndim - nd + d)
        out[...] = a
        return
    if out.dtype == np.uint8:
        out[...] = _uint8_separable(xp, a, in_sizes, out_sizes, mode, align_corners, scales)
        return
    compute = _compute_dtype(out.dtype)
    a = a.astype(compute, copy=False)
    for d in range(nd):
        matrix = interpolation_matrix(xp, in_sizes[d], out_sizes[d], mode, align_corners,
                                      scales[d] if scales else None, compute)
        a = along(xp, a, matrix.T if transpose else matrix, a.ndim - nd + d)
    out[...] = a


def _uint8_separable(xp, a, in_sizes, out_sizes, mode, align_corners, scales):
    """uint8 images as PyTorch's CPU kernels resize them: the last dim first, then the one before, each pass in
    fixed point (weights scaled by 2**precision, the largest precision that keeps them in int16), its result
    rounded and clamped to 0..255 before the next pass."""
    nd = len(in_sizes)
    for d in reversed(range(nd)):
        matrix = interpolation_matrix(xp, in_sizes[d], out_sizes[d], mode, align_corners,
                                      scales[d] if scales else None, np.dtype(np.float64))
        precision = 0
        while precision < 15 and int(0.5 + matrix.max() * (1 << (precision + 1))) < (1 << 15):
            precision += 1
        weights = xp.trunc(matrix * (1 << precision) + xp.where(matrix < 0, -0.5, 0.5)).astype(np.int64)
        total = along(xp, a.astype(np.int64), weights, a.ndim - nd + d) + (1 << (precision - 1))
        a = xp.clip(total >> precision, 0, 255).astype(np.uint8)
    return a


def _upsample_impl(xp, out, dtype, self, output_size, mode, align_corners=False, scales=None):
    _upsample_apply(xp, out, self, self.shape[2:], tuple(output_size), mode, align_corners, scales, False)


structured("_upsample(Tensor self, int[] output_size, str mode, bool align_corners=False, float[]? scales=None) "
           "-> Tensor", _upsample_meta, _upsample_impl, inplace=False, out=False)


def _upsample_backward_meta(grad_output, input_size, mode, align_corners=False, scales=None):
    return tuple(input_size), grad_output.dtype


def _upsample_backward_impl(xp, out, dtype, grad, input_size, mode, align_corners=False, scales=None):
    _upsample_apply(xp, out, grad, tuple(input_size[2:]), grad.shape[2:], mode, align_corners, scales, True)


structured("_upsample_backward(Tensor grad_output, int[] input_size, str mode, bool align_corners=False, "
           "float[]? scales=None) -> Tensor", _upsample_backward_meta, _upsample_backward_impl, inplace=False,
           out=False)


def _interpolate_sizes(input, size, scale_factor, nd):
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    given = size if size is not None else scale_factor
    values = tuple(given) if isinstance(given, (list, tuple)) else (given,) * nd
    if len(values) != nd:
        raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                         f"spatial dimensions of {list(input._size[2:])} and output size of {given}. Please provide "
                         "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
    if size is not None:
        return tuple(int(v) for v in values), None
    scales = tuple(float(v) for v in values)
    return tuple(int(n * s) for n, s in zip(input._size[2:], scales)), scales


@overridable
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of (N, C, ...) to `size` or by `scale_factor`, with mode 'nearest',
    'nearest-exact', 'linear' (3-D input), 'bilinear', 'bicubic' (4-D), 'trilinear' (5-D) or 'area' (adaptive
    average pooling); align_corners as in PyTorch."""
    nd = input.dim() - 2
    output_size, scales = _interpolate_sizes(input, size, scale_factor, nd)  # first, as PyTorch checks them
    if mode not in _NODE_MODES and mode != "area" or not 1 <= nd <= 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  "the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode in _SPATIAL_DIMS and _SPATIAL_DIMS[mode] != nd:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_SPATIAL_DIMS[mode] + 2}D input")
    if align_corners is not None and mode not in _SPATIAL_DIMS:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if antialias and (mode not in ("bilinear", "bicubic") or nd != 2):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1](input, output_size)
    if recompute_scale_factor:
        scales = None
    if antialias:
        result = upsample_aa(input, output_size, mode, bool(align_corners), scales)
    else:
        result = _op("_upsample", input, output_size, mode, bool(align_corners), scales)
    layout = {4: channels_last, 5: channels_last_3d}.get(input.dim())
    if layout is not None and not input.is_contiguous() and input.is_contiguous(memory_format=layout):
        return result.contiguous(memory_format=layout)  # PyTorch's kernels keep a channels-last input's layout
    return result


def upsample_node_name(args):
    return f"Upsample{_NODE_MODES[args[2]]}{args[0].dim() - 2}DBackward0"


derivative("_upsample", helpers={"call_op": _op}, name=upsample_node_name,
           self="call_op('_upsample_backward', grad, self_meta.size, mode, align_corners, scales)")
derivative("_upsample_backward", helpers={"call_op": _op}, name="UpsampleBackwardBackward0",
           grad_output="call_op('_upsample', grad, grad_output_meta.size[2:], mode, align_corners, scales)")


# ---- affine_grid / grid_sample: composites of differentiable ops --------------------------------------------------

def _normalized_positions(n, align_corners, like):
    """Pixel centres in [-1, 1] (align_corners: the corner pixels' centres are -1 and 1)."""
    if n <= 1:
        return _op("zeros", (n,), like.dtype, None, like.device, None, False, None)
    i = _op("arange", n, None, 1, like.dtype, None, like.device, None, False)
    return (i * 2 - (n - 1)) / (n - 1 if align_corners else n)


@overridable
def affine_grid(theta, size, align_corners=False):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta (N, 2, 3) (or (N, 3, 4)) over
    an output of `size`, in grid_sample's normalized coordinates."""
    size = tuple(int(v) for v in size)
    nd = len(size) - 2
    if nd not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {list(size)}.")
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if theta.dim() != 3 or theta._size[1:] != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size {list(size)}. "
                         f"Got {list(theta._size)}.")
    if min(size[2:]) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {list(size)}")
    spatial = size[2:]
    axes = [_normalized_positions(n, align_corners, theta) for n in reversed(spatial)]  # x (width) first
    columns = []
    for k, positions in enumerate(axes):
        shape = [1] * nd
        shape[nd - 1 - k] = spatial[nd - 1 - k]
        columns.append(positions.view(shape).expand(spatial))
    columns.append(_op("ones", spatial, theta.dtype, None, theta.device, None, False, None))
    base = _op("stack", columns, -1).view(1, -1, nd + 1)
    grid = base.matmul(theta.transpose(1, 2))
    return grid.view((size[0],) + spatial + (nd,))


# PyTorch samples 4-D input with a vectorized kernel and 5-D input with a scalar one; their coordinate formulas
# are the same maps, rounded differently, and each is kept here as it is there (`vectorized` picks the 4-D one).

def _unnormalize(coord, n, align_corners, vectorized):
    """A grid coordinate in [-1, 1] as a pixel coordinate of an axis of n pixels."""
    if align_corners:
        return (coord + 1) / 2 * (n - 1)
    if vectorized:
        return _fused_multiply_add(coord + 1, n / 2, -0.5)
    return ((coord + 1) * n - 1) / 2


def _reflect(coord, low2, high2):
    """PyTorch's scalar reflect_coordinates: fold coord into [low2/2, high2/2] by mirroring at the ends."""
    if low2 == high2:
        return coord * 0
    low, span = low2 / 2, (high2 - low2) / 2
    distance = (coord - low).abs()
    flips = (distance.detach() / span).floor()
    extra = distance.fmod(span)
    even = flips.fmod(2) == 0
    return _op("where", even, extra + low, span - extra + low)


def _reflect_vectorized(coord, low, twice_span):
    """The vectorized kernel's reflect_coordinates: the distance from `low` modulo twice the span, mirrored back
    when past the span (on a tie it stays, as the kernel's gradient chooses)."""
    if twice_span <= 0:
        return coord * 0
    distance = (coord - low).abs()
    extra = distance - (distance.detach() / twice_span).trunc() * twice_span
    mirrored = twice_span - extra
    return _op("where", extra > mirrored, mirrored, extra) + low


def _fold_in(coord, n, padding_mode, align_corners, vectorized):
    """A pixel coordinate folded into the input by the padding mode (PyTorch's compute_coordinates)."""
    if padding_mode == "reflection":
        if vectorized:
            coord = _reflect_vectorized(coord, 0, 2 * (n - 1)) if align_corners else _reflect_vectorized(coord, -0.5,
                                                                                                         2 * n)
        else:
            coord = _reflect(coord, 0, 2 * (n - 1)) if align_corners else _reflect(coord, -1, 2 * n - 1)
    if padding_mode in ("border", "reflection"):
        coord = coord.clamp(0, n - 1)
    return coord


def _tap(input, indices, padding_mode):
    """input (N, C, *S) read at integer positions, one index tensor (N, *out) per spatial dim: (N, *out, C);
    outside the input is 0, or (border/reflection) the nearest edge pixel."""
    n, sizes = input._size[0], input._size[2:]
    inside = None
    if padding_mode == "zeros":
        for i, size in zip(indices, sizes):
            within = (i >= 0) & (i <= size - 1)
            inside = within if inside is None else inside & within
    batch = _op("arange", n, None, 1, dt.int64, None, input.device, None, False).view((n,) + (1,) * len(sizes))
    values = _op("index.Tensor", input, [batch, None] + [i.clamp(0, size - 1) for i, size in zip(indices, sizes)])
    return values if inside is None else values * inside.unsqueeze(-1).to(values.dtype)


def _round_half_even(x):
    r = (x + 0.5).floor()
    return r - ((r - x == 0.5) & (r.fmod(2) != 0)).to(x.dtype)


def _cubic_taps(t):
    """The 4 cubic convolution weights (a = -0.75) of taps -1, 0, 1, 2 at fraction t, rounded as the 4-D kernel's
    compiled code rounds them (the near taps' steps fused, the far taps' not)."""
    a = -0.75

    def near(x):
        return _fused_multiply_add(_fused_multiply_add(x, a + 2, -(a + 3)) * x, x, 1)

    def far(x):
        return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a
    return (far(t + 1), near(t), near(1 - t), far(2 - t))


def _fused_multiply_add(a, b, c):
    """a * b + c rounded once, as the 4-D kernel's compiled code computes it (its compiler fuses a product into the
    sum that takes it): float32 through float64, where the product is exact; float64 as a * b + c (NumPy has no
    fused multiply-add). Differentiable: lantern ops."""
    if getattr(a, "dtype", None) is dt.float32:
        return (a.to(dt.float64) * b + c).to(dt.float32)
    return a * b + c


def _check_grid_sample(input, grid, mode, padding_mode):
    if mode not in _GRID_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in _GRID_PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype.legacy} and grid has {grid.dtype.legacy}")
    _check_grid_sampler(input, grid, input.dim(), mode)


def _check_grid_sampler(input, grid, dims, mode):
    """PyTorch's grid_sampler checks, in its order, for a sampler of `dims`-D input and grid."""
    if grid._size[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {shape_str(grid._size)}")
    if input._size[0] != grid._size[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {shape_str(input._size)} and grid with sizes {shape_str(grid._size)}")
    for d in range(2, input.dim()):
        if input._size[d] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {shape_str(input._size)} with dimension {d} being empty")
    if dims not in (4, 5) or input.dim() != dims or grid.dim() != dims:
        raise RuntimeError(f"grid_sampler(): expected {'4D or 5D' if dims not in (4, 5) else f'{dims}D'} input and "
                           f"grid with same number of dimensions, but got input with sizes "
                           f"{shape_str(input._size)} and grid with sizes {shape_str(grid._size)}")
    if mode == "bicubic" and dims != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"grid_sampler_{dims - 2}d_cpu_kernel_impl\" not implemented for "
                                  f"'{input.dtype.legacy}'")


@overridable
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H, W) at grid (N, Ho, Wo, 2) positions (x, y in [-1, 1]): (N, C, Ho, Wo); or input
    (N, C, D, H, W) at grid (N, Do, Ho, Wo, 3) positions (x, y, z). Written with differentiable ops, so both input
    and grid get gradients, to any order."""
    _check_grid_sample(input, grid, mode, padding_mode)
    return _sample(input, grid, mode, padding_mode, bool(align_corners))


def _sample(input, grid, mode, padding_mode, align_corners):
    sizes = input._size[2:]
    nd = len(sizes)
    vectorized = nd == 2
    # the grid's last dim lists x (width), y (height)[, z (depth)]: the spatial dims in reverse
    coords = [_unnormalize(grid.select(-1, nd - 1 - d), size, align_corners, vectorized)
              for d, size in enumerate(sizes)]
    if mode == "bicubic":  # 4-D only: it folds each tap instead, as PyTorch's does
        out = _bicubic(input, coords, padding_mode, align_corners)
        return out.permute(0, 3, 1, 2).contiguous()
    coords = [_fold_in(c, size, padding_mode, align_corners, vectorized) for c, size in zip(coords, sizes)]
    if mode == "nearest":
        out = _tap(input, [_round_half_even(c.detach()).to(dt.int64) for c in coords], padding_mode)
        zero = sum(c * 0 for c in coords)
        out = out + zero.unsqueeze(-1)  # the grid's gradient is zero, not absent, as in PyTorch
    else:
        lows = [c.detach().floor() for c in coords]
        weights = [(1 - (c - low), c - low) for c, low in zip(coords, lows)]
        lows = [low.to(dt.int64) for low in lows]
        out = None
        for taps in itertools.product((0, 1), repeat=nd):
            weight = weights[0][taps[0]]
            for d in range(1, nd):
                weight = weight * weights[d][taps[d]]
            value = _tap(input, [low + k for low, k in zip(lows, taps)], padding_mode)
            out = value * weight.unsqueeze(-1) if out is None else _accumulate(out, value, weight, vectorized)
    return out.permute((0, nd + 1) + tuple(range(1, nd + 1))).contiguous()


def _bicubic(input, coords, padding_mode, align_corners):
    """Bicubic sampling (N, Ho, Wo, C) summed as PyTorch's kernel sums it: each of the 4 rows interpolated along x
    first, then the 4 row values along y; each tap folded into the input by the padding mode."""
    (height, width), (y, x) = input._size[2:], coords
    y_low, x_low = y.detach().floor(), x.detach().floor()
    y_weights, x_weights = _cubic_taps(y - y_low), _cubic_taps(x - x_low)

    def taps(low, n):
        positions = [low + offset for offset in (-1, 0, 1, 2)]
        if padding_mode != "zeros":
            positions = [_fold_in(p, n, padding_mode, align_corners, True) for p in positions]
        return [p.to(dt.int64) for p in positions]
    rows, columns = taps(y_low, height), taps(x_low, width)
    out = None
    for row, y_weight in zip(rows, y_weights):
        along_x = None
        for column, x_weight in zip(columns, x_weights):
            value = _tap(input, [row, column], padding_mode)
            along_x = value * x_weight.unsqueeze(-1) if along_x is None else _accumulate(along_x, value, x_weight,
                                                                                           True)
        out = along_x * y_weight.unsqueeze(-1) if out is None else _accumulate(out, along_x, y_weight, True)
    return out


def _accumulate(total, value, weight, vectorized):
    """total + value * weight (value (N, *out, C), weight (N, *out)); one fused step in the 4-D kernel."""
    if vectorized:
        return _fused_multiply_add(value, weight.unsqueeze(-1), total)
    return total + value * weight.unsqueeze(-1)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler: grid_sample with the modes as PyTorch's enum numbers (interpolation 0 bilinear,
    1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection), for 4-D or 5-D input.

    >>> lantern.grid_sampler(lantern.ones(1, 1, 2, 2), lantern.zeros(1, 1, 1, 2), 0, 0, False).tolist()
    [[[[1.0]]]]
    """
    return _grid_sampler(input.dim(), input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_2d: grid_sampler of 4-D input and grid."""
    return _grid_sampler(4, input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_3d: grid_sampler of 5-D input and grid (no bicubic)."""
    return _grid_sampler(5, input, grid, interpolation_mode, padding_mode, align_corners)


def _grid_sampler(dims, input, grid, interpolation_mode, padding_mode, align_corners):
    if interpolation_mode not in range(len(_GRID_MODES)) or padding_mode not in range(len(_GRID_PADDING_MODES)):
        raise RuntimeError(f"grid_sampler(): interpolation_mode must be 0, 1 or 2 and padding_mode 0, 1 or 2 (got "
                           f"{interpolation_mode} and {padding_mode})")
    mode = _GRID_MODES[interpolation_mode]
    _check_grid_sampler(input, grid, dims, mode)
    if grid.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.legacy} but found {grid.dtype.legacy} (grid_sampler: "
                           f"cast the grid with .to({input.dtype}))")
    return _sample(input, grid, mode, _GRID_PADDING_MODES[padding_mode], bool(align_corners))


_GRID_MODES = ("bilinear", "nearest", "bicubic")  # PyTorch's GridSamplerInterpolation numbering
_GRID_PADDING_MODES = ("zeros", "border", "reflection")  # and its GridSamplerPadding numbering

for _fn in (grid_sampler, grid_sampler_2d, grid_sampler_3d):
    composite(_fn.__name__, _fn, method=False)
