"""Convolution, padding and pooling: the spatial ops behind lantern.nn.functional.

Every name in __all__ is in lantern.nn.functional; those PyTorch also has in its torch namespace (conv2d,
max_pool2d, ...) are registered as composites, so lantern.conv2d exists too.

One `convolution` op (ATen's: 1-3 spatial dims, stride, padding, dilation, groups, transposed) does every conv;
conv1d/2d/3d and conv_transpose1d/2d/3d are composites over it. Its kernel is im2col: strided windows over the
padded input (np.lib.stride_tricks.as_strided, no copy), copied once into a matrix, then one BLAS GEMM per group,
a slice of the batch at a time (a few MiB of columns). A transposed convolution is one GEMM into columns, then
col2im (a strided add per kernel tap). Both gradients of a convolution are convolutions again, so double backward
needs nothing more; without create_graph the weight gradient is one GEMM per slice instead. Pooling reads the same
strided windows and reduces over them; interpolation is one small matrix per spatial dim.

>>> F = lantern.nn.functional
>>> F.conv2d(lantern.arange(16.).view(1, 1, 4, 4), lantern.ones(1, 1, 2, 2)).view(3, 3).tolist()
[[10.0, 14.0, 18.0], [26.0, 30.0, 34.0], [42.0, 46.0, 50.0]]
>>> F.max_pool2d(lantern.arange(16.).view(1, 1, 4, 4), 2).view(2, 2).tolist()
[[5.0, 7.0], [13.0, 15.0]]
"""
import itertools
import math

import numpy as np

from ..core import dtype as dt
from ..core.layout import channels_last
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .meta_util import shape_str
from .registry import composite, custom, get, structured
from .shape import channels_last_strides
from .derivative import derivative
from .nn_common import eager_backend

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "pad",
           "max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices", "avg_pool1d",
           "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "unfold", "fold", "pixel_shuffle",
           "pixel_unshuffle", "interpolate", "affine_grid", "grid_sample"]


def _op(name, *args):
    return call(get(name), args)


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


# ---- convolution ---------------------------------------------------------------------------------------------

def _conv_shape(input, weight, stride, padding, dilation, transposed, output_padding, groups):
    kernel = weight._size[2:]
    if transposed:
        return (input._size[0], weight._size[1] * groups) + tuple(
            (n - 1) * s - 2 * p + d * (k - 1) + 1 + op
            for n, k, s, p, d, op in zip(input._size[2:], kernel, stride, padding, dilation, output_padding))
    return (input._size[0], weight._size[0]) + tuple(
        (n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, s, p, d in zip(input._size[2:], kernel, stride, padding,
                                                                        dilation))


def _check_conv(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    nd = weight.dim() - 2
    if not 1 <= nd <= 3:
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight (out, in/groups, *kernel), but got weight "
                           f"of size {shape_str(weight._size)}")
    if input.dim() != weight.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight "
                           f"{shape_str(weight._size)}, but got {input.dim()}-dimensional input of size "
                           f"{shape_str(input._size)} instead")
    for name, values in (("stride", stride), ("padding", padding), ("dilation", dilation),
                         ("output_padding", output_padding)):
        if len(values) != nd:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} values to match "
                               f"the convolution dimensions, but got {name}={list(values)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight._size[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{shape_str(weight._size)}] instead")
    channels = weight._size[0] if transposed else weight._size[1] * groups
    if input._size[1] != channels:
        what = f"weight of size {shape_str(weight._size)}, expected input{shape_str(input._size)}"
        raise RuntimeError(f"Given {'transposed=1, ' if transposed else ''}groups={groups}, {what} to have "
                           f"{channels} channels, but got {input._size[1]} channels instead")
    out_channels = weight._size[1] * groups if transposed else weight._size[0]
    if bias is not None and (bias.dim() != 1 or bias._size[0] != out_channels):
        raise RuntimeError(f"Given weight of size {shape_str(weight._size)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {shape_str(bias._size)} instead")
    if transposed:
        if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={list(output_padding)}, stride={list(stride)}, "
                               f"dilation={list(dilation)}")
    else:
        padded = tuple(n + 2 * p for n, p in zip(input._size[2:], padding))
        extent = tuple(d * (k - 1) + 1 for k, d in zip(weight._size[2:], dilation))
        if any(n < e for n, e in zip(padded, extent)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                               f"Kernel size: ({' x '.join(map(str, extent))}). Kernel size can't be greater than "
                               "actual input size")
    # the dtypes last, bool first among them: PyTorch's order, so a call wrong in several ways gets its class
    if input.dtype is dt.bool:
        raise NotImplementedError("\"slow_conv2d_cpu\" not implemented for 'Bool'")
    for t in (weight, bias):
        if t is not None and t.dtype is not input.dtype:
            raise RuntimeError(f"expected scalar type {input.dtype.legacy} but found {t.dtype.legacy} (convolution "
                               f"of a {input.dtype.name} input: cast weight and bias with .to({input.dtype}))")


def _conv_output(backend, input, shape, dtype):
    """Channels-last inputs give channels-last outputs, as PyTorch's suggest_memory_format does."""
    if input.dim() == 4 and not input.is_contiguous() and input.is_contiguous(memory_format=channels_last):
        return backend.empty_strided(shape, channels_last_strides(shape), dtype)
    return backend.empty(shape, dtype)


def _conv_meta(backend, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    _check_conv(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    shape = _conv_shape(input, weight, stride, padding, dilation, transposed, output_padding, groups)
    return _conv_output(backend, input, shape, input.dtype)


# The im2col matrix is built for a slice of the batch at a time, its temporaries together (padded copy, columns,
# product or regrouped gradient) about this many bytes: large enough for BLAS to run near its peak (thousands of
# columns; 1 MiB made the CNN benchmark's step ~15% slower), small enough to keep a convolution's scratch memory
# bounded whatever the batch size.
_IM2COL_BYTES = 2 << 20


def _batch_slices(n, sample_bytes):
    """Slices of the batch whose im2col matrices hold about _IM2COL_BYTES each."""
    step = max(1, _IM2COL_BYTES // max(sample_bytes, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def conv_windows(xp, x, kernel, stride, padding, dilation, compute):
    """The strided windows (N, C, *out, *K) of x padded, in the compute dtype (a view of the padded copy)."""
    return windows(xp, pad_array(xp, x.astype(compute, copy=False), padding, padding), kernel, stride, dilation)


def _window_slices(xp, x, kernel, stride, padding, dilation, compute, extra_bytes=0):
    """(slice, windows of that slice of the batch) pairs, each slice's temporaries (its padded copy, its im2col
    matrix, plus `extra_bytes` per sample of the caller's own) about _IM2COL_BYTES: a convolution's scratch memory
    stays bounded whatever the batch size."""
    out = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                for s, k, st, p, d in zip(x.shape[2:], kernel, stride, padding, dilation))
    padded = math.prod(s + 2 * p for s, p in zip(x.shape[2:], padding)) if any(padding) else 0
    sample = x.shape[1] * (math.prod(kernel) * math.prod(out) + padded) * compute.itemsize + extra_bytes
    for part in _batch_slices(x.shape[0], sample):
        yield part, conv_windows(xp, x[part], kernel, stride, padding, dilation, compute)


def im2col_matrix(win, groups, buffer):
    """Windows (m, C, *out, *K) copied into the front of a flat `buffer` (of the compute dtype, large enough) as one
    matrix per group, (groups, C/groups · K, m · P): row (c, tap), column (sample, output position), output
    positions innermost (runs of neighbouring pixels)."""
    m, c = win.shape[:2]
    nd = (win.ndim - 2) // 2
    source = win.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd)))
    matrix = buffer[:source.size].reshape(source.shape)
    matrix[...] = source
    return matrix.reshape(groups, c // groups * math.prod(win.shape[2 + nd:]), -1)


def _scratch(xp, dtype, *sizes):
    """Flat uninitialised arrays of these many elements of dtype, all views of one buffer: one large request
    instead of several smaller ones keeps the C heap from returning its top to the system after each call and
    faulting the pages in again on the next (~750 page faults per CNN training step with two requests)."""
    buffer = xp.empty(sum(sizes), dtype)
    ends = list(itertools.accumulate(sizes))
    return [buffer[end - size:end] for size, end in zip(sizes, ends)]


def correlate(xp, x, w, stride, padding, dilation, groups, compute, out):
    """Write into out (N, O, *out) the cross-correlation of x (N, C, *S) with w (O, C/groups, *K): im2col over a
    slice of the batch at a time, then one GEMM per group, (O/groups, C/groups · K) @ (C/groups · K, m · P). A few
    large products run BLAS several times faster than one per sample on the small images of a typical CNN; the
    price is a copy of each slice's output from (O, m, P) into (m, O, P). The im2col matrix and the product of
    each slice go into one scratch buffer sized by the first (largest) slice and reused by the others; the
    product counts in the slice's size (a first conv with few input channels makes it larger than the columns)."""
    o = w.shape[0]
    mat = w.astype(compute, copy=False).reshape(groups, o // groups, -1)
    positions = math.prod(out.shape[2:])
    cols = products = None
    for part, win in _window_slices(xp, x, w.shape[2:], stride, padding, dilation, compute,
                                    o * positions * compute.itemsize):
        m = part.stop - part.start
        if cols is None:
            cols, products = _scratch(xp, compute, m * x.shape[1] * math.prod(w.shape[2:]) * positions,
                                      m * o * positions)
        product = products[:o * m * positions].reshape(groups, o // groups, m * positions)
        xp.matmul(mat, im2col_matrix(win, groups, cols), out=product)
        del win
        xp.copyto(out[part], product.reshape((o, m) + out.shape[2:]).swapaxes(0, 1), casting="unsafe")


def weight_gradient(xp, x, grad, kernel, stride, padding, dilation, groups, compute):
    """The gradient of correlate()'s weight, (O, C/groups, *K): per slice of the batch, grad as (O/groups, m · P)
    per group times the input's im2col matrix transposed (BLAS reads it in place), summed over the slices. The
    im2col matrix and grad's slice regrouped go into one scratch buffer reused by every slice."""
    o = grad.shape[1]
    rows = x.shape[1] // groups * math.prod(kernel)
    shape = (o, x.shape[1] // groups) + tuple(kernel)
    total = xp.zeros((groups, o // groups, rows), compute)
    product = xp.empty_like(total)
    positions = math.prod(grad.shape[2:])
    cols = regrouped = None
    for i, (part, win) in enumerate(_window_slices(xp, x, kernel, stride, padding, dilation, compute,
                                                   o * positions * compute.itemsize)):
        m = part.stop - part.start
        if cols is None:
            cols, regrouped = _scratch(xp, compute, m * rows * groups * positions, m * o * positions)
        g = regrouped[:o * m * positions].reshape((o, m) + grad.shape[2:])
        xp.copyto(g, grad[part].swapaxes(0, 1), casting="unsafe")
        matrix = im2col_matrix(win, groups, cols).swapaxes(1, 2)
        del win
        xp.matmul(g.reshape(groups, o // groups, -1), matrix, out=total if i == 0 else product)
        if i:
            total += product
    return total.reshape(shape)


def transposed_convolution(xp, x, w, out_sizes, stride, padding, dilation, groups, compute):
    """The adjoint of correlate() in x: per slice of the batch, each input pixel's contribution to every output
    tap through one GEMM per group (columns), then col2im adds the columns into the output."""
    n, cin = x.shape[:2]
    og = w.shape[1]
    kernel = w.shape[2:]
    nd = len(kernel)
    mat = w.astype(compute, copy=False).reshape(groups, cin // groups, -1).transpose(0, 2, 1)
    rows = x.astype(compute, copy=False).reshape(n, groups, cin // groups, -1).transpose(1, 2, 0, 3)
    result = xp.empty((n, groups * og) + tuple(out_sizes), compute)
    sample_bytes = groups * og * math.prod(kernel) * math.prod(x.shape[2:]) * compute.itemsize
    for part in _batch_slices(n, sample_bytes):
        m = part.stop - part.start
        cols = xp.matmul(mat, rows[:, :, part].reshape(groups, cin // groups, -1))  # (groups, og·K, m·S)
        cols = cols.reshape((groups * og,) + kernel + (m,) + x.shape[2:])
        cols = cols.transpose((1 + nd, 0) + tuple(range(1, 1 + nd)) + tuple(range(2 + nd, cols.ndim)))
        result[part] = col2im_array(xp, cols, out_sizes, kernel, dilation, padding, stride, compute)
    return result


def _as_correlation_weight(w, groups):
    """A stride-1 transposed convolution is a plain correlation ("full" padding) with the kernel flipped and its
    in/out channels swapped per group: (Cin, Cout/g, *K) -> (Cout, Cin/g, *K). This beats col2im's one strided add
    per kernel tap."""
    cin, og = w.shape[:2]
    kernel = w.shape[2:]
    swapped = w.reshape((groups, cin // groups, og) + kernel).swapaxes(1, 2).reshape((groups * og, cin // groups)
                                                                                      + kernel)
    return swapped[(Ellipsis,) + (slice(None, None, -1),) * len(kernel)]


def _correlation_is_cheaper(w, groups, stride, output_padding):
    """For a stride-1 transposed convolution: im2col copies in_channels x taps values per pixel, col2im adds
    out_channels x taps; the correlation wins unless the output has far fewer channels (a first layer's input
    gradient, say 16 -> 3), as measured on 2-core machines."""
    return all(s == 1 for s in stride) and not any(output_padding) and 2 * w.shape[1] * groups >= w.shape[0]


def _conv_kernel(backend, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    out = _conv_meta(backend, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    if out.numel() == 0:
        return out
    xp = backend.xp
    x, w, dst = backend.array(input), backend.array(weight), backend.array(out)
    compute = _compute_dtype(x.dtype)
    if transposed and _correlation_is_cheaper(w, groups, stride, output_padding):
        correlate(xp, x, _as_correlation_weight(w, groups), stride,
                  tuple(d * (k - 1) - p for k, p, d in zip(w.shape[2:], padding, dilation)), dilation, groups,
                  compute, dst)
    elif transposed:
        dst[...] = transposed_convolution(xp, x, w, out._size[2:], stride, padding, dilation, groups, compute)
    else:
        correlate(xp, x, w, stride, padding, dilation, groups, compute, dst)
    if bias is not None:
        dst += backend.array(bias).reshape((-1,) + (1,) * (dst.ndim - 2))
    return out


custom("convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
       "bool transposed, int[] output_padding, int groups) -> Tensor", _conv_kernel, _conv_meta)


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    return _op("convolution", input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), transposed,
               tuple(output_padding), groups)


def _batched(name, input, nd):
    """(input with a batch dim, whether one was added): convNd takes (C, *S) or (N, C, *S)."""
    if not isinstance(input, TensorImpl):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    if input.dim() != nd + 2:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {shape_str(input._size)}")
    return input, False


def _same_padding(input, weight, stride, dilation, name):
    """padding='same': total padding d*(k-1) per dim; an odd total puts the extra element on the right, as
    PyTorch does (with an explicit pad of the input)."""
    if any(s != 1 for s in stride):
        raise RuntimeError(f"padding='same' is not supported for strided convolutions (in {name}: use stride=1 or "
                           "give the padding as numbers)")
    totals = [d * (k - 1) for k, d in zip(weight._size[2:], dilation)]
    extra = [t % 2 for t in totals]
    if any(extra):
        pads = []
        for e in reversed(extra):
            pads += [0, e]
        input = _op("constant_pad_nd", input, tuple(pads), 0)
    return input, tuple(t // 2 for t in totals)


def _conv_frontend(nd):
    name = f"conv{nd}d"

    def conv(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        x, unbatched = _batched(name, input, nd)
        stride, dilation = _tuple(stride, nd, "stride", name), _tuple(dilation, nd, "dilation", name)
        if isinstance(padding, str):
            if padding == "valid":
                padding = (0,) * nd
            elif padding == "same":
                x, padding = _same_padding(x, weight, stride, dilation, name)
            else:
                raise RuntimeError(f"Invalid padding string: '{padding}' (in {name}: use 'same', 'valid' or "
                                   "numbers)")
        padding = _tuple(padding, nd, "padding", name)
        out = _convolution(x, weight, bias, stride, padding, dilation, False, (0,) * nd, groups)
        return out.squeeze(0) if unbatched else out
    conv.__name__ = conv.__qualname__ = name
    conv.__doc__ = (f"{name}(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1): the "
                    f"{nd}-d cross-correlation of input (N, C, ...) or (C, ...) with weight (out, C/groups, ...).")
    return conv


def _conv_transpose_frontend(nd):
    name = f"conv_transpose{nd}d"

    def conv_transpose(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        x, unbatched = _batched(name, input, nd)
        out = _convolution(x, weight, bias, _tuple(stride, nd, "stride", name), _tuple(padding, nd, "padding", name),
                           _tuple(dilation, nd, "dilation", name), True,
                           _tuple(output_padding, nd, "output_padding", name), groups)
        return out.squeeze(0) if unbatched else out
    conv_transpose.__name__ = conv_transpose.__qualname__ = name
    conv_transpose.__doc__ = (f"{name}(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, "
                              f"dilation=1): the gradient of conv{nd}d with respect to its input; weight is "
                              "(in, out/groups, ...).")
    return conv_transpose


conv1d, conv2d, conv3d = (composite(f"conv{n}d", _conv_frontend(n), method=False) for n in (1, 2, 3))
conv_transpose1d, conv_transpose2d, conv_transpose3d = (
    composite(f"conv_transpose{n}d", _conv_transpose_frontend(n), method=False) for n in (1, 2, 3))


# ---- convolution gradients: convolutions themselves ------------------------------------------------------------

def conv_weight_grad(input, grad, kernel, stride, padding, dilation, groups):
    """sum over n, y of grad[n, o, y] * padded_input[n, c, y*stride + k*dilation], shaped (O, C/groups, *kernel):
    a correlation of the input's channels (as the batch) with grad's channels (as the kernels), stride and
    dilation swapping roles."""
    n, c = input._size[:2]
    o = grad._size[1]
    spatial = input._size[2:]
    nd = len(spatial)
    cg, og = c // groups, o // groups
    x = input.reshape((n, groups, cg) + spatial).permute((2, 1, 0) + tuple(range(3, 3 + nd)))
    x = x.reshape((cg, groups * n) + spatial)
    g = grad.reshape((n, groups, og) + grad._size[2:]).permute((1, 2, 0) + tuple(range(3, 3 + nd)))
    g = g.reshape((o, n) + grad._size[2:])
    full = _convolution(x, g, None, dilation, padding, stride, False, (0,) * nd, groups)
    for d, k in enumerate(kernel):
        if full._size[2 + d] != k:
            full = full.narrow(2 + d, 0, k)
    return full.transpose(0, 1).contiguous()


def conv_input_grad(grad, weight, meta, stride, padding, dilation, transposed, output_padding, groups):
    """The gradient of a convolution's input: the convolution transposed (and of a transposed one, the plain
    convolution), sized back to the input."""
    nd = len(stride)
    if transposed:
        out = _convolution(grad, weight, None, stride, padding, dilation, False, (0,) * nd, groups)
        for d, n in enumerate(meta.size[2:]):
            if out._size[2 + d] != n:
                out = out.narrow(2 + d, 0, n)
        return out
    made = _conv_shape(grad, weight, stride, padding, dilation, True, (0,) * nd, groups)
    extra = tuple(n - m for n, m in zip(meta.size[2:], made[2:]))
    return _convolution(grad, weight, None, stride, padding, dilation, True, extra, groups)


def conv_weight_backward(grad, input, weight_meta, stride, padding, dilation, transposed, groups):
    kernel = weight_meta.size[2:]
    if transposed:  # the adjoint pairing: input and grad trade places
        input, grad = grad, input
    backend = eager_backend(input, grad)
    if backend is not None and grad._size[2:] == tuple(
            (n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, s, p, d in zip(input._size[2:], kernel, stride, padding,
                                                                           dilation)):
        out = backend.empty(weight_meta.size, input.dtype)
        backend.array(out)[...] = weight_gradient(backend.xp, backend.array(input), backend.array(grad), kernel,
                                                  stride, padding, dilation, groups, backend.array(out).dtype)
        return out
    return conv_weight_grad(input, grad, kernel, stride, padding, dilation, groups)


def conv_bias_backward(grad):
    return grad.sum((0,) + tuple(range(2, grad.dim())))


# ---- padding ---------------------------------------------------------------------------------------------------

def _pad_meta(self, pad, value=0):
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)} (constant_pad_nd: give "
                           "(left, right) pairs, last dim first)")
    if len(pad) // 2 > self.dim():
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. "
                           f"Pad length is {len(pad)} while the input has {self.dim()} dimensions.")
    size = list(self._size)
    for i in range(len(pad) // 2):
        d = self.dim() - 1 - i
        size[d] += pad[2 * i] + pad[2 * i + 1]
        if size[d] < 0:
            raise RuntimeError(f"The input size {self._size[d]}, plus negative padding {pad[2 * i]} and "
                               f"{pad[2 * i + 1]} resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of your input.")
    return tuple(size), self.dtype


def _pad_impl(xp, out, dtype, self, pad, value=0):
    k = len(pad) // 2
    lo = tuple(pad[2 * i] for i in reversed(range(k)))
    hi = tuple(pad[2 * i + 1] for i in reversed(range(k)))
    out[...] = pad_array(xp, self, lo, hi, value)


structured("constant_pad_nd(Tensor self, int[] pad, Scalar value=0) -> Tensor", _pad_meta, _pad_impl,
           inplace=False, out=False, method=False)


def pad_backward(grad, pad):
    """constant_pad_nd's gradient: the padding cut off again (a negative pad crops)."""
    return _op("constant_pad_nd", grad, tuple(-p for p in pad), 0)


_PAD_INDEX = {
    "reflect": lambda i, n: (n - 1) - ((n - 1) - i.abs()).abs(),
    "replicate": lambda i, n: i.clamp(0, n - 1),
    "circular": lambda i, n: i.remainder(n),
}


def _check_pad_mode(input, pad, mode):
    k = len(pad) // 2
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if k > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if not 1 <= k <= 3 or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: "
            "padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 "
            "dimensions)")
    for i in range(k):
        d = input.dim() - 1 - i
        lo, hi, n = pad[2 * i], pad[2 * i + 1], input._size[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {d} of input {shape_str(input._size)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError(f"Padding value causes wrapping around more than once. (pad: circular padding "
                               f"({lo}, {hi}) of dimension {d} of size {n})")


def _index_pad(input, pad, mode):
    """reflect/replicate/circular: each padded dim gathered through an index that folds positions back into the
    input (an index op, so the gradient sums the copies, to any order)."""
    out = input
    for i in range(len(pad) // 2):
        d = input.dim() - 1 - i
        lo, hi, n = pad[2 * i], pad[2 * i + 1], input._size[d]
        start = 0
        if mode == "circular":  # a negative amount crops first; the wrap is around what is left
            start = max(-lo, 0)
            n -= start + max(-hi, 0)
            lo, hi = max(lo, 0), max(hi, 0)
        positions = _op("arange", -lo, n + hi, 1, dt.int64, None, input.device, None, False)
        index = _PAD_INDEX[mode](positions, n) + start
        out = _op("index.Tensor", out, [None] * d + [index])
    return out


def pad(input, pad, mode="constant", value=None):
    """pad(input, pad, mode='constant', value=None): pad the last len(pad)/2 dims by (left, right) pairs, last dim
    first, with `value` or by reflecting, replicating or wrapping the edges (mode 'reflect', 'replicate',
    'circular'). Negative amounts crop."""
    pad = tuple(int(p) for p in pad)
    if mode == "constant":
        return _op("constant_pad_nd", input, pad, 0 if value is None else value)
    if mode not in _PAD_INDEX:
        raise NotImplementedError(f"Unrecognised padding mode {mode} (pad: use 'constant', 'reflect', 'replicate' "
                                  "or 'circular')")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_pad_mode(input, pad, mode)
    return _index_pad(input, pad, mode)



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
    return -np.inf if np_dtype.kind in "fV" else np.iinfo(np_dtype).min


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
    maximum, or the last nan. One pass per kernel tap over the strided windows (no copy of the windows)."""
    shape, (kernel, stride, padding, dilation) = _max_pool_meta_shapes(self, kernel_size, stride, padding, dilation,
                                                                       ceil_mode)
    values, indices = backend.empty(shape, self.dtype), backend.empty(shape, dt.int64)
    xp = backend.xp
    a = backend.array(self)
    width = a.shape[-1]
    win = pool_windows(xp, a, kernel, stride, padding, dilation, shape[-2:], _lowest(a.dtype))
    taps = [((i, j), i * dilation[0] * width + j * dilation[1]) for i in range(kernel[0]) for j in range(kernel[1])]
    best = backend.array(values)
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
    offset = backend.array(indices)  # each window's tap offset first, then its corner added in place
    xp.asarray([step for _, step in taps], dtype=np.int64).take(tap, out=offset)
    if a.dtype.kind in "fcV" and xp.isnan(best).any():
        for (i, j), step in taps:
            xp.copyto(offset, step, where=xp.isnan(win[..., i, j]))
    rows = xp.arange(shape[-2]) * stride[0] - padding[0]
    cols = xp.arange(shape[-1]) * stride[1] - padding[1]
    offset += rows[:, None] * width + cols
    return values, indices


custom("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
       "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", _max_pool_kernel, _max_pool_meta,
       method=False)


def max_pool_backward(grad, indices, meta, kernel_size=None, stride=None, dilation=1):
    """Each output's gradient added at its maximum's place in the input (index_put with accumulate, so double
    backward gathers). Without create_graph, windows that cannot overlap (stride ≥ dilated kernel: every input
    element is the maximum of at most one window) scatter with one array write (`eager_backend`)."""
    backend = eager_backend(grad) if kernel_size is not None else None
    if backend is not None and indices._backend is backend and grad.is_contiguous() and indices.is_contiguous():
        kernel, stride, _, dilation = _pool_args("max_pool2d", kernel_size, stride, 0, dilation)
        if all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation)):
            xp = backend.xp
            out = backend.empty(meta.size, grad.dtype)
            flat = backend.array(out).reshape(-1)
            flat[...] = 0
            plane = meta.size[-2] * meta.size[-1]
            where = backend.array(indices).reshape(-1, indices._size[-2] * indices._size[-1])
            where = where + (xp.arange(where.shape[0]) * plane)[:, None]
            flat[where.reshape(-1)] = backend.array(grad).reshape(-1)
            return out
    plane = meta.size[-2] * meta.size[-1]
    lead = math.prod(meta.size[:-2])
    base = _op("arange", lead, None, 1, dt.int64, None, indices.device, None, False)
    flat = indices + (base * plane).view(meta.size[:-2] + (1, 1))
    zeros = _op("zeros", (lead * plane,), grad.dtype, None, grad.device, None, False, None)
    return zeros.index_put((flat.reshape(-1),), grad.reshape(-1), True).view(meta.size)


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
    if dtype.kind in "iu":  # integer division truncates toward zero, as in C
        out[...] = xp.sign(total) * (xp.abs(total) // divisor)
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


def _output_size(input, output_size, n):
    """An int or n entries, where None keeps the input's size."""
    if isinstance(output_size, int):
        return (output_size,) * n
    sizes = tuple(output_size)
    if input.dim() <= len(sizes):
        raise ValueError(f"Input dimension should be at least {len(sizes) + 1} (got input of size "
                         f"{shape_str(input._size)} for output_size {sizes})")
    if len(sizes) == 1:
        sizes = sizes * n
    return tuple(input._size[input.dim() - len(sizes) + i] if o is None else int(o) for i, o in enumerate(sizes))


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


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _op("adaptive_max_pool2d", input, _output_size(input, output_size, 2))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum over output_size adaptive windows of the last two dims; with return_indices, also its flat
    index in the input plane."""
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


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


# ---- im2col / col2im (unfold / fold) ---------------------------------------------------------------------------

def _pairs(name, kernel_size, dilation, padding, stride):
    kernel, dilation, padding, stride = (_tuple(v, 2, what, name) for v, what in (
        (kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    for what, v, low in (("kernel size", kernel, 1), ("stride", stride, 1), ("dilation", dilation, 1),
                         ("padding", padding, 0)):
        if min(v) < low:
            word = "greater than zero" if low else "non-negative"
            raise RuntimeError(f"{what} should be {word}, but got {what.replace(' ', '_')}_height: {v[0]} "
                               f"{what.replace(' ', '_')}_width: {v[1]}")
    return kernel, dilation, padding, stride


def _blocks(size, kernel, dilation, padding, stride):
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in zip(size, kernel, dilation, padding,
                                                                                 stride))


def _im2col_args(self, kernel_size, dilation, padding, stride):
    kernel, dilation, padding, stride = _pairs("im2col", kernel_size, dilation, padding, stride)
    if self.dim() not in (3, 4) or 0 in self._size[-3:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {shape_str(self._size)}")
    blocks = _blocks(self._size[-2:], kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(self._size[-2:])}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding "
                           f"blocks as {blocks}, but its components must be at least one.")
    return kernel, dilation, padding, stride, blocks


def _im2col_meta(self, kernel_size, dilation, padding, stride):
    kernel, _, _, _, blocks = _im2col_args(self, kernel_size, dilation, padding, stride)
    return self._size[:-3] + (self._size[-3] * kernel[0] * kernel[1], blocks[0] * blocks[1]), self.dtype


def _im2col_impl(xp, out, dtype, self, kernel_size, dilation, padding, stride):
    kernel, dilation, padding, stride = _pairs("im2col", kernel_size, dilation, padding, stride)
    win = windows(xp, pad_array(xp, self, padding, padding), kernel, stride, dilation)
    lead = win.ndim - 4  # (..., C, oh, ow, kh, kw) -> (..., C, kh, kw, oh, ow)
    order = tuple(range(lead - 1)) + (lead - 1, lead + 2, lead + 3, lead, lead + 1)
    out[...] = win.transpose(order).reshape(out.shape)


structured("im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor",
           _im2col_meta, _im2col_impl, inplace=False, method=False)


def _col2im_geometry(output_size, kernel_size, dilation, padding, stride):
    output_size = _tuple(output_size, 2, "output_size", "col2im")
    kernel, dilation, padding, stride = _pairs("col2im", kernel_size, dilation, padding, stride)
    return output_size, kernel, dilation, padding, stride, _blocks(output_size, kernel, dilation, padding, stride)


def _col2im_meta(self, output_size, kernel_size, dilation, padding, stride):
    geometry = _col2im_geometry(output_size, kernel_size, dilation, padding, stride)
    output_size, kernel, dilation, padding, stride, blocks = geometry
    if self.dim() not in (2, 3) or 0 in self._size[-2:]:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {shape_str(self._size)}")
    cols = self._size[-2]
    if cols % (kernel[0] * kernel[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={cols} and kernel_size={kernel}.")
    if min(blocks) < 1 or blocks[0] * blocks[1] != self._size[-1]:
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, "
                           f"but got input.size(2)={self._size[-1]}.")
    return self._size[:-2] + (cols // (kernel[0] * kernel[1]),) + output_size, self.dtype


def _col2im_impl(xp, out, dtype, self, output_size, kernel_size, dilation, padding, stride):
    output_size, kernel, dilation, padding, stride, blocks = _col2im_geometry(output_size, kernel_size, dilation,
                                                                              padding, stride)
    cols = self.reshape(self.shape[:-2] + (self.shape[-2] // math.prod(kernel),) + kernel + blocks)
    out[...] = col2im_array(xp, cols, output_size, kernel, dilation, padding, stride, _compute_dtype(dtype))


structured("col2im(Tensor self, int[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, "
           "int[2] stride) -> Tensor", _col2im_meta, _col2im_impl, inplace=False, method=False)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding blocks (im2col): (N, C, H, W) -> (N, C*kh*kw, L), channel-major, blocks row-major."""
    if input.dim() < 3:  # PyTorch reads input.size(2) before any check
        raise IndexError(f"Dimension out of range (expected to be in range of [-{input.dim()}, {input.dim() - 1}], "
                         f"but got 2) (unfold takes (C, H, W) or (N, C, H, W) input, got {shape_str(input._size)})")
    return _op("im2col", input, _tuple(kernel_size, 2, "kernel_size", "unfold"), _tuple(dilation, 2, "dilation",
               "unfold"), _tuple(padding, 2, "padding", "unfold"), _tuple(stride, 2, "stride", "unfold"))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum sliding blocks back into an image (col2im), the adjoint of unfold: (N, C*kh*kw, L) -> (N, C, H, W)."""
    return _op("col2im", input, _tuple(output_size, 2, "output_size", "fold"),
               _tuple(kernel_size, 2, "kernel_size", "fold"), _tuple(dilation, 2, "dilation", "fold"),
               _tuple(padding, 2, "padding", "fold"), _tuple(stride, 2, "stride", "fold"))



# ---- pixel shuffle: a reshape, a permute and a copy ------------------------------------------------------------

def _shuffle_check(name, input, factor, word):
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with {input.dim()} "
                           "dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {word}, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): each channel group of r*r becomes an r x r block of pixels."""
    r = upscale_factor
    _shuffle_check("pixel_shuffle", input, r, "upscale_factor")
    *lead, c, h, w = input._size
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(n)) + tuple(n + i for i in (0, 3, 1, 4, 2)))
    return x.contiguous().view(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W): the inverse of pixel_shuffle."""
    r = downscale_factor
    _shuffle_check("pixel_unshuffle", input, r, "downscale_factor")
    *lead, c, h, w = input._size
    for what, size, d in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                               f"input.size({d})={size} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(n)) + tuple(n + i for i in (0, 2, 4, 1, 3)))
    return x.contiguous().view(tuple(lead) + (c * r * r, h // r, w // r))


composite("pixel_shuffle", pixel_shuffle, method=False)
composite("pixel_unshuffle", pixel_unshuffle, method=False)


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
    """Keys' cubic convolution weights (A = -0.75) for the four taps around a fractional offset t."""
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return (far(t + 1), near(t), near(1 - t), far(2 - t))


def interpolation_matrix(xp, n_in, n_out, mode, align_corners, scale, dtype):
    """(n_out, n_in): row i holds the weights output position i gives each input position along one dim."""
    if mode in ("nearest", "nearest-exact"):
        taps = [(_nearest_index(xp, n_in, n_out, scale, mode == "nearest-exact"), 1.0)]
    else:
        ratio = _source_scale(n_in, n_out, align_corners, scale)
        dst = xp.arange(n_out, dtype=dtype)
        src = dst * ratio if align_corners else (dst + 0.5) * ratio - 0.5
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
    elif self.dtype.category != dt.FLOATING:
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
    compute = _compute_dtype(out.dtype)
    a = a.astype(compute, copy=False)
    for d in range(nd):
        matrix = interpolation_matrix(xp, in_sizes[d], out_sizes[d], mode, align_corners,
                                      scales[d] if scales else None, compute)
        a = along(xp, a, matrix.T if transpose else matrix, a.ndim - nd + d)
    out[...] = a


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
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by lantern (use antialias=False)")
    if mode == "area":
        return adaptive_avg_pool1d(input, output_size) if nd == 1 else adaptive_avg_pool2d(input, output_size)
    if recompute_scale_factor:
        scales = None
    return _op("_upsample", input, output_size, mode, bool(align_corners), scales)


def upsample_node_name(args):
    return f"Upsample{_NODE_MODES[args[2]]}{args[0].dim() - 2}DBackward0"



# ---- affine_grid / grid_sample: composites of differentiable ops --------------------------------------------------

def _normalized_positions(n, align_corners, like):
    """Pixel centres in [-1, 1] (align_corners: the corner pixels' centres are -1 and 1)."""
    if n <= 1:
        return _op("zeros", (n,), like.dtype, None, like.device, None, False, None)
    i = _op("arange", n, None, 1, like.dtype, None, like.device, None, False)
    return (i * 2 - (n - 1)) / (n - 1 if align_corners else n)


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


def _unnormalize(coord, n, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (n - 1)
    return ((coord + 1) * n - 1) / 2


def _reflect(coord, low2, high2):
    """PyTorch's reflect_coordinates: fold coord into [low2/2, high2/2] by mirroring at the ends."""
    if low2 == high2:
        return coord * 0
    low, span = low2 / 2, (high2 - low2) / 2
    distance = (coord - low).abs()
    flips = (distance.detach() / span).floor()
    extra = distance.fmod(span)
    even = flips.fmod(2) == 0
    return _op("where", even, extra + low, span - extra + low)


def _fold_in(coord, n, padding_mode, align_corners):
    """A pixel coordinate folded into the input by the padding mode (PyTorch's compute_coordinates)."""
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (n - 1)) if align_corners else _reflect(coord, -1, 2 * n - 1)
    if padding_mode in ("border", "reflection"):
        coord = coord.clamp(0, n - 1)
    return coord


def _tap(input, iy, ix, padding_mode):
    """input (N, C, H, W) read at integer pixel positions iy, ix (N, Ho, Wo): (N, Ho, Wo, C); outside the input
    is 0, or (border/reflection) the nearest edge pixel."""
    n, _, h, w = input._size
    inside = None
    if padding_mode == "zeros":
        inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
    batch = _op("arange", n, None, 1, dt.int64, None, input.device, None, False).view(n, 1, 1)
    values = _op("index.Tensor", input, [batch, None, iy.clamp(0, h - 1), ix.clamp(0, w - 1)])
    return values if inside is None else values * inside.unsqueeze(-1).to(values.dtype)


def _round_half_even(x):
    r = (x + 0.5).floor()
    return r - ((r - x == 0.5) & (r.fmod(2) != 0)).to(x.dtype)


def _cubic_taps(t):
    a = -0.75

    def near(x):
        return ((x * (a + 2) - (a + 3)) * x) * x + 1

    def far(x):
        return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a
    return (far(t + 1), near(t), near(1 - t), far(2 - t))


def _check_grid_sample(input, grid, mode, padding_mode):
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype.legacy} and grid has {grid.dtype.legacy}")
    if input.dim() != 4 or grid.dim() != 4:
        raise NotImplementedError(f"grid_sample: lantern supports 4-D input and grid only (got input of size "
                                  f"{shape_str(input._size)} and grid of size {shape_str(grid._size)})")
    if grid._size[-1] != 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes "
                           f"{shape_str(grid._size)}")
    if input._size[0] != grid._size[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {shape_str(input._size)} and grid with sizes {shape_str(grid._size)}")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H, W) at grid (N, Ho, Wo, 2) positions (x, y in [-1, 1]): (N, C, Ho, Wo). Written with
    differentiable ops, so both input and grid get gradients, to any order."""
    _check_grid_sample(input, grid, mode, padding_mode)
    h, w = input._size[2:]
    x = grid.select(-1, 0)
    y = grid.select(-1, 1)
    align_corners = bool(align_corners)
    ix, iy = _unnormalize(x, w, align_corners), _unnormalize(y, h, align_corners)
    if mode != "bicubic":  # bicubic folds each tap instead, as PyTorch's does
        ix, iy = _fold_in(ix, w, padding_mode, align_corners), _fold_in(iy, h, padding_mode, align_corners)
    if mode == "nearest":
        out = _tap(input, _round_half_even(iy.detach()).to(dt.int64), _round_half_even(ix.detach()).to(dt.int64),
                   padding_mode)
        out = out + (ix * 0 + iy * 0).unsqueeze(-1)  # the grid's gradient is zero, not absent, as in PyTorch
    else:
        x0, y0 = ix.detach().floor(), iy.detach().floor()
        tx, ty = ix - x0, iy - y0
        x0, y0 = x0.to(dt.int64), y0.to(dt.int64)
        if mode == "bilinear":
            wx, wy, offsets = (1 - tx, tx), (1 - ty, ty), (0, 1)
        else:
            wx, wy, offsets = _cubic_taps(tx), _cubic_taps(ty), (-1, 0, 1, 2)
        out = None
        for i, dy in enumerate(offsets):
            for j, dx in enumerate(offsets):
                cy, cx = y0 + dy, x0 + dx
                if mode == "bicubic" and padding_mode != "zeros":
                    cy = _fold_in(cy.to(grid.dtype), h, padding_mode, align_corners).to(dt.int64)
                    cx = _fold_in(cx.to(grid.dtype), w, padding_mode, align_corners).to(dt.int64)
                term = _tap(input, cy, cx, padding_mode) * (wy[i] * wx[j]).unsqueeze(-1)
                out = term if out is None else out + term
    return out.permute(0, 3, 1, 2).contiguous()



# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

_HELPERS = {"conv_input_grad": conv_input_grad, "conv_weight_backward": conv_weight_backward,
            "conv_bias_backward": conv_bias_backward, "pad_backward": pad_backward,
            "max_pool_backward": max_pool_backward, "call_op": _op}

derivative("convolution", helpers=_HELPERS,
           input="conv_input_grad(grad, conj(weight), input_meta, stride, padding, dilation, transposed, "
                 "output_padding, groups)",
           weight="conv_weight_backward(grad, conj(input), weight_meta, stride, padding, dilation, transposed, "
                  "groups)",
           bias="conv_bias_backward(grad)")
derivative("constant_pad_nd", helpers=_HELPERS, self="pad_backward(grad, pad)")
derivative("max_pool2d_with_indices", name="MaxPool2DWithIndicesBackward0", helpers=_HELPERS,
           self="max_pool_backward(grad, result1, self_meta, kernel_size, stride, dilation)")
derivative("avg_pool2d", name="AvgPool2DBackward0", helpers=_HELPERS,
           self="call_op('avg_pool2d_backward', grad, self_meta.size, kernel_size, stride, padding, ceil_mode, "
                "count_include_pad, divisor_override)")
derivative("avg_pool2d_backward", name="AvgPool2DBackwardBackward0", helpers=_HELPERS,
           grad_output="call_op('avg_pool2d', grad, kernel_size, stride, padding, ceil_mode, count_include_pad, "
                       "divisor_override)")
derivative("_adaptive_avg_pool2d", name="AdaptiveAvgPool2DBackward0", helpers=_HELPERS,
           self="call_op('_adaptive_avg_pool2d_backward', grad, self_meta.size)")
derivative("_adaptive_avg_pool2d_backward", name="AdaptiveAvgPool2DBackwardBackward0", helpers=_HELPERS,
           grad_output="call_op('_adaptive_avg_pool2d', grad, grad_output_meta.size[-2:])")
derivative("adaptive_max_pool2d", name="AdaptiveMaxPool2DBackward0", helpers=_HELPERS,
           self="max_pool_backward(grad, result1, self_meta)")
derivative("im2col", helpers=_HELPERS, name="Im2ColBackward0",
           self="call_op('col2im', grad, self_meta.size[-2:], kernel_size, dilation, padding, stride)")
derivative("col2im", helpers=_HELPERS, name="Col2ImBackward0",
           self="call_op('im2col', grad, kernel_size, dilation, padding, stride)")
derivative("_upsample", helpers=_HELPERS, name=upsample_node_name,
           self="call_op('_upsample_backward', grad, self_meta.size, mode, align_corners, scales)")
derivative("_upsample_backward", helpers=_HELPERS, name="UpsampleBackwardBackward0",
           grad_output="call_op('_upsample', grad, grad_output_meta.size[2:], mode, align_corners, scales)")
