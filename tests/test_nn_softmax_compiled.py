"""Softmax's compiled specialisations (lantern/ops/nn_activation_softmax.py over nn_softmax_numba.py) against the
readable NumPy kernels they replace: the forward over short rows gives the same bits (its numba loops only shift by
the row maximum and scale, exactly), the fused float32 forward over long rows and the backward agree to rounding
(their row sums are reassociated)."""
import numpy as np
import pytest
import torch

import lantern
from intra_op_fixtures import fast_paths  # noqa: F401 (fixture)
from lantern.ops import nn_activation_softmax as softmax_ops
from test_ops_specialisations import calls_of

pytest.importorskip("numba")
pytestmark = pytest.mark.usefixtures("fast_paths")  # fast paths on, also in the reference tier

F = lantern.nn.functional


def noncontiguous(*shape, dtype=lantern.float32, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape[::-1]) * 4
    return lantern.tensor(data, dtype=dtype).permute(*range(len(shape) - 1, -1, -1))


def with_special_values(x):
    """Rows holding -inf (a masked key), all -inf, +inf and nan."""
    x = x.clone()
    x[0, 0, 1] = x[0, 1, :] = float("-inf")
    x[1, 0, 2], x[1, 1, 0], x[1, 2, -1] = float("inf"), float("nan"), float("nan")
    return x


SHAPES = [(3, 4, 40), (2, 3, 5), (3, 3, 16), (4, 4, 33)]  # rows shorter than, equal to and past the 16 lanes


@pytest.mark.parametrize("dtype, shape", [(dtype, shape) for dtype in (lantern.float32, lantern.float64)
                                          for shape in SHAPES] + [(lantern.float64, (2, 3, 300))])  # a long row
@pytest.mark.parametrize("special", [False, True])
def test_compiled_forward_gives_the_readable_bits(dtype, shape, special):
    x = noncontiguous(*shape, dtype=dtype)
    if special:
        x = with_special_values(x)
    with calls_of(softmax_ops._softmax_rows_compiled) as calls:
        fast = F.softmax(x, -1)
    assert calls
    with lantern.reference_mode():
        readable = F.softmax(x, -1)
    assert (fast.shape, fast.stride(), fast.dtype) == (readable.shape, readable.stride(), readable.dtype)
    np.testing.assert_array_equal(fast.numpy(), readable.numpy())
    torch.testing.assert_close(torch.tensor(fast.numpy()), torch.softmax(torch.tensor(x.numpy()), -1),
                               equal_nan=True)


def test_compiled_forward_of_half_and_of_a_dtype_argument():
    x = noncontiguous(3, 4, 40, dtype=lantern.float16)
    for fn in (lambda t: F.softmax(t, -1), lambda t: F.softmax(t, -1, dtype=lantern.float64)):
        fast = fn(x)
        with lantern.reference_mode():
            readable = fn(x)
        assert fast.dtype is readable.dtype
        np.testing.assert_array_equal(fast.numpy(), readable.numpy())


FUSED = [(F.softmax, torch.softmax, softmax_ops._softmax_rows_fused),
         (F.log_softmax, torch.log_softmax, softmax_ops._log_softmax_rows_fused)]


@pytest.mark.parametrize("shape", [(3, 4, 256), (2, 3, 1000), (3, 3, 300)])
@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("function, torch_function, fused", FUSED, ids=["softmax", "log_softmax"])
def test_fused_float32_rows_match_numpy(shape, special, function, torch_function, fused):
    """Rows of _FUSED_ROW float32 elements or more: numba loops per row, within float32 rounding of the readable
    kernel and of torch (nan in the same places)."""
    x = noncontiguous(*shape)
    if special:
        x = with_special_values(x)
    with calls_of(fused) as calls:
        fast = function(x, -1)
    assert calls and shape[-1] >= softmax_ops._FUSED_ROW
    with lantern.reference_mode():
        readable = function(x, -1)
    assert (fast.shape, fast.stride(), fast.dtype) == (readable.shape, readable.stride(), readable.dtype)
    torch.testing.assert_close(torch.tensor(fast.numpy()), torch.tensor(readable.numpy()), equal_nan=True)
    torch.testing.assert_close(torch.tensor(fast.numpy()), torch_function(torch.tensor(x.numpy()), -1),
                               equal_nan=True)


@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_compiled_backward_matches_numpy(dtype, shape):
    x = noncontiguous(*shape, dtype=dtype).requires_grad_()
    g = noncontiguous(*shape, dtype=dtype, seed=1)
    with calls_of(softmax_ops._softmax_backward_rows_compiled) as calls:
        fast, = lantern.autograd.grad(F.softmax(x, -1), x, g)
    assert calls
    with lantern.reference_mode():
        readable, = lantern.autograd.grad(F.softmax(x, -1), x, g)
    tolerance = dict(rtol=1.3e-6, atol=1e-5) if dtype is lantern.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast.numpy(), readable.numpy(), **tolerance)


def assert_close_to_rounding_of_terms(actual, expected, g, y):
    """actual within float32 rounding of expected = g - exp(y) · Σ g, each row measured by its largest term (its
    sum is reassociated); infinities equal."""
    actual, expected, g, y = (a.numpy().astype(np.float64) for a in (actual, expected, g, y))
    terms = np.abs(g) + np.exp(y) * np.abs(g.sum(-1, keepdims=True))
    scale = np.where(np.isfinite(terms), terms, 0).max(-1, keepdims=True)
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(actual[~finite], expected[~finite])
    assert (np.abs(actual - expected)[finite] <= 1.3e-6 * (np.abs(expected) + scale)[finite]).all()


@pytest.mark.parametrize("shape", [(3, 4, 256), (2, 3, 1000)])
@pytest.mark.parametrize("large", [False, True], ids=["log_softmax_output", "large_output"])
def test_fused_log_softmax_backward_matches_numpy(shape, large):
    """_log_softmax_backward_data over float32 rows of _FUSED_ROW or more, within rounding of the readable kernel
    and of torch; also for an output above 0 (the op called directly: libm's exp, inf for exp(100) as there) and
    -inf (a masked entry: the gradient passes)."""
    x, g = noncontiguous(*shape), noncontiguous(*shape, seed=1)
    y = F.log_softmax(x, -1)
    y[0, 0, 1] = float("-inf")
    if large:
        y[0, 1, 3], y[1, 0, 2] = 100.0, 1.0
    op = lantern.ops.aten._log_softmax_backward_data
    with calls_of(softmax_ops._log_softmax_backward_rows_fused) as calls:
        fast = op(g, y, -1, lantern.float32)
    assert calls
    with lantern.reference_mode():
        readable = op(g, y, -1, lantern.float32)
    expected = torch.ops.aten._log_softmax_backward_data(torch.tensor(g.numpy()), torch.tensor(y.numpy()), -1,
                                                         torch.float32)
    assert (fast.shape, fast.stride(), fast.dtype) == (readable.shape, readable.stride(), readable.dtype)
    assert_close_to_rounding_of_terms(fast, readable, g, y)
    assert_close_to_rounding_of_terms(fast, lantern.tensor(expected.numpy()), g, y)


@pytest.mark.parametrize("function", [softmax_ops._softmax_rows_compiled, softmax_ops._softmax_rows_fused,
                                      softmax_ops._softmax_backward_rows_compiled,
                                      softmax_ops._log_softmax_rows_fused,
                                      softmax_ops._log_softmax_backward_rows_fused], ids=lambda f: f.__name__)
def test_other_dims_and_reference_mode_run_the_readable_kernels(function):
    x = noncontiguous(3, 300, 4).requires_grad_()
    with calls_of(function) as calls:
        for softmax in (F.softmax, F.log_softmax):
            softmax(x, 1).sum().backward()
            with lantern.reference_mode():
                y = softmax(x, -1)
                y.backward(lantern.ones_like(y))
    assert not calls
