"""The named specialisations inside the ops (lantern/ops/*: `@specialisation`) against the readable code they replace.

Each parity test runs a specialisation and the readable formula or kernel on the same tensors and requires the same
values (bit for bit: inputs are integer-valued where the two sum in different orders), dtype, shape and strides.
test_each_specialisation_runs_only_where_it_may then checks, for every one, that a backward pass (or kernel call)
runs it with fast paths on, and runs only the readable code in reference mode and under create_graph. Each test
sets the mode it needs, so the file checks the fast paths in the reference tier too.
"""
import contextlib
import sys

import numpy as np
import pytest

import lantern
from lantern.core.reference import SPECIALISATIONS
from lantern.ops.derivative import TensorMeta
from lantern.ops.derivative_helpers import (
    narrow_backward, narrow_backward_on_arrays, slice_backward, slice_backward_on_arrays, sum_backward, where_zero,
)
from lantern.ops.linalg_products import (
    bias_backward_on_arrays, mm_mat1_backward, mm_mat1_backward_on_arrays, mm_mat2_backward,
    mm_mat2_backward_on_arrays,
)
from lantern.ops.nn_activation import relu_backward_on_arrays
from lantern.ops.nn_conv import conv_bias_backward_on_arrays, conv_weight_backward, conv_weight_backward_on_arrays
from lantern.ops.nn_pooling import max_pool_backward, max_pool_backward_on_arrays
from lantern.ops.pointwise_arithmetic import mul_backward_on_arrays, pow_small_exponent, row_major_floats
from lantern.ops.reduction import sum_backward_as_view
from lantern.ops.split_views import split_with_sizes_backward_on_arrays

FLOATS = [lantern.float32, lantern.float64]


def assert_same(fast, readable):
    """Equal values (nan where nan), dtype, shape and strides."""
    assert (fast.dtype, fast.shape, fast.stride()) == (readable.dtype, readable.shape, readable.stride())
    np.testing.assert_array_equal(fast.numpy(), readable.numpy())


def integers(*shape, dtype=lantern.float32, seed=0):
    """Integer-valued floats: sums of their products are exact in any order."""
    return lantern.tensor(np.random.default_rng(seed).integers(-4, 5, shape), dtype=dtype)


def normal(*shape, dtype=lantern.float32, seed=0):
    return lantern.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["same shape", "0-d other", "grad broadcast"])
def test_mul_backward_on_arrays(dtype, layout):
    # operands as ops make them (their strides the tuple contiguous_strides caches, which the guard looks for)
    other_shape = () if layout == "0-d other" else (3, 4)
    grad, other = normal(3, 4, dtype=dtype) * 1, normal(*other_shape, dtype=dtype, seed=1) * 1
    grad[0, 0] = float("nan")
    if layout == "grad broadcast":  # a full sum's gradient: strides all 0
        grad = lantern.tensor(2.0, dtype=dtype).expand(3, 4)
    assert row_major_floats(grad, other)
    assert_same(mul_backward_on_arrays(grad, other), grad * other.conj())
    if other.dim():  # a column-major operand: the readable formula runs
        assert not row_major_floats(grad, other.t().contiguous().t())


@pytest.mark.parametrize("dtype", FLOATS)
def test_relu_backward_on_arrays(dtype):
    x = normal(5, 6, dtype=dtype)
    x[0, :2] = 0
    result, grad = x.relu(), normal(5, 6, dtype=dtype, seed=1)
    grad[1, 1], grad[2, 2] = float("nan"), float("inf")
    assert_same(relu_backward_on_arrays(grad, result), where_zero(result > 0, grad))


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_conv_weight_backward_on_arrays(dtype, transposed):
    x, weight = integers(2, 4, 7, 7, dtype=dtype), integers(4, 2, 3, 3, dtype=dtype, seed=1)
    stride, padding, dilation, groups = (2, 2), (1, 1), (1, 1), 2
    if transposed:
        y = lantern.nn.functional.conv_transpose2d(x, weight, stride=stride, padding=padding, groups=groups)
    else:
        y = lantern.nn.functional.conv2d(x, weight, stride=stride, padding=padding, groups=groups)
    grad = integers(*y.shape, dtype=dtype, seed=2)
    args = (grad, x, TensorMeta(weight), stride, padding, dilation, transposed, groups)
    assert_same(conv_weight_backward_on_arrays(*args), conv_weight_backward(*args))


@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pool_backward_on_arrays(dtype):
    x = normal(2, 3, 8, 8, dtype=dtype)
    values, indices = lantern.nn.functional.max_pool2d(x, 2, return_indices=True)
    grad = normal(*values.shape, dtype=dtype, seed=1)
    fast = max_pool_backward_on_arrays(grad, indices, TensorMeta(x), (2, 2), (2, 2), (1, 1))
    assert_same(fast, max_pool_backward(grad, indices, TensorMeta(x)))


@pytest.mark.parametrize("column_major", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_mm_backward_on_arrays(dtype, column_major):
    mat1, mat2 = integers(4, 3, dtype=dtype), integers(3, 5, dtype=dtype, seed=1)
    if column_major:  # Linear's weight.t(): the gradients come back column-major
        mat1, mat2 = integers(3, 4, dtype=dtype).t(), integers(5, 3, dtype=dtype, seed=1).t()
    grad = integers(4, 5, dtype=dtype, seed=2)
    meta1, meta2 = TensorMeta(mat1), TensorMeta(mat2)
    assert_same(mm_mat1_backward_on_arrays(grad, mat2, meta1), mm_mat1_backward(grad, mat2, meta1))
    assert_same(mm_mat2_backward_on_arrays(grad, mat1, meta2), mm_mat2_backward(grad, mat1, meta2))


@pytest.mark.parametrize("dtype", FLOATS)
def test_bias_backward_on_arrays(dtype):
    """The readable formula passes beta·grad on and the engine sums it over the broadcast rows: compare with that."""
    bias, grad = integers(5, dtype=dtype), integers(4, 5, dtype=dtype, seed=1)
    assert_same(bias_backward_on_arrays(grad, 1, TensorMeta(bias)), grad.sum_to_size(bias.shape))


@pytest.mark.parametrize("dtype", FLOATS)
def test_slice_backward_on_arrays(dtype):
    meta = TensorMeta(normal(4, 6, 5, dtype=dtype))
    for dim, start, end, step in ((1, 1, 5, 2), (2, -3, None, 1), (0, None, 100, 3), (1, 2, 2, 1), (1, -100, -2, 1)):
        shape = list(meta.size)
        shape[dim] = len(range(*slice(start, end, step).indices(shape[dim])))
        grad = normal(*shape, dtype=dtype)
        if grad.numel():
            grad[(0,) * len(shape)] = float("nan")
        assert_same(slice_backward_on_arrays(grad, meta, dim, start, end, step),
                    slice_backward(grad, meta, dim, start, end, step))
    grad = normal(5, 2, 4, dtype=dtype).permute(2, 1, 0)  # not row-major
    for start in (-3, 1, lantern.tensor(2)):
        assert_same(narrow_backward_on_arrays(grad, meta, 1, start, 2), narrow_backward(grad, meta, 1, start, 2))


def test_sum_backward_as_view():
    x = normal(3, 4)[:, 1:]
    grad = lantern.tensor(2.0)
    fast, readable = sum_backward_as_view(grad, x.shape), sum_backward(grad, x.shape, None, False)
    assert_same(fast, readable)
    assert fast._base is readable._base is grad and fast.untyped_storage().data_ptr() == grad.data_ptr()


POW_CASES = [(dtype, exponent) for dtype in (lantern.float32, lantern.float64, lantern.complex64)
             for exponent in (0, 1, 2, 3, 0.5, -1)]
POW_CASES += [(lantern.int64, e) for e in (0, 1, 2, 3)] + [(lantern.bool, e) for e in (0, 1)]


@pytest.mark.parametrize("dtype,exponent", POW_CASES)
def test_pow_small_exponent(dtype, exponent):
    """Bit for bit, except where xp.power itself rounds differently: a cube of arbitrary floats (x*x*x rounds twice,
    as PyTorch's kernel does, power once) and a complex square root (NumPy's complex power goes through exp and log;
    sqrt, as PyTorch uses, is exact on the axes): there to a few units in the last place."""
    x = integers(4, 5, dtype=dtype) if dtype is not lantern.bool else lantern.tensor([True, False])
    arbitrary = normal(4, 5, dtype=dtype, seed=1) + 0.5 if dtype.is_floating_point or dtype.is_complex else None
    for values, exact in ((x, not (dtype.is_complex and exponent == 0.5)), (arbitrary, exponent not in (3, 0.5))):
        if values is None:
            continue
        with lantern.reference_mode(False):
            fast = values.pow(exponent)
        with lantern.reference_mode():
            readable = values.pow(exponent)
        if exact:
            assert_same(fast, readable)
        else:
            assert (fast.dtype, fast.shape, fast.stride()) == (readable.dtype, readable.shape, readable.stride())
            eps = np.finfo(fast.numpy().dtype).eps
            np.testing.assert_allclose(fast.numpy(), readable.numpy(), rtol=4 * eps, atol=4 * eps * 27)


# ---- each specialisation fires with fast paths on, and only then ----

@contextlib.contextmanager
def calls_of(function):
    """Count the calls of `function` in the block (a profile hook sees every Python call in this thread)."""
    code, calls = function.__code__, []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            calls.append(frame)
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def _leaf(t):
    return t.clone().requires_grad_()


def _mlp_step(dtype):
    x, weight = integers(4, 3, dtype=dtype), _leaf(integers(5, 3, dtype=dtype, seed=1))
    bias = _leaf(integers(5, dtype=dtype, seed=2))
    hidden = lantern.nn.functional.linear(x, weight, bias).relu()
    return (hidden * hidden).sum(), (weight, bias)


def _conv_step(dtype):
    x, weight = integers(2, 3, 8, 8, dtype=dtype), _leaf(integers(4, 3, 3, 3, dtype=dtype, seed=1))
    y = lantern.nn.functional.max_pool2d(lantern.nn.functional.conv2d(x, weight, padding=1), 2)
    return (y * y).sum(), (weight,)


def _conv_bias_step(dtype):
    x, weight = integers(2, 3, 6, 6, dtype=dtype), integers(4, 3, 3, 3, dtype=dtype, seed=1)
    bias = _leaf(integers(4, dtype=dtype, seed=2))
    y = lantern.nn.functional.conv2d(x, weight, bias)
    return (y * y).sum(), (bias,)


def _split_step(dtype):
    x = _leaf(integers(4, 6, dtype=dtype))
    a, b = x.split([2, 4], dim=1)  # split_with_sizes' backward; b[:, 1:] slice's
    return (a * a).sum() + (b[:, 1:] * b[:, :-1]).sum(), (x,)


def _mm_step(dtype):
    a, b = _leaf(integers(4, 3, dtype=dtype)), integers(3, 5, dtype=dtype, seed=1)
    return (a @ b).sum(), (a,)


STEPS = {  # the specialisation, and a backward pass on float64 that runs it
    "mul_backward_on_arrays": (mul_backward_on_arrays, _mlp_step),
    "relu_backward_on_arrays": (relu_backward_on_arrays, _mlp_step),
    "mm_mat1_backward_on_arrays": (mm_mat1_backward_on_arrays, _mm_step),
    "mm_mat2_backward_on_arrays": (mm_mat2_backward_on_arrays, _mlp_step),
    "bias_backward_on_arrays": (bias_backward_on_arrays, _mlp_step),
    "sum_backward_as_view": (sum_backward_as_view, _mlp_step),
    "conv_weight_backward_on_arrays": (conv_weight_backward_on_arrays, _conv_step),
    "max_pool_backward_on_arrays": (max_pool_backward_on_arrays, _conv_step),
    "conv_bias_backward_on_arrays": (conv_bias_backward_on_arrays, _conv_bias_step),
    "slice_backward_on_arrays": (slice_backward_on_arrays, _split_step),
    "split_with_sizes_backward_on_arrays": (split_with_sizes_backward_on_arrays, _split_step),
}



def test_every_ops_specialisation_is_checked_here():
    in_ops = {s.name for s in SPECIALISATIONS.values() if s.function.__module__.startswith("lantern.ops.")}
    # pow_small_exponent is checked below; the dispatcher's generated entries in tests/test_reference_mode.py;
    # the convolution kernel's ShiftedColumns, its compiled im2col and col2im and the compiled max pool kernels in
    # tests/test_nn_conv_threads.py; the compiled LSTM/GRU steps and the LSTM and GRU in blocks of rows in
    # tests/test_nn_rnn_fused.py, embedding's compiled backward in
    # tests/test_embedding_compiled.py; the compiled random draws in tests/test_random_compiled.py; GELU's kernels in
    # tests/test_gelu_compiled.py; layer norm's and softmax's in tests/test_nn_norm_compiled.py and
    # tests/test_nn_softmax_compiled.py; relu's compiled backward in tests/test_nn_relu_compiled.py; cross-entropy's
    # compiled forward rows and backward in tests/test_nn_loss_compiled.py; the correlation by taps and the
    # per-sample weight products in tests/test_nn_conv_compiled.py; multi-head attention's gradient stack in
    # tests/test_nn_transformer.py
    assert in_ops == set(STEPS) | {"pow_small_exponent", "_generated_entry", "ShiftedColumns", "CompiledColumns",
                                   "col2im_compiled",
                                   "max_pool_planes_compiled", "max_pool_scatter_compiled", "lstm_forward_compiled",
                                   "lstm_backward_compiled", "gru_forward_compiled", "gru_backward_compiled",
                                   "lstm_forward_in_row_blocks", "lstm_backward_in_row_blocks",
                                   "gru_forward_in_row_blocks", "gru_backward_in_row_blocks",
                                   "_embedding_rows_summed_compiled", "words_compiled", "unit_uniform_compiled",
                                   "bernoulli_scalar_compiled", "gelu_compiled", "gelu_backward_on_arrays",
                                   "_layer_norm_rows_compiled", "_layer_norm_backward_rows_compiled",
                                   "layer_norm_weight_grad_on_arrays", "layer_norm_input_grad_on_arrays",
                                   "layer_norm_bias_grad_on_arrays", "_softmax_rows_compiled", "_softmax_rows_fused",
                                   "_softmax_backward_rows_compiled", "_log_softmax_rows_fused",
                                   "_log_softmax_backward_rows_fused", "relu_backward_compiled",
                                   "_cross_entropy_rows_compiled", "_cross_entropy_backward_compiled",
                                   "correlate_by_taps", "_stack_grads_on_arrays",
                                   "per_sample_product"}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_specialisation_runs_only_where_it_may(name):
    function, step = STEPS[name]
    grads = {}
    for setting in ("fast", "reference", "create_graph"):
        loss, leaves = step(lantern.float64)
        with calls_of(function) as calls, lantern.reference_mode(setting == "reference"):
            found = lantern.autograd.grad(loss, leaves, create_graph=setting == "create_graph")
        assert bool(calls) is (setting == "fast"), setting
        grads[setting] = [g.detach() for g in found]
    for fast, readable in zip(grads["fast"], grads["reference"]):
        assert_same(fast, readable)


def test_pow_small_exponent_runs_only_where_it_may():
    x = normal(3)
    with calls_of(pow_small_exponent) as calls, lantern.reference_mode(False):
        x ** 3
        x ** 2.5
        with lantern.reference_mode():
            x ** 3
    assert len(calls) == 1
