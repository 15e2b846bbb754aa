"""The convolution, max pool and relu kernels' fast paths held to their readable versions: the stride-1
convolution's ShiftedColumns, the 2-d convolutions' compiled im2col and col2im, and the intra-op threads (results
must not depend on the thread count)."""
import numpy as np
import pytest

import lantern
import lantern.nn.functional as F
from lantern.core import intra_op
from lantern.ops import nn_conv
from lantern.ops.nn_conv import Columns, ShiftedColumns, column_layout


@pytest.fixture(autouse=True)
def fast_paths():
    """These tests hold fast paths to the readable code, so they run with fast paths on (also in the reference
    tier) and switch reference mode on where they want the readable code."""
    with lantern.reference_mode(False):
        yield


def integers(*shape, seed=0):
    """Small integers as float32: every product and sum is exact, so any summation order gives the same bits."""
    return lantern.tensor(np.random.default_rng(seed).integers(-3, 4, shape).astype(np.float32))


def conv_and_grads(conv, x, w, bias, **options):
    x, w, bias = (t.clone().requires_grad_() for t in (x, w, bias))
    out = conv(x, w, bias, **options)
    out.backward(integers(*out.shape, seed=9))
    return [out.detach(), x.grad, w.grad, bias.grad]


def assert_all_same(got, expected):
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        assert np.array_equal(g.numpy(), e.numpy())


CONVOLUTIONS = [  # (functional, input shape, weight shape, options)
    (F.conv2d, (3, 4, 9, 8), (6, 4, 3, 3), dict(padding=1)),
    (F.conv2d, (3, 4, 9, 8), (6, 2, 3, 2), dict(padding=(2, 0), dilation=(2, 1), groups=2)),
    (F.conv1d, (3, 3, 11), (5, 3, 4), dict(padding=2)),
    (F.conv3d, (3, 2, 5, 6, 4), (3, 2, 3, 2, 3), dict(padding=1)),
    (F.conv_transpose2d, (3, 6, 5, 5), (6, 3, 3, 3), dict(padding=1)),  # stride 1: a correlation
]


def two_samples_a_slice(n, sample_bytes):
    return [slice(i, min(i + 2, n)) for i in range(0, n, 2)]


def layout_of(x_shape, stride=(1, 1), dtype=np.float32):
    """The column layout a 3 × 3, padding-1 convolution of an array of x_shape gets."""
    return column_layout(np, np.zeros(x_shape, dtype), (3, 3), stride, (1, 1), (1, 1), np.dtype(dtype))


@pytest.mark.parametrize("slices", ["the whole batch", "two samples a slice"])  # a batch of 3: a last, shorter slice
@pytest.mark.parametrize("conv, x_shape, w_shape, options", CONVOLUTIONS)
def test_shifted_columns_match_im2col(conv, x_shape, w_shape, options, slices, monkeypatch):
    if slices == "two samples a slice":
        monkeypatch.setattr(nn_conv, "_thread_slices", two_samples_a_slice)
    monkeypatch.setattr(nn_conv, "compiled_2d_applies", lambda *args: False)
    x, w = integers(*x_shape), integers(*w_shape, seed=1)
    bias = integers(w_shape[1] * options.get("groups", 1) if conv is F.conv_transpose2d else w_shape[0], seed=2)
    assert isinstance(layout_of((2, 3, 6, 6)), ShiftedColumns)
    fast = conv_and_grads(conv, x, w, bias, **options)
    with lantern.reference_mode():
        assert type(layout_of((2, 3, 6, 6))) is Columns
        readable = conv_and_grads(conv, x, w, bias, **options)
    assert_all_same(fast, readable)


COMPILED_CONVOLUTIONS = [  # 2-d: stride, padding, dilation, groups, and a transposed convolution (col2im)
    (F.conv2d, (3, 4, 9, 8), (6, 4, 3, 3), dict(padding=1)),
    (F.conv2d, (3, 4, 9, 8), (6, 2, 3, 2), dict(padding=(2, 0), dilation=(2, 1), groups=2)),
    (F.conv2d, (3, 4, 9, 8), (6, 4, 3, 3), dict(stride=(2, 3), padding=(1, 2))),
    (F.conv2d, (3, 8, 7, 7), (4, 8, 3, 3), dict(padding=1)),  # more input than output channels: the input gradient
    (F.conv_transpose2d, (3, 6, 5, 5), (6, 3, 3, 3), dict(padding=1)),
    (F.conv_transpose2d, (3, 6, 5, 4), (6, 2, 3, 2), dict(stride=2, padding=(1, 0), output_padding=1, groups=2)),
]


@pytest.mark.parametrize("slices", ["the whole batch", "two samples a slice"])
@pytest.mark.parametrize("conv, x_shape, w_shape, options", COMPILED_CONVOLUTIONS)
def test_compiled_columns_match_im2col(conv, x_shape, w_shape, options, slices, monkeypatch):
    """numba's im2col and col2im (CompiledColumns, col2im_compiled) against the readable kernels, on small integers
    (exact sums, so the same bits whichever layout and product shapes)."""
    if slices == "two samples a slice":
        monkeypatch.setattr(nn_conv, "_thread_slices", two_samples_a_slice)
    x, w = integers(*x_shape), integers(*w_shape, seed=1)
    bias = integers(w_shape[1] * options.get("groups", 1) if conv is F.conv_transpose2d else w_shape[0], seed=2)
    assert isinstance(layout_of((2, 3, 6, 6), stride=(2, 1)), nn_conv.CompiledColumns)
    assert type(layout_of((2, 3, 6, 6), dtype=np.float16)) is ShiftedColumns  # computed in float32: not compiled
    fast = conv_and_grads(conv, x, w, bias, **options)
    with lantern.reference_mode():
        assert type(layout_of((2, 3, 6, 6))) is Columns
        readable = conv_and_grads(conv, x, w, bias, **options)
    assert_all_same(fast, readable)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stride, padding, dilation", [((1, 1), (1, 1), (1, 1)), ((2, 3), (0, 2), (1, 2)),
                                                       ((1, 2), (3, 1), (2, 1))])
def test_compiled_col2im_matches_numpy(stride, padding, dilation, dtype):
    """col2im_2d adds each pixel's taps in col2im_array's order: the same bits on random floats."""
    from lantern.ops.nn_conv_numba import col2im_2d
    from lantern.ops.nn_windows import col2im_array
    rng = np.random.default_rng(0)
    size, kernel, m, c = (9, 8), (3, 2), 2, 3
    blocks = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, p, d, k, s in zip(size, padding, dilation, kernel,
                                                                                   stride))
    cols = rng.standard_normal((c,) + kernel + (m,) + blocks).astype(dtype)
    out = np.full((m, c) + size, np.nan, dtype)
    col2im_2d(cols, out, *padding, *stride, *dilation)
    expected = col2im_array(np, cols.transpose(3, 0, 1, 2, 4, 5), size, kernel, dilation, padding, stride, dtype)
    assert np.array_equal(out, expected)


def test_strided_convolutions_keep_the_generic_columns():
    assert type(layout_of((2, 3, 6, 6), stride=(2, 1), dtype=np.float16)) is Columns


@pytest.fixture
def pool_calls(monkeypatch):
    """Count the parallel runs, with two threads and room for a few samples per convolution slice."""
    before = intra_op.num_threads()
    intra_op.set_num_threads(2)
    monkeypatch.setattr(nn_conv, "_IM2COL_BYTES", 16 << 10)
    calls = []
    run = intra_op.run_on_pool
    monkeypatch.setattr(intra_op, "run_on_pool", lambda ranges, fn: (calls.append(len(ranges)), run(ranges, fn)))
    yield calls
    intra_op.set_num_threads(before)


def cnn_step(x):
    """A conv, relu and max pool layer forward and backward; the outputs and every gradient."""
    w, b = integers(8, 3, 3, 3, seed=1).requires_grad_(), integers(8, seed=2).requires_grad_()
    x = x.clone().requires_grad_()
    values, indices = F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1)), 2, return_indices=True)
    values.backward(integers(*values.shape, seed=3))
    return [values.detach(), indices, x.grad, w.grad, b.grad]


@pytest.mark.parametrize("batch", [64, 1])
def test_threads_give_the_serial_results(pool_calls, batch):
    x = integers(batch, 3, 32, 32)
    parallel = cnn_step(x)
    runs = len(pool_calls)
    intra_op.set_num_threads(1)
    serial = cnn_step(x)
    assert len(pool_calls) == runs
    assert_all_same(parallel, serial)
    if batch > 1:  # conv forward, its three gradients, relu both ways, max pool both ways
        assert runs >= 8


@pytest.mark.parametrize("conv, x_shape, w_shape, options", [
    (F.conv_transpose2d, (16, 6, 5, 5), (6, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    (F.conv_transpose1d, (64, 4, 9), (4, 6, 3), dict(stride=3, groups=2)),
    (F.conv2d, (16, 2, 9, 9), (8, 2, 3, 3), dict(padding=1)),  # the input gradient: fewer channels, so col2im
])
def test_col2im_slices_on_threads_give_the_serial_results(pool_calls, conv, x_shape, w_shape, options):
    x, w = integers(*x_shape), integers(*w_shape, seed=1)
    bias = integers(w_shape[1] * options.get("groups", 1) if conv is not F.conv2d else w_shape[0], seed=2)
    parallel = conv_and_grads(conv, x, w, bias, **options)
    assert pool_calls
    intra_op.set_num_threads(1)
    assert_all_same(parallel, conv_and_grads(conv, x, w, bias, **options))


@pytest.mark.parametrize("x_shape, w_shape", [((16, 6, 10, 10), (8, 6, 3, 3)), ((16, 1, 12, 12), (8, 1, 3, 3))])
def test_weight_gradient_of_floats_does_not_depend_on_the_thread_count(pool_calls, x_shape, w_shape):
    """Random floats, whose sums round: the weight gradient adds one product per slice of the batch, and the slices
    are the same at any thread count."""
    rng = np.random.default_rng(0)
    x, w, bias = (lantern.tensor(rng.standard_normal(s).astype(np.float32)) for s in (x_shape, w_shape, w_shape[:1]))
    parallel = conv_and_grads(F.conv2d, x, w, bias, padding=1)
    assert pool_calls
    intra_op.set_num_threads(1)
    assert_all_same(parallel, conv_and_grads(F.conv2d, x, w, bias, padding=1))


def test_relu_of_a_strided_input_stays_serial_and_right(pool_calls):
    x = integers(2, 256, 512).transpose(1, 2)
    assert np.array_equal(F.relu(x).numpy(), np.maximum(x.numpy(), 0))
    assert pool_calls == []


def test_max_pool_splits_by_the_input_it_reads(pool_calls):
    """The CNN's second pool, 64 × 32 × 14 × 14 in and a quarter of that out: its input is worth two chunks."""
    x = integers(64, 32, 14, 14)
    parallel = F.max_pool2d(x, 2, return_indices=True)
    assert pool_calls == [2]
    intra_op.set_num_threads(1)
    assert_all_same(parallel, F.max_pool2d(x, 2, return_indices=True))


def pool_and_grad(x, *args, **options):
    x = x.clone().requires_grad_()
    values, indices = F.max_pool2d(x, *args, return_indices=True, **options)
    values.backward(integers(*values.shape, seed=5))
    return [values.detach(), indices, x.grad]


@pytest.mark.parametrize("shape, args, options", [
    ((4, 3, 8, 10), (2,), {}),                          # the compiled forward: ties among the integers
    ((3, 9, 7), (2,), {}),                              # odd sizes: the last row and column left out
    ((2, 3, 9, 7), (2,), dict(ceil_mode=True)),         # windows past the input: the NumPy forward
    ((2, 3, 8, 8), (3, 3), dict(padding=1)),            # padding: the NumPy forward, the compiled backward
])
@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
def test_compiled_max_pool_matches_numpy(shape, args, options, dtype):
    pytest.importorskip("numba")
    x = integers(*shape).to(dtype)
    fast = pool_and_grad(x, *args, **options)
    with lantern.reference_mode():
        readable = pool_and_grad(x, *args, **options)
    assert_all_same(fast, readable)


def test_compiled_max_pool_leaves_nan_to_numpy():
    pytest.importorskip("numba")
    x = integers(2, 3, 6, 6)
    x[0, 1, 2, 3] = x[1, 2, 0, 0] = x[1, 2, 0, 1] = float("nan")
    fast = pool_and_grad(x, 2)
    with lantern.reference_mode():
        readable = pool_and_grad(x, 2)
    assert np.array_equal(fast[0].numpy(), readable[0].numpy(), equal_nan=True)
    assert_all_same(fast[1:], readable[1:])
