"""Convolution: the one `convolution` op (ATen's) behind conv1d/2d/3d and conv_transpose1d/2d/3d.

Every name in __all__ is in lantern.nn.functional and, as in PyTorch's torch namespace, registered as a composite
(lantern.conv2d exists too).

The `convolution` op does every conv: 1-3 spatial dims, stride, padding, dilation, groups, transposed. Its kernel
is im2col: strided windows over the padded input (np.lib.stride_tricks.as_strided, no copy; see nn_windows.py),
copied once into a matrix, then one BLAS GEMM per group, a slice of the batch at a time (a few MiB of columns). A
transposed convolution is one GEMM into columns, then col2im (a strided add per kernel tap). Both gradients of a
convolution are convolutions again, so double backward needs nothing more; without create_graph the weight
gradient is one GEMM per slice instead (a named specialisation). With numba, 2-d float convolutions build their
columns and run col2im in compiled loops (nn_conv_numba.py). The derivative sits at the end of this file.
A complex convolution is three real ones (Gauss's trick), as PyTorch's conv frontends compute it.

Padding, pooling, unfold/fold, pixel shuffle and interpolation/grid sampling live beside it in nn_padding.py,
nn_pooling.py, nn_fold.py and nn_sampling.py.

>>> F = lantern.nn.functional
>>> F.conv2d(lantern.arange(16.).view(1, 1, 4, 4), lantern.ones(1, 1, 2, 2)).view(3, 3).tolist()
[[10.0, 14.0, 18.0], [26.0, 30.0, 34.0], [42.0, 46.0, 50.0]]
"""
import itertools
import math
import threading

import numpy as np

from ..core import dtype as dt
from ..core.layout import channels_last, contiguous_format
from ..core import intra_op
from ..core.reference import mode, specialisation
from ..core.tensor_impl import TensorImpl
from .meta_util import shape_str
from .registry import composite, custom
from .shape import channels_last_strides
from .derivative import derivative
from .derivative_specialisation import on_float_arrays, specialise_derivative
from .nn_common import _op
from .nn_windows import _compute_dtype, _tuple, col2im_array, windows
from .numba_kernels import optional_kernels


__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


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
# product or regrouped gradient) about this many bytes, for each intra-op thread (each has its own scratch): large
# enough for BLAS to run near its peak (thousands of columns), small enough to stay in a core's L2 cache (2 MiB on
# the development machine's Xeon; 2 MiB slices took conv2d_fwd_bwd 17.2 ms of CPU at one thread against 12.9 with
# these, the CNN step the same) and to keep a convolution's scratch memory bounded whatever the batch size.
_IM2COL_BYTES = 1 << 20


def _thread_slices(n, sample_bytes):
    """Slices of the batch whose im2col matrices hold at most about _IM2COL_BYTES each, shared among the intra-op
    threads: as equal as the batch allows and, where there are several, an even number of them, so that two
    threads get the same work (64 samples in slices of at most 9 are 8 slices of 8, not 7 of 9 and one of 1).
    Larger slices come first (each thread's scratch is sized by the first, and ShiftedColumns.spread relies on a
    thread's slices not growing). They do not depend on the thread count, so neither does a sum over them (the
    weight gradient's)."""
    count = min(n, -(-n // max(1, _IM2COL_BYTES // max(sample_bytes, 1))))
    if 1 < count < n:
        count += count % 2
    if count == 0:
        return []
    size, larger = divmod(n, count)
    bounds = list(itertools.accumulate([0] + [size + 1] * larger + [size] * (count - larger)))
    return [slice(start, stop) for start, stop in zip(bounds, bounds[1:])]


def pad_into(xp, x, padding, buffer):
    """x (m, C, *S) padded with `padding` zeros on both sides of each spatial dim (a negative amount crops), in the
    dtype of the flat `buffer` and written into its front: what pad_array computes, without NumPy's pad (~100 µs of
    Python a call) or a new array. Only the interior is written: the buffer's border must be zero already (_Plan's
    scratch zeroes it once, and every slice of the batch has the same border). Returns the padded (m, C, *S')
    view."""
    x = x[(Ellipsis,) + tuple(slice(max(-p, 0), n - max(-p, 0)) for n, p in zip(x.shape[2:], padding))]
    lo = tuple(max(p, 0) for p in padding)
    sizes = tuple(n + 2 * p for n, p in zip(x.shape[2:], lo))
    padded = buffer[:math.prod(x.shape[:2]) * math.prod(sizes)].reshape(x.shape[:2] + sizes)
    xp.copyto(padded[(Ellipsis,) + tuple(slice(p, p + n) for p, n in zip(lo, x.shape[2:]))], x, casting="unsafe")
    return padded


class Columns:
    """The im2col layout of a convolution: the columns of a slice of the batch, (groups, C/groups · K, m · width),
    row (c, tap) and column (sample, output position), one column per output position (width = P positions);
    im2col_matrix copies the windows of the padded slice into them."""
    padded_copy = True  # whether matrix() reads the slice padded (image() writes it into a scratch buffer)

    def __init__(self, sizes, kernel, stride, padding, dilation, out):
        self.kernel, self.stride, self.dilation, self.out = tuple(kernel), tuple(stride), tuple(dilation), tuple(out)
        self.padding = tuple(padding)
        self.width = math.prod(out)

    def image(self, xp, x, buffer):
        """The slice x (m, C, *S) as matrix() reads it: padded, in the front of the flat `buffer` (pad_into)."""
        return pad_into(xp, x, self.padding, buffer)

    def matrix(self, xp, padded, groups, buffer):
        """The columns of a padded slice (m, C, *S'), in the front of the flat `buffer`."""
        return im2col_matrix(windows(xp, padded, self.kernel, self.stride, self.dilation), groups, buffer)

    def positions(self, xp, product):
        """A (m, O, *out) view of the output positions in a product (O, m · width)."""
        return product.reshape((-1, product.shape[-1] // self.width) + self.out).swapaxes(0, 1)

    def spread(self, xp, values, buffer, again=False):
        """values (m, O, *out) laid out as a product, (O, m · width), in the front of the flat `buffer`; `again`:
        the buffer holds such a product of the first (largest) slice already (only the positions are written)."""
        m, o = values.shape[:2]
        product = buffer[:o * m * self.width].reshape(o, -1)
        xp.copyto(self.positions(xp, product), values, casting="unsafe")
        return product


@specialisation(replaces="nn_conv.Columns (im2col: one column per output position, copied from the windows)",
                when="stride 1 (any padding, dilation or groups), fast paths on",
                parity_test="tests/test_nn_conv_threads.py::test_shifted_columns_match_im2col",
                ops=("convolution",))
class ShiftedColumns(Columns):
    """im2col for a stride-1 convolution as runs of memory: in the flattened padded image a window's tap k sits a
    fixed distance, shift_k, from the window's corner, so tap k's row of the columns is the flattened image from
    shift_k on, one long run per (channel, tap, sample) where the generic copy moves one image row at a time
    (2-3× faster for 14 × 14 images). The price is a column for each position between the last output of one
    image row and the first of the next ((S - out) · rows of them, ~10% more GEMM on a 3 × 3 kernel), whose
    values are garbage and are skipped when reading the product (and zeroed in the gradient a weight gradient
    multiplies them with)."""

    def __init__(self, sizes, kernel, stride, padding, dilation, out):
        super().__init__(sizes, kernel, stride, padding, dilation, out)
        self.steps = tuple(math.prod(sizes[d + 1:]) for d in range(len(sizes)))  # row-major element strides
        self.width = sum((o - 1) * s for o, s in zip(out, self.steps)) + 1       # corner of the last window + 1

    def matrix(self, xp, padded, groups, buffer):
        m, c = padded.shape[:2]
        flat = padded.reshape(m, c, -1)
        item = flat.itemsize
        taps = tuple(d * s * item for d, s in zip(self.dilation, self.steps))
        source = xp.lib.stride_tricks.as_strided(flat, (c,) + self.kernel + (m, self.width),
                                                 (flat.strides[1],) + taps + (flat.strides[0], item),
                                                 writeable=False)
        matrix = buffer[:source.size].reshape(source.shape)
        matrix[...] = source
        return matrix.reshape(groups, c // groups * math.prod(self.kernel), m * self.width)

    def positions(self, xp, product):
        o, m = product.shape[0], product.shape[-1] // self.width
        item = product.itemsize
        return xp.lib.stride_tricks.as_strided(
            product, (m, o) + self.out, (self.width * item, product.strides[0]) + tuple(s * item for s in self.steps))

    def spread(self, xp, values, buffer, again=False):
        """As Columns.spread, the garbage columns zero (a weight gradient multiplies them with the columns): zeroed
        unless `again`. Nothing writes them after that, and a garbage column is the same offset in each run of
        `width` whatever the slice's size, so a smaller slice after a larger one finds its garbage zero too."""
        m, o = values.shape[:2]
        if not again:
            buffer[:o * m * self.width] = 0
        return super().spread(xp, values, buffer)


@specialisation(replaces="nn_conv.Columns and ShiftedColumns (the slice padded into scratch with pad_into, then its "
                         "windows or shifted runs copied into the columns)",
                when="compiled_2d_applies(xp, nd, compute, x): 2-d, row-major float32/float64 NumPy input in the "
                     "compute dtype, numba installed, fast paths on",
                parity_test="tests/test_nn_conv_threads.py::test_compiled_columns_match_im2col",
                ops=("convolution",))
class CompiledColumns(Columns):
    """im2col for a 2-d convolution in one numba pass over the unpadded slice (nn_conv_numba.im2col_2d), zeros
    written where a window reaches into the padding: no padded copy of the slice, and, unlike ShiftedColumns, no
    garbage columns to multiply. The columns hold the same values as Columns' (the same products)."""
    padded_copy = False

    def image(self, xp, x, buffer):
        return x

    def matrix(self, xp, x, groups, buffer):
        m, c = x.shape[:2]
        columns = buffer[:c * math.prod(self.kernel) * m * self.width].reshape((c,) + self.kernel + (m,) + self.out)
        optional_kernels("nn_conv_numba").im2col_2d(x, columns, *self.padding, *self.stride, *self.dilation)
        return columns.reshape(groups, c // groups * math.prod(self.kernel), m * self.width)


def compiled_2d_applies(xp, nd, compute, array):
    """Whether nn_conv_numba's kernels serve a convolution whose input (CompiledColumns) or output (col2im_compiled)
    is `array`: fast paths on, 2 spatial dims, a row-major float32 or float64 NumPy array in the compute dtype, and
    numba installed."""
    return (mode.fast and nd == 2 and xp is np and array.dtype == compute and compute in (np.float32, np.float64)
            and array.flags.c_contiguous and optional_kernels("nn_conv_numba") is not None)


def column_layout(xp, x, kernel, stride, padding, dilation, compute):
    """The columns of a convolution of x (N, C, *S): CompiledColumns where it applies, else ShiftedColumns for
    stride 1 with fast paths on, else the generic im2col."""
    sizes = tuple(n + 2 * p for n, p in zip(x.shape[2:], padding))
    out = tuple((n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(sizes, kernel, stride, dilation))
    if compiled_2d_applies(xp, len(kernel), compute, x):
        layout = CompiledColumns
    else:
        layout = ShiftedColumns if mode.fast and all(s == 1 for s in stride) else Columns
    return layout(sizes, kernel, stride, padding, dilation, out)


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


# Each thread keeps its last scratch buffer of up to this many bytes for its next convolution: a new buffer's pages
# fault on first touch, and the C heap gave the backward's buffers back to the system after each call (~400 page
# faults per CNN training step, ~5% of its time). A larger buffer is made for the call and let go.
_KEPT_SCRATCH_BYTES = 8 << 20
_kept_scratch = threading.local()


def _scratch(xp, dtype, *sizes):
    """Flat uninitialised arrays of these many elements of dtype, all views of one buffer, which this thread reuses
    on its next call (_KEPT_SCRATCH_BYTES): for use within one convolution kernel call, whose results never view
    it. Every kernel initialises what it reads of its scratch in each call."""
    total = sum(sizes)
    kept = _kept_scratch.__dict__.setdefault("buffers", {})  # (array library, dtype) -> buffer
    buffer = kept.get((xp, dtype))
    if buffer is None or len(buffer) < total:
        buffer = xp.empty(total, dtype)
        if total * buffer.itemsize <= _KEPT_SCRATCH_BYTES:
            kept[xp, dtype] = buffer
    ends = list(itertools.accumulate(sizes))
    return [buffer[end - size:end] for size, end in zip(sizes, ends)]


class _Plan:
    """What correlate() and weight_gradient() share: the column layout, the batch slices and each slice's scratch
    sizes (padded copy, columns, product or regrouped gradient) for a convolution of x (N, C, *S) with a kernel K
    into `channels` output channels."""

    def __init__(self, xp, x, kernel, stride, padding, dilation, channels, compute):
        self.padding = padding
        self.columns = column_layout(xp, x, kernel, stride, padding, dilation, compute)
        padded = x.shape[1] * math.prod(n + 2 * p for n, p in zip(x.shape[2:], padding))
        if not self.columns.padded_copy:
            padded = 0
        column = x.shape[1] * math.prod(kernel) * self.columns.width
        self.per_sample = (padded, column, channels * self.columns.width)
        self.slices = _thread_slices(x.shape[0], sum(self.per_sample) * compute.itemsize)

    def scratch(self, xp, compute):
        """(padded, columns, product) flat buffers for the largest slice, for one thread; the padded one zeroed,
        for pad_into."""
        m = self.slices[0].stop - self.slices[0].start
        buffers = _scratch(xp, compute, *(m * size for size in self.per_sample))
        if any(p > 0 for p in self.padding):
            buffers[0][...] = 0
        return buffers


def correlate(xp, x, w, stride, padding, dilation, groups, compute, out, bias=None):
    """Write into out (N, O, *out) the cross-correlation of x (N, C, *S) with w (O, C/groups, *K): im2col over a
    slice of the batch at a time, then one GEMM per group, (O/groups, C/groups · K) @ (C/groups · K, m · P). A few
    large products run BLAS several times faster than one per sample on the small images of a typical CNN; the
    price is a copy of each slice's output from (O, m, P) into (m, O, P). The padded slice, its im2col matrix and
    the product go into one scratch buffer sized by the first (largest) slice and reused by the others; the
    product counts in the slice's size (a first conv with few input channels makes it larger than the columns).
    The slices are shared among the intra-op threads, each with its own scratch. A bias (O, 1, ...) given is added
    as the output is written."""
    if by_taps_applies(w, stride, groups):
        return correlate_by_taps(xp, x, w, padding, dilation, compute, out, bias)
    o = w.shape[0]
    mat = w.astype(compute, copy=False).reshape(groups, o // groups, -1)
    plan = _Plan(xp, x, w.shape[2:], stride, padding, dilation, o, compute)

    def run(taken):
        padded_buffer, cols, products = plan.scratch(xp, compute)
        for part in taken:
            m = part.stop - part.start
            image = plan.columns.image(xp, x[part], padded_buffer)
            product = products[:o * m * plan.columns.width].reshape(groups, o // groups, -1)
            xp.matmul(mat, plan.columns.matrix(xp, image, groups, cols), out=product)
            positions = plan.columns.positions(xp, product.reshape(o, -1))
            if bias is None:
                xp.copyto(out[part], positions, casting="unsafe")
            else:
                xp.add(positions, bias, out=out[part], casting="unsafe")

    intra_op.parallel_items(plan.slices, run)


def by_taps_applies(w, stride, groups):
    """Whether correlate_by_taps serves a correlation with the weight w: fast paths on, stride 1, one group, and more
    input than output channels (an input gradient, as CNN channels grow layer by layer), where its columns would
    be the largest and one GEMM per tap runs ~30% faster than copying them (measured on 2-core machines; with
    fewer input channels than output channels the columns win)."""
    return mode.fast and all(s == 1 for s in stride) and groups == 1 and w.shape[1] > w.shape[0]


@specialisation(replaces="nn_conv.correlate (im2col: the columns copied, then one GEMM)",
                when="by_taps_applies(w, stride, groups): stride 1, one group, more input than output channels",
                parity_test="tests/test_nn_conv_compiled.py::test_correlation_by_taps_matches_im2col",
                ops=("convolution",))
def correlate_by_taps(xp, x, w, padding, dilation, compute, out, bias=None):
    """correlate() without columns: per slice of the batch, the padded input channel-major, (C, m · H' · W'),
    and one GEMM per kernel tap, (O, C) @ the input shifted by the tap (a view, which BLAS reads in place), added
    up in tap order; an output position's column is its window's corner in the padded image (the columns between
    the rows' and images' ends are computed and skipped, as in ShiftedColumns). The same sums as the columns' GEMM,
    grouped by tap (equal to rounding)."""
    o, c = w.shape[:2]
    taps = w.astype(compute, copy=False).reshape(o, c, -1).transpose(2, 0, 1)  # (K, O, C)
    sizes = tuple(n + 2 * p for n, p in zip(x.shape[2:], padding))
    image = math.prod(sizes)
    shifts = [sum(i * d * math.prod(sizes[a + 1:]) for a, (i, d) in enumerate(zip(tap, dilation)))
              for tap in itertools.product(*(range(k) for k in w.shape[2:]))]
    slices = _thread_slices(x.shape[0], (c + 2 * o) * image * compute.itemsize)

    def run(taken):
        m = slices[0].stop - slices[0].start
        padded_buffer, products, partial = _scratch(xp, compute, m * c * image, m * o * image, m * o * image)
        padded_buffer[...] = 0
        for part in taken:
            flat = pad_into(xp, x[part].swapaxes(0, 1), padding, padded_buffer).reshape(c, -1)
            width = flat.shape[1] - shifts[-1]
            product, term = products[:o * width].reshape(o, width), partial[:o * width].reshape(o, width)
            xp.matmul(taps[0], flat[:, :width], out=product)
            for tap, shift in zip(taps[1:], shifts[1:]):
                xp.add(product, xp.matmul(tap, flat[:, shift:shift + width], out=term), out=product)
            _write_positions(xp, product, sizes, out[part], bias)

    intra_op.parallel_items(slices, run)


def _write_positions(xp, product, sizes, out, bias):
    """Copy the output positions of a product (O, width) whose column j is the window with corner j of the flat
    padded slice (m, *sizes) into out (m, O, *out_sizes), adding the bias (O, 1, ...) if given."""
    item = product.itemsize
    steps = tuple(math.prod(sizes[d:]) * item for d in range(1, len(sizes) + 1))
    positions = xp.lib.stride_tricks.as_strided(product, out.shape,
                                                (math.prod(sizes) * item, product.strides[0]) + steps)
    if bias is None:
        xp.copyto(out, positions, casting="unsafe")
    else:
        xp.add(positions, bias, out=out, casting="unsafe")


def weight_gradient(xp, x, grad, kernel, stride, padding, dilation, groups, compute):
    """The gradient of correlate()'s weight, (O, C/groups, *K): per slice of the batch, the input's im2col matrix
    (C/groups · K, m · P) per group and grad regrouped as (O/groups, m · P) multiplied with the longer of the two on
    the left and the other transposed (BLAS reads it in place, and runs ~40% faster with the larger side first),
    summed over the slices in their order. The padded slice, its im2col matrix and grad's slice regrouped go into
    one scratch buffer per thread; each slice's product is kept apart so that the sum does not depend on which
    thread computed what."""
    o = grad.shape[1]
    rows = x.shape[1] // groups * math.prod(kernel)
    columns_first = rows >= o // groups
    plan = _Plan(xp, x, kernel, stride, padding, dilation, o, compute)
    products = xp.empty((len(plan.slices), groups) + ((rows, o // groups) if columns_first else (o // groups, rows)),
                        compute)

    def run(taken):
        padded_buffer, cols, regrouped = plan.scratch(xp, compute)
        for count, i in enumerate(taken):
            part = plan.slices[i]
            image = plan.columns.image(xp, x[part], padded_buffer)
            # a thread takes its slices in order, so its first is its largest (see ShiftedColumns.spread)
            g = plan.columns.spread(xp, grad[part], regrouped, again=count > 0).reshape(groups, o // groups, -1)
            matrix = plan.columns.matrix(xp, image, groups, cols)
            left, right = (matrix, g) if columns_first else (g, matrix)
            if per_sample_applies(rows, o // groups):
                per_sample_product(xp, left, right, part.stop - part.start, products[i])
            else:
                xp.matmul(left, right.swapaxes(1, 2), out=products[i])

    intra_op.parallel_items(range(len(plan.slices)), run)
    total = products[0]
    for product in products[1:]:
        total += product
    if columns_first:
        total = total.swapaxes(1, 2)
    return total.reshape((o, x.shape[1] // groups) + tuple(kernel))


def transposed_convolution(xp, x, w, stride, padding, dilation, groups, compute, out):
    """Write into out (N, groups · Cout/groups, *out) the adjoint of correlate() in x: per slice of the batch, each
    input pixel's contribution to every output tap through one GEMM per group (columns), then col2im adds the
    columns into the slice's output. The slices are shared among the intra-op threads, each writing its own."""
    n, cin = x.shape[:2]
    og = w.shape[1]
    kernel = w.shape[2:]
    nd = len(kernel)
    # the weight's transpose made row-major: OpenBLAS ran the CNN's (144 × 32) @ (32 × 1764) products ~25% faster
    # than on the transposed view
    mat = xp.ascontiguousarray(w.astype(compute, copy=False).reshape(groups, cin // groups, -1).transpose(0, 2, 1))
    rows = x.astype(compute, copy=False).reshape(n, groups, cin // groups, -1).transpose(1, 2, 0, 3)
    pixels, taps = math.prod(x.shape[2:]), math.prod(kernel)
    slices = _thread_slices(n, groups * og * taps * pixels * compute.itemsize)
    compiled = compiled_2d_applies(xp, nd, compute, out)

    def run(taken):
        largest = slices[0].stop - slices[0].start
        inputs, products = _scratch(xp, compute, cin * largest * pixels, groups * og * taps * largest * pixels)
        for part in taken:
            m = part.stop - part.start
            slice_rows = inputs[:cin * m * pixels].reshape(groups, cin // groups, m, pixels)
            xp.copyto(slice_rows, rows[:, :, part])
            cols = products[:groups * og * taps * m * pixels].reshape(groups, og * taps, -1)
            xp.matmul(mat, slice_rows.reshape(groups, cin // groups, -1), out=cols)  # (groups, og·K, m·S)
            cols = cols.reshape((groups * og,) + kernel + (m,) + x.shape[2:])
            if compiled:
                col2im_compiled(cols, out[part], padding, stride, dilation)
            else:
                cols = cols.transpose((1 + nd, 0) + tuple(range(1, 1 + nd)) + tuple(range(2 + nd, cols.ndim)))
                out[part] = col2im_array(xp, cols, out.shape[2:], kernel, dilation, padding, stride, compute)

    intra_op.parallel_items(slices, run)


@specialisation(replaces="nn_windows.col2im_array in transposed_convolution (one strided NumPy add per kernel tap "
                         "over the whole slice)",
                when="compiled_2d_applies(xp, nd, compute, out): 2-d, row-major float32/float64 NumPy output, numba",
                parity_test="tests/test_nn_conv_threads.py::test_compiled_col2im_matches_numpy",
                ops=("convolution",))
def col2im_compiled(cols, out, padding, stride, dilation):
    """col2im_array into out (m, C, H, W) from cols (C, kh, kw, m, *S) in one numba pass per image plane
    (nn_conv_numba.col2im_2d): the same sums in the same order."""
    optional_kernels("nn_conv_numba").col2im_2d(cols, out, *padding, *stride, *dilation)


def _as_correlation_weight(w, groups):
    """A stride-1 transposed convolution is a plain correlation ("full" padding) with the kernel flipped and its
    in/out channels swapped per group: (Cin, Cout/g, *K) -> (Cout, Cin/g, *K). This beats col2im's one strided add
    per kernel tap."""
    cin, og = w.shape[:2]
    kernel = w.shape[2:]
    swapped = w.reshape((groups, cin // groups, og) + kernel).swapaxes(1, 2).reshape((groups * og, cin // groups)
                                                                                      + kernel)
    return swapped[(Ellipsis,) + (slice(None, None, -1),) * len(kernel)]


def _correlation_is_cheaper(xp, w, groups, stride, output_padding, compute, out):
    """For a stride-1 transposed convolution: im2col copies in_channels x taps values per pixel, col2im adds
    out_channels x taps; the correlation wins unless the output has far fewer channels (a first layer's input
    gradient, say 16 -> 3), as measured on 2-core machines. Where the compiled col2im serves, col2im wins: the
    input gradient of the CNN's 16 -> 32 channel convolution (64 × 32 × 14 × 14) took 2.1-2.7 ms against the
    correlation by taps' 3.0-3.7 at one thread, 1.2-1.3 against 2.0-2.2 at two."""
    if compiled_2d_applies(xp, len(stride), compute, out):
        return False
    return all(s == 1 for s in stride) and not any(output_padding) and 2 * w.shape[1] * groups >= w.shape[0]


def _keeps_pytorch_summation_order(nd):
    """PyTorch's CPU conv_transpose3d is a GEMM then col2vol (its SlowTranspose3d), and a float32 correlation rounds
    differently from that by more than the test tolerance, so 3-d transposed convolutions keep col2im's order (1-d
    and 2-d ones run in oneDNN in PyTorch, whose order neither path follows)."""
    return nd == 3


def _conv_kernel(backend, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    out = _conv_meta(backend, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    if out.numel() == 0:
        return out
    xp = backend.xp
    x, w, dst = backend.array(input), backend.array(weight), backend.array(out)
    compute = _compute_dtype(x.dtype)
    b = None if bias is None else backend.array(bias).reshape((-1,) + (1,) * (dst.ndim - 2))
    # a correlation adds the bias as it writes its output, where that rounds as adding it afterwards does
    fold = b if dst.dtype == compute else None
    if (transposed and _correlation_is_cheaper(xp, w, groups, stride, output_padding, compute, dst)
            and not _keeps_pytorch_summation_order(len(stride))):
        correlate(xp, x, _as_correlation_weight(w, groups), stride,
                  tuple(d * (k - 1) - p for k, p, d in zip(w.shape[2:], padding, dilation)), dilation, groups,
                  compute, dst, fold)
    elif transposed:
        transposed_convolution(xp, x, w, stride, padding, dilation, groups, compute, dst)
        fold = None
    else:
        correlate(xp, x, w, stride, padding, dilation, groups, compute, dst, fold)
    if b is not None and fold is None:
        dst += b
    return out


custom("convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
       "bool transposed, int[] output_padding, int groups) -> Tensor", _conv_kernel, _conv_meta)


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if input.dtype.is_complex:
        return _gauss_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    return _op("convolution", input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), transposed,
               tuple(output_padding), groups)


def _gauss_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """A complex convolution as three real ones (Gauss's trick, as PyTorch's conv frontends compute it, rounding
    included): a = x_r * w_r + b_r, b = x_i * w_i, c = (x_r + x_i) * (w_r + w_i) + (b_r + b_i); the result is
    a - b + i (c - a - b)."""
    def real_conv(x, w, b):
        return _op("convolution", x, w, b, tuple(stride), tuple(padding), tuple(dilation), transposed,
                   tuple(output_padding), groups)
    _check_conv(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    x_r, x_i, w_r, w_i = input.real, input.imag, weight.real, weight.imag
    b_r, b_i = (None, None) if bias is None else (bias.real, bias.imag)
    a = real_conv(x_r, w_r, b_r)
    b = real_conv(x_i, w_i, None)
    c = real_conv(x_r + x_i, w_r + w_i, None if bias is None else b_r + b_i)
    return a - b + (c - a - b) * 1j


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

def per_sample_applies(rows, channels):
    """Whether weight_gradient's product for a slice is per_sample_product: fast paths on and a small weight per
    group (rows · channels ≤ 512, a first layer's 16 × 1 × 3 × 3), where one GEMM over the slice's tens of thousands
    of columns runs ~3 times slower in OpenBLAS than one per sample (a 32 × 16 × 3 × 3 weight: no faster)."""
    return mode.fast and rows * channels <= 512


@specialisation(replaces="weight_gradient's product of a slice (one GEMM over all its columns)",
                when="per_sample_applies(rows, channels): a weight of at most 512 elements per group",
                parity_test="tests/test_nn_conv_compiled.py::test_per_sample_weight_products_match_one_gemm",
                ops=("convolution",))
def per_sample_product(xp, left, right, m, out):
    """out (groups, A, B) = left (groups, A, m · width) @ right (groups, B, m · width)ᵀ as one GEMM per sample
    (views, no copy) summed over the samples in order: the same sums grouped by sample (equal to rounding)."""
    views = [t.reshape(t.shape[:2] + (m, -1)).transpose(2, 0, 1, 3) for t in (left, right)]
    xp.add.reduce(xp.matmul(views[0], views[1].swapaxes(2, 3)), axis=0, out=out)


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
    return full.transpose(0, 1).clone(memory_format=contiguous_format)  # row-major strides even for size-1 dims


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
    """The weight's gradient, a correlation of the input with grad (conv_weight_grad); a transposed convolution's
    input and grad trade places (the adjoint pairing)."""
    if transposed:
        input, grad = grad, input
    return conv_weight_grad(input, grad, weight_meta.size[2:], stride, padding, dilation, groups)


def weight_gemm_fits(grad, input, weight_meta, stride, padding, dilation, transposed):
    """The convolutions conv_weight_backward_on_arrays serves: float arrays (on_float_arrays) whose output used every
    window of the padded input (grad's spatial size is exactly the convolution's)."""
    if transposed:
        input, grad = grad, input
    sizes = zip(input._size[2:], weight_meta.size[2:], stride, padding, dilation)
    return on_float_arrays(input, grad) and grad._size[2:] == tuple(
        (n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, s, p, d in sizes)


@specialisation(replaces="convolution's weight derivative conv_weight_backward (a convolution op)",
                when="backward without create_graph, fast paths on; weight_gemm_fits(...)",
                parity_test="tests/test_ops_specialisations.py::test_conv_weight_backward_on_arrays",
                ops=("convolution",))
def conv_weight_backward_on_arrays(grad, input, weight_meta, stride, padding, dilation, transposed, groups):
    """The weight's gradient as one GEMM per slice of the batch on the arrays (weight_gradient), instead of the
    convolution op with input and grad regrouped as its batch and kernels."""
    if transposed:
        input, grad = grad, input
    backend = input._backend
    out = backend.empty(weight_meta.size, input.dtype)
    backend.array(out)[...] = weight_gradient(backend.xp, backend.array(input), backend.array(grad),
                                              weight_meta.size[2:], stride, padding, dilation, groups,
                                              backend.array(out).dtype)
    return out


def conv_bias_backward(grad):
    return grad.sum((0,) + tuple(range(2, grad.dim())))


def contiguous_batched_floats(grad):
    """The gradients conv_bias_backward_on_arrays serves: row-major float arrays (on_float_arrays) with a batch,
    a channel and at least one spatial dim."""
    return on_float_arrays(grad) and grad.dim() >= 3 and grad.is_contiguous()


@specialisation(replaces="convolution's bias derivative conv_bias_backward (one reduction over the batch and every "
                         "spatial dim at once)",
                when="backward without create_graph, fast paths on; contiguous_batched_floats(grad)",
                parity_test="tests/test_nn_conv_compiled.py::test_bias_gradient_on_arrays_matches_the_sum",
                ops=("convolution",))
def conv_bias_backward_on_arrays(grad):
    """The bias gradient as the batch's rows added first, then each channel's positions summed along its row: two
    reductions over one axis each, which NumPy runs about twice as fast as one over three axes (the CNN's
    64 × 16 × 28 × 28 gradient: 429 -> 244 µs, its 64 × 32 × 14 × 14 one 255 -> 104), equal to rounding. Blocks
    of channels run on the intra-op threads (each channel's sum the same whatever the split)."""
    backend = grad._backend
    xp = backend.xp
    rows = backend.array(grad).reshape(grad._size[0], grad._size[1], -1)
    out = backend.empty(grad._size[1:2], grad.dtype)
    sums = backend.array(out)

    def run(start, stop):
        xp.add.reduce(xp.add.reduce(rows[:, start:stop], axis=0), axis=1, out=sums[start:stop])

    intra_op.parallel_chunks(len(sums), run, grain=intra_op.grain(rows.shape[0] * rows.shape[2]))
    return out


# ==== derivative (derivatives.yaml's entry for convolution; see ops/derivative.py) ====

derivative("convolution",
           helpers={"conv_input_grad": conv_input_grad, "conv_weight_backward": conv_weight_backward,
                    "conv_bias_backward": conv_bias_backward},
           input="conv_input_grad(grad, conj(weight), input_meta, stride, padding, dilation, transposed, "
                 "output_padding, groups)",
           weight="conv_weight_backward(grad, conj(input), weight_meta, stride, padding, dilation, transposed, "
                  "groups)",
           bias="conv_bias_backward(grad)")
_WEIGHT_ARGUMENTS = "grad, conj(input), weight_meta, stride, padding, dilation, transposed"
specialise_derivative("convolution", {
    f"conv_weight_backward({_WEIGHT_ARGUMENTS}, groups)": (
        f"conv_weight_backward_on_arrays({_WEIGHT_ARGUMENTS}, groups)", f"weight_gemm_fits({_WEIGHT_ARGUMENTS})"),
    "conv_bias_backward(grad)": ("conv_bias_backward_on_arrays(grad)", "contiguous_batched_floats(grad)"),
}, helpers={"conv_input_grad": conv_input_grad, "conv_weight_backward": conv_weight_backward,
            "conv_bias_backward": conv_bias_backward, "conv_weight_backward_on_arrays": conv_weight_backward_on_arrays,
            "weight_gemm_fits": weight_gemm_fits, "conv_bias_backward_on_arrays": conv_bias_backward_on_arrays,
            "contiguous_batched_floats": contiguous_batched_floats})
