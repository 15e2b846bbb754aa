"""Pooling: max, average and adaptive pooling in 1 and 2 spatial dims, over the strided windows of
nn_windows.py; each op's derivative follows its kernel.

>>> F = lantern.nn.functional
>>> F.max_pool2d(lantern.arange(16.).view(1, 1, 4, 4), 2).view(2, 2).tolist()
[[5.0, 7.0], [13.0, 15.0]]
"""
import itertools
import math

import numpy as np

from ..core import dtype as dt
from ..core import intra_op
from ..core.reference import mode, specialisation
from .numba_kernels import optional_kernels
from .meta_util import shape_str
from .registry import composite, custom, structured
from .derivative import derivative
from .derivative_specialisation import on_float_arrays, specialise_derivative
from .nn_common import _op
from .nn_windows import _compute_dtype, col2im_array, pad_array, windows
from ..core.overridable import overridable


__all__ = ["max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices", "avg_pool1d",
           "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices"]


# ---- pooling ---------------------------------------------------------------------------------------------------

def _pool_args(name, kernel_size, stride, padding, dilation=1):
    """kernel, stride (default: the kernel), padding and dilation as pairs, checked as PyTorch checks them."""
    def pair(value, what):
        v = (value,) * 2 if isinstance(value, int) else tuple(int(x) for x in value)
        if len(v) == 1:
            v = v * 2
        if len(v) != 2:
            raise RuntimeError(f"{name}: {what} must either be a single int, or a tuple of two ints")
        return v
    kernel = pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else pair(stride, "stride")
    padding, dilation = pair(padding, "padding"), pair(dilation, "dilation")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel_size must be greater than zero, but got kH: {kernel[0]} kW: {kernel[1]}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dilation[0]} dilationW: "
                           f"{dilation[1]}")
    for p, k, d in zip(padding, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    return kernel, stride, padding, dilation


def pool_out_size(n, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape: with ceil_mode a last window may start in the right padding, never past it."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_shape(name, self, kernel, stride, padding, dilation, ceil_mode):
    if self.dim() not in (3, 4) or 0 in self._size[-3:]:
        raise RuntimeError(f"non-empty 3D or 4D (batch mode) tensor expected for input (in {name}: got input of "
                           f"size {shape_str(self._size)})")
    out = tuple(pool_out_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(self._size[-2:], kernel, stride, padding, dilation))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, self._size[-3:]))}). Calculated output size: "
                           f"({self._size[-3]}x{out[0]}x{out[1]}). Output size is too small")
    return self._size[:-2] + out


def pool_windows(xp, a, kernel, stride, padding, dilation, out, fill):
    """Windows (..., *out, *kernel) over `a` padded with `fill`, with room on the right for ceil_mode's last
    window."""
    hi = tuple(max(p, (o - 1) * s + d * (k - 1) + 1 - n - p)
               for n, o, k, s, p, d in zip(a.shape[-2:], out, kernel, stride, padding, dilation))
    return windows(xp, pad_array(xp, a, padding, hi, fill), kernel, stride, dilation)


def _lowest(np_dtype):
    return -math.inf if np_dtype.kind in "fV" else np.iinfo(np_dtype).min


def _max_pool_meta_shapes(self, kernel_size, stride, padding, dilation, ceil_mode):
    kernel, stride, padding, dilation = _pool_args("max_pool2d", kernel_size, stride, padding, dilation)
    shape = _pool_shape("max_pool2d", self, kernel, stride, padding, dilation, ceil_mode)
    if self.dtype.is_complex or self.dtype is dt.bool:  # after the shape checks, as in PyTorch
        raise NotImplementedError(f"\"max_pool2d\" not implemented for '{self.dtype.legacy}'")
    return shape, (kernel, stride, padding, dilation)


def _max_pool_meta(backend, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    shape, _ = _max_pool_meta_shapes(self, kernel_size, stride, padding, dilation, ceil_mode)
    return backend.empty(shape, self.dtype), backend.empty(shape, dt.int64)


def _max_pool_kernel(backend, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The max of each window and its flat index into the input's (H, W) plane, as PyTorch picks it: the first
    maximum, or the last nan (max_pool_planes), over slices of the leading dim on the intra-op threads."""
    shape, (kernel, stride, padding, dilation) = _max_pool_meta_shapes(self, kernel_size, stride, padding, dilation,
                                                                       ceil_mode)
    values, indices = backend.empty(shape, self.dtype), backend.empty(shape, dt.int64)
    a, best, offset = backend.array(self), backend.array(values), backend.array(indices)
    two_by_two = (kernel, stride, padding, dilation) == ((2, 2), (2, 2), (0, 0), (1, 1)) and all(
        2 * o <= n for o, n in zip(shape[-2:], a.shape[-2:]))
    planes = max_pool_planes_compiled if two_by_two and compiled_pool_applies(backend.xp, a) else max_pool_planes

    def run(start, stop):
        planes(backend.xp, a[start:stop], kernel, stride, padding, dilation, best[start:stop], offset[start:stop])

    # the work grows with the input each item reads (four times its outputs for a 2 × 2 pool), not its outputs
    intra_op.parallel_chunks(shape[0], run, grain=intra_op.grain(math.prod(a.shape[1:])))
    return values, indices


def max_pool_planes(xp, a, kernel, stride, padding, dilation, best, offset):
    """Write into best and offset (..., oh, ow) the max pool of `a` (..., H, W) and its indices. One pass per kernel
    tap over the strided windows (no copy of the windows)."""
    shape = best.shape
    width = a.shape[-1]
    win = pool_windows(xp, a, kernel, stride, padding, dilation, shape[-2:], _lowest(a.dtype))
    taps = [((i, j), i * dilation[0] * width + j * dilation[1]) for i in range(kernel[0]) for j in range(kernel[1])]
    xp.copyto(best, win[..., 0, 0])
    # which tap holds the maximum, kept branch-free: a strictly greater value at tap k raises the running tap number
    # to k (taps come in increasing order, so max() keeps the latest improvement, i.e. the first maximum)
    tap_dtype = np.uint8 if len(taps) < 256 else np.int64
    tap, scaled = xp.zeros(shape, tap_dtype), xp.empty(shape, tap_dtype)
    greater = xp.empty(shape, bool)
    for k, ((i, j), _) in enumerate(taps[1:], 1):
        window = win[..., i, j]
        xp.greater(window, best, out=greater)
        xp.maximum(best, window, out=best)
        xp.multiply(greater, tap_dtype(k), out=scaled)
        xp.maximum(tap, scaled, out=tap)
    # each window's tap offset first, then its corner added in place; mode="clip" (every tap number is in range)
    # spares take() the buffered copy it makes to check the indices when given out= (10× slower)
    xp.asarray([step for _, step in taps], dtype=np.int64).take(tap, out=offset, mode="clip")
    if a.dtype.kind in "fcV" and xp.isnan(best).any():
        for (i, j), step in taps:
            xp.copyto(offset, step, where=xp.isnan(win[..., i, j]))
    rows = xp.arange(shape[-2]) * stride[0] - padding[0]
    cols = xp.arange(shape[-1]) * stride[1] - padding[1]
    offset += rows[:, None] * width + cols


def _compiled_kernels():
    """lantern.ops.nn_pooling_numba, or None without numba (numba_kernels.py)."""
    return optional_kernels("nn_pooling_numba")


def compiled_pool_applies(xp, *arrays):
    """Whether the compiled max pool kernels serve these arrays: row-major float32 or float64 NumPy arrays, numba
    installed, and not reference mode."""
    return (mode.fast and xp is np and all(a.dtype in (np.float32, np.float64) and a.flags.c_contiguous
                                           for a in arrays) and _compiled_kernels() is not None)


@specialisation(replaces="nn_pooling.max_pool_planes (four NumPy passes per kernel tap)",
                when="a 2 × 2 pool of stride 2 without padding or dilation whose windows lie inside the input, and "
                     "compiled_pool_applies(xp, input): row-major float32/float64 NumPy input, numba installed",
                parity_test="tests/test_nn_conv_threads.py::test_compiled_max_pool_matches_numpy",
                ops=("max_pool2d_with_indices",))
def max_pool_planes_compiled(xp, a, kernel, stride, padding, dilation, best, offset):
    """max_pool_planes in one numba loop over the input (nn_pooling_numba.max_pool_2x2), unless the input holds a
    nan (which that loop does not look for)."""
    if xp.isnan(a).any():
        max_pool_planes(xp, a, kernel, stride, padding, dilation, best, offset)
    else:
        planes = (-1,) + best.shape[-2:]
        _compiled_kernels().max_pool_2x2(a.reshape((-1,) + a.shape[-2:]), best.reshape(planes),
                                         offset.reshape(planes))


custom("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
       "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", _max_pool_kernel, _max_pool_meta,
       method=False)


def max_pool_backward(grad, indices, meta, kernel_size=None, stride=None, dilation=1):
    """Each output's gradient added at its maximum's place in the input (index_put with accumulate, so double
    backward gathers). The indices say where each maximum lies; the window geometry (kernel_size, stride,
    dilation) is passed so that the node saves it for max_pool_backward_on_arrays."""
    plane = meta.size[-2] * meta.size[-1]
    lead = math.prod(meta.size[:-2])
    base = _op("arange", lead, None, 1, dt.int64, None, indices.device, None, False)
    flat = indices + (base * plane).view(meta.size[:-2] + (1, 1))
    zeros = _op("zeros", (lead * plane,), grad.dtype, None, grad.device, None, False, None)
    return zeros.index_put((flat.reshape(-1),), grad.reshape(-1), True).view(meta.size)


def windows_apart(grad, indices, kernel_size, stride, dilation):
    """The max pools max_pool_backward_on_arrays serves: contiguous float gradients (on_float_arrays) and indices on
    one backend, over windows that cannot overlap (stride ≥ dilated kernel: every input element is the maximum of at
    most one window)."""
    if not (on_float_arrays(grad) and indices._backend is grad._backend and grad.is_contiguous()
            and indices.is_contiguous()):
        return False
    kernel, stride, _, dilation = _pool_args("max_pool2d", kernel_size, stride, 0, dilation)
    return all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))


@specialisation(replaces="max_pool2d's derivative max_pool_backward (index_put with accumulate)",
                when="backward without create_graph, fast paths on; windows_apart(grad, indices, ...)",
                parity_test="tests/test_ops_specialisations.py::test_max_pool_backward_on_arrays",
                ops=("max_pool2d_with_indices",))
def max_pool_backward_on_arrays(grad, indices, meta, kernel_size, stride, dilation):
    """Each output's gradient written at its maximum's place with one array assignment: no two windows share an
    element, so there is nothing to accumulate. Slices of the leading dim run on the intra-op threads."""
    backend = grad._backend
    xp = backend.xp
    out = backend.empty(meta.size, grad.dtype)
    plane = meta.size[-2] * meta.size[-1]
    planes = backend.array(out).reshape(-1, plane)
    where = backend.array(indices).reshape(-1, indices._size[-2] * indices._size[-1])
    values = backend.array(grad).reshape(where.shape)
    per_item = len(planes) // max(meta.size[0], 1)  # planes per slice of the leading dim
    scatter = max_pool_scatter_compiled if compiled_pool_applies(xp, values) else max_pool_scatter

    def run(start, stop):
        rows = slice(start * per_item, stop * per_item)
        scatter(xp, values[rows], where[rows], planes[rows])

    intra_op.parallel_chunks(meta.size[0], run, grain=intra_op.grain(per_item * plane))
    return out


def max_pool_scatter(xp, grad, where, out):
    """out (L, H·W): zeros, and grad (L, P) written at the flat indices `where` (L, P) of each plane."""
    out[...] = 0
    flat = out.reshape(-1)
    flat[(where + (xp.arange(len(out)) * out.shape[1])[:, None]).reshape(-1)] = grad.reshape(-1)


@specialisation(replaces="nn_pooling.max_pool_scatter (fancy-index assignment)",
                when="compiled_pool_applies(xp, grad): row-major float32/float64 NumPy gradient, numba installed",
                parity_test="tests/test_nn_conv_threads.py::test_compiled_max_pool_matches_numpy",
                ops=("max_pool2d_with_indices",))
def max_pool_scatter_compiled(xp, grad, where, out):
    """max_pool_scatter in one numba loop (nn_pooling_numba.max_pool_backward)."""
    _compiled_kernels().max_pool_backward(grad, where, out)


derivative("max_pool2d_with_indices", name="MaxPool2DWithIndicesBackward0",
           helpers={"max_pool_backward": max_pool_backward},
           self="max_pool_backward(grad, result1, self_meta, kernel_size, stride, dilation)")
specialise_derivative("max_pool2d_with_indices", {
    "max_pool_backward(grad, result1, self_meta, kernel_size, stride, dilation)": (
        "max_pool_backward_on_arrays(grad, result1, self_meta, kernel_size, stride, dilation)",
        "windows_apart(grad, result1, kernel_size, stride, dilation)"),
}, helpers={"max_pool_backward": max_pool_backward, "max_pool_backward_on_arrays": max_pool_backward_on_arrays,
            "windows_apart": windows_apart})


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return _op("max_pool2d_with_indices", input, kernel_size, () if stride is None else stride, padding, dilation,
               ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum over each kernel_size window (torch.nn.functional.max_pool2d); with return_indices, also its
    flat index in the input plane."""
    out = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def _as_2d(name, input):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor for input, but got input of size "
                           f"{shape_str(input._size)}")
    return input.unsqueeze(-2)


def _one(value, name):
    if value is None:
        return ()
    v = (value,) if isinstance(value, int) else tuple(value)
    if len(v) != 1:
        raise RuntimeError(f"{name} must be a single int or a tuple of one int, but got {list(v)}")
    return (1, v[0])


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    out = _op("max_pool2d_with_indices", _as_2d("max_pool1d", input), _one(kernel_size, "kernel_size"),
              _one(stride, "stride"), (0,) + _one(padding, "padding")[1:], _one(dilation, "dilation"), ceil_mode)
    return out[0].squeeze(-2), out[1].squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """max_pool2d over a length dim (input (C, L) or (N, C, L))."""
    out = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


for _fn in (max_pool1d, max_pool2d, max_pool1d_with_indices, max_pool2d_with_indices):
    composite(_fn.__name__, _fn, method=False)


def _avg_args(self, kernel_size, stride, padding, ceil_mode, divisor_override):
    kernel, stride, padding, _ = _pool_args("avg_pool2d", kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    shape = _pool_shape("avg_pool2d", self, kernel, stride, padding, (1, 1), ceil_mode)
    return shape, kernel, stride, padding


def _avg_meta(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    shape = _avg_args(self, kernel_size, stride, padding, ceil_mode, divisor_override)[0]
    if not (self.dtype.is_floating_point or self.dtype is dt.int64):  # PyTorch's CPU kernel: these dtypes only
        raise NotImplementedError(f"\"avg_pool2d\" not implemented for '{self.dtype.legacy}'")
    return shape, self.dtype


def avg_divisor(xp, size, out, kernel, stride, padding, count_include_pad, divisor_override):
    """Each output's divisor (*out): the window's size within the padded input (count_include_pad) or within the
    input alone, or divisor_override."""
    if divisor_override is not None:
        return divisor_override
    counts = []
    for n, o, k, s, p in zip(size, out, kernel, stride, padding):
        start = xp.arange(o) * s - p
        end = xp.minimum(start + k, n + p)
        if not count_include_pad:
            start, end = xp.maximum(start, 0), xp.minimum(end, n)
        counts.append(end - start)
    return counts[0][:, None] * counts[1]


def _avg_impl(xp, out, dtype, self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    compute = _compute_dtype(dtype)
    kernel, stride, padding, _ = _pool_args("avg_pool2d", kernel_size, stride, padding)
    win = pool_windows(xp, self.astype(compute, copy=False), kernel, stride, padding, (1, 1), out.shape[-2:], 0)
    total = win[..., 0, 0].copy()
    for i, j in itertools.product(range(kernel[0]), range(kernel[1])):  # one add per tap: fast strided passes
        if i or j:
            total += win[..., i, j]
    divisor = avg_divisor(xp, self.shape[-2:], out.shape[-2:], kernel, stride, padding, count_include_pad,
                          divisor_override)
    if dtype.kind in "iu":  # integer division truncates toward zero, as in C (a divisor_override may be negative)
        out[...] = xp.sign(total) * xp.sign(divisor) * (xp.abs(total) // xp.abs(divisor))
    else:
        xp.divide(total, divisor, out=out, casting="unsafe")


structured("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
           "bool count_include_pad=True, int? divisor_override=None) -> Tensor", _avg_meta, _avg_impl, inplace=False,
           method=False)


def _avg_backward_meta(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):
    return tuple(input_size), grad_output.dtype


def _avg_backward_impl(xp, out, dtype, grad, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):
    """Spread each output's gradient / divisor evenly over its window (col2im)."""
    kernel, stride, padding, _ = _pool_args("avg_pool2d_backward", kernel_size, stride, padding)
    compute = _compute_dtype(dtype)
    oh, ow = grad.shape[-2:]
    share = grad.astype(compute) / avg_divisor(xp, out.shape[-2:], (oh, ow), kernel, stride, padding,
                                               count_include_pad, divisor_override)
    cols = xp.broadcast_to(share[..., None, None, :, :], share.shape[:-2] + kernel + (oh, ow))
    out[...] = col2im_array(xp, cols, out.shape[-2:], kernel, (1, 1), padding, stride, compute)


structured("avg_pool2d_backward(Tensor grad_output, int[] input_size, int[2] kernel_size, int[2] stride, "
           "int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",
           _avg_backward_meta, _avg_backward_impl, inplace=False, out=False)


derivative("avg_pool2d", name="AvgPool2DBackward0", helpers={"call_op": _op},
           self="call_op('avg_pool2d_backward', grad, self_meta.size, kernel_size, stride, padding, ceil_mode, "
                "count_include_pad, divisor_override)")
derivative("avg_pool2d_backward", name="AvgPool2DBackwardBackward0", helpers={"call_op": _op},
           grad_output="call_op('avg_pool2d', grad, kernel_size, stride, padding, ceil_mode, count_include_pad, "
                       "divisor_override)")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over each kernel_size window (torch.nn.functional.avg_pool2d)."""
    return _op("avg_pool2d", input, kernel_size, () if stride is None else stride, padding, ceil_mode,
               count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """avg_pool2d over a length dim (input (C, L) or (N, C, L))."""
    out = _op("avg_pool2d", _as_2d("avg_pool1d", input), _one(kernel_size, "kernel_size"), _one(stride, "stride"),
              (0,) + _one(padding, "padding")[1:], ceil_mode, count_include_pad, None)
    return out.squeeze(-2)


composite("avg_pool1d", avg_pool1d, method=False)
composite("avg_pool2d", avg_pool2d, method=False)


# ---- adaptive pooling: windows [floor(i*n/out), ceil((i+1)*n/out)) ------------------------------------------------

def adaptive_bounds(xp, n, out):
    """The start and end of each adaptive window along a dim of size n split into `out` windows."""
    i = xp.arange(out)
    return (i * n) // out, -((-(i + 1) * n) // out)


def averaging_matrix(xp, n, out, dtype):
    """(out, n): row i averages adaptive window i, so pooling a dim is one matmul (and its gradient the
    transposed one)."""
    start, end = adaptive_bounds(xp, n, out)
    j = xp.arange(n)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def _adaptive_meta(name, self, output_size):
    if len(output_size) != 2:
        raise RuntimeError(f"{name}: output_size must be 2 (got {list(output_size)})")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{output_size[0]}, {output_size[1]}}}")
    if self.dim() not in (3, 4):
        raise RuntimeError(f"{name}(): Expected 3D or 4D tensor, but got {shape_str(self._size)}")
    average = name == "adaptive_avg_pool2d"  # PyTorch's average pool lets the channels be empty too
    for d in range(self.dim() - 2 if average else 1, self.dim()):
        if self._size[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {shape_str(self._size)} with dimension {d} being empty")
    shape = self._size[:-2] + tuple(output_size)
    if self.dtype.category != dt.FLOATING and not (average and 0 in shape):  # an empty average is never computed
        raise NotImplementedError(f"\"{name}\" not implemented for '{self.dtype.legacy}'")
    return shape, self.dtype


def _adaptive_avg_meta(self, output_size):
    return _adaptive_meta("adaptive_avg_pool2d", self, output_size)


def _adaptive_avg_impl(xp, out, dtype, self, output_size):
    compute = _compute_dtype(dtype)
    h, w = self.shape[-2:]
    rows = averaging_matrix(xp, h, out.shape[-2], compute)
    cols = averaging_matrix(xp, w, out.shape[-1], compute)
    out[...] = xp.matmul(xp.matmul(rows, self.astype(compute, copy=False)), cols.T)


structured("_adaptive_avg_pool2d(Tensor self, int[2] output_size) -> Tensor", _adaptive_avg_meta, _adaptive_avg_impl,
           inplace=False, out=False)


def _adaptive_avg_backward_meta(grad_output, input_size):
    return tuple(input_size), grad_output.dtype


def _adaptive_avg_backward_impl(xp, out, dtype, grad, input_size):
    compute = _compute_dtype(dtype)
    rows = averaging_matrix(xp, out.shape[-2], grad.shape[-2], compute)
    cols = averaging_matrix(xp, out.shape[-1], grad.shape[-1], compute)
    out[...] = xp.matmul(xp.matmul(rows.T, grad.astype(compute, copy=False)), cols)


structured("_adaptive_avg_pool2d_backward(Tensor grad_output, int[] input_size) -> Tensor", _adaptive_avg_backward_meta,
           _adaptive_avg_backward_impl, inplace=False, out=False)


derivative("_adaptive_avg_pool2d", name="AdaptiveAvgPool2DBackward0", helpers={"call_op": _op},
           self="call_op('_adaptive_avg_pool2d_backward', grad, self_meta.size)")
derivative("_adaptive_avg_pool2d_backward", name="AdaptiveAvgPool2DBackwardBackward0", helpers={"call_op": _op},
           grad_output="call_op('_adaptive_avg_pool2d', grad, grad_output_meta.size[-2:])")


def _output_size(input, output_size, n):
    """An int (repeated n times) or a sequence, where None keeps the input's size; the op checks its length."""
    if isinstance(output_size, int):
        return (output_size,) * n
    sizes = tuple(output_size)
    if input.dim() <= len(sizes):
        raise ValueError(f"Input dimension should be at least {len(sizes) + 1} (got input of size "
                         f"{shape_str(input._size)} for output_size {sizes})")
    return tuple(input._size[input.dim() - len(sizes) + i] if o is None else int(o) for i, o in enumerate(sizes))


@overridable
def adaptive_avg_pool2d(input, output_size):
    """The mean over output_size adaptive windows of the last two dims (torch.nn.functional.adaptive_avg_pool2d)."""
    size = _output_size(input, output_size, 2)
    if size == (1, 1) and input.dim() in (3, 4) and input.dtype.is_floating_point:  # PyTorch's fast path: a mean
        return input.mean((-2, -1), keepdim=True)
    return _op("_adaptive_avg_pool2d", input, size)


def _check_1d(name, input):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {name})")


def adaptive_avg_pool1d(input, output_size):
    """adaptive_avg_pool2d over a length dim (input (C, L) or (N, C, L))."""
    _check_1d("adaptive_avg_pool1d", input)
    size = _output_size(input, output_size, 1)
    return _op("_adaptive_avg_pool2d", input.unsqueeze(-2), (1,) + size).squeeze(-2)


def _adaptive_max_meta_shape(self, output_size):
    return _adaptive_meta("adaptive_max_pool2d", self, output_size)[0]


def _adaptive_max_meta(backend, self, output_size):
    shape = _adaptive_max_meta_shape(self, output_size)
    return backend.empty(shape, self.dtype), backend.empty(shape, dt.int64)


def _window_index(xp, n, out):
    """(out, widest window) positions of each adaptive window, the last position repeated to fill (a repeat never
    changes a maximum nor which one comes first)."""
    start, end = adaptive_bounds(xp, n, out)
    width = int((end - start).max()) if out else 1
    return xp.minimum(start[:, None] + xp.arange(width), end[:, None] - 1)


def _adaptive_max_kernel(backend, self, output_size):
    shape = _adaptive_max_meta_shape(self, output_size)
    values, indices = backend.empty(shape, self.dtype), backend.empty(shape, dt.int64)
    if values.numel() == 0:
        return values, indices
    xp = backend.xp
    a = backend.array(self)
    h, w = a.shape[-2:]
    rows, cols = _window_index(xp, h, shape[-2]), _window_index(xp, w, shape[-1])
    # (..., oh, kh, ow, kw) -> (..., oh, ow, kh*kw)
    win = a[..., rows[:, :, None, None], cols[None, None, :, :]]
    win = xp.moveaxis(win, -3, -2).reshape(shape + (-1,))
    pick = xp.argmax(win, axis=-1)
    backend.array(values)[...] = xp.take_along_axis(win, pick[..., None], -1)[..., 0]
    kw = cols.shape[1]
    row_at = rows[xp.arange(shape[-2])[:, None], pick // kw]
    col_at = cols[xp.arange(shape[-1]), pick % kw]
    backend.array(indices)[...] = row_at * w + col_at
    return values, indices


custom("adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)",
       _adaptive_max_kernel, _adaptive_max_meta, method=False)


derivative("adaptive_max_pool2d", name="AdaptiveMaxPool2DBackward0",
           helpers={"max_pool_backward": max_pool_backward}, self="max_pool_backward(grad, result1, self_meta)")


@overridable
def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _op("adaptive_max_pool2d", input, _output_size(input, output_size, 2))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum over output_size adaptive windows of the last two dims; with return_indices, also its flat
    index in the input plane."""
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


@overridable
def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    _check_1d("adaptive_max_pool1d", input)
    out = _op("adaptive_max_pool2d", input.unsqueeze(-2), (1,) + _output_size(input, output_size, 1))
    return out[0].squeeze(-2), out[1].squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """adaptive_max_pool2d over a length dim (input (C, L) or (N, C, L))."""
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


for _fn in (adaptive_avg_pool1d, adaptive_max_pool1d, adaptive_max_pool2d):
    composite(_fn.__name__, _fn, method=False)
