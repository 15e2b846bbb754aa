"""The convolution's correlation by taps (nn_conv.correlate_by_taps: one GEMM per kernel tap on the padded input,
no im2col columns) against the readable im2col correlation: the same sums grouped by tap, so equal bits on
integer-valued floats and equal to rounding otherwise; and where it runs (an input gradient: more input than
output channels, stride 1, one group)."""
import numpy as np
import pytest

import lantern
import lantern.nn.functional as F
from lantern.ops import nn_conv
from lantern.ops.numba_kernels import optional_kernels
from intra_op_fixtures import fast_paths  # noqa: F401 (fixture)
from test_ops_specialisations import calls_of

pytestmark = pytest.mark.usefixtures("fast_paths")  # fast paths on, also in the reference tier

CASES = [  # (input shape, weight shape, padding, dilation)
    ((5, 32, 14, 14), (16, 32, 3, 3), (1, 1), (1, 1)),   # the CNN benchmark's second input gradient
    ((3, 5, 9, 8), (2, 5, 3, 2), (2, 0), (2, 1)),
    ((3, 5, 9, 8), (2, 5, 3, 3), (-1, 1), (1, 1)),       # a transposed convolution's crop: negative padding
    ((2, 4, 11), (3, 4, 4), (2,), (1,)),
    ((2, 3, 5, 6, 4), (2, 3, 3, 2, 3), (1, 1, 1), (1, 1, 1)),
]


def arrays(x_shape, w_shape, dtype, integer):
    rng = np.random.default_rng(0)
    draw = (lambda shape: rng.integers(-4, 5, shape)) if integer else rng.standard_normal
    return draw(x_shape).astype(dtype), draw(w_shape).astype(dtype), draw(w_shape[:1]).astype(dtype)


def correlation(x, w, bias, padding, dilation, reference):
    out = np.empty(x.shape[:1] + w.shape[:1] + tuple(
        n + 2 * p - d * (k - 1) for n, p, d, k in zip(x.shape[2:], padding, dilation, w.shape[2:])), x.dtype)
    b = bias.reshape((-1,) + (1,) * (x.ndim - 2))
    with lantern.reference_mode(reference), calls_of(nn_conv.correlate_by_taps) as calls:
        nn_conv.correlate(np, x, w, (1,) * (x.ndim - 2), padding, dilation, 1, x.dtype, out, b)
    assert bool(calls) is not reference
    return out


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, w_shape, padding, dilation", CASES)
def test_correlation_by_taps_matches_im2col(x_shape, w_shape, padding, dilation, dtype, integer):
    x, w, bias = arrays(x_shape, w_shape, dtype, integer)
    by_taps = correlation(x, w, bias, padding, dilation, reference=False)
    readable = correlation(x, w, bias, padding, dilation, reference=True)
    if integer:
        np.testing.assert_array_equal(by_taps, readable)
    else:
        tolerance = 1e-4 if dtype == np.float32 else 1e-10   # test_nn_conv's float32 conv2d tolerance vs torch
        np.testing.assert_allclose(by_taps, readable, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("conv, spatial", [(F.conv1d, (10,)), (F.conv2d, (10, 10))])
def test_an_input_gradient_runs_by_taps_or_compiled_col2im(conv, spatial):
    """With more input than output channels, the input gradient's correlation runs by taps; in 2-d, with numba
    installed, a GEMM and the compiled col2im run instead (the transposed convolution)."""
    x = lantern.randn(4, 16, *spatial, requires_grad=True)
    w = lantern.randn(32, 16, *(3 for _ in spatial))
    col2im_instead = len(spatial) == 2 and optional_kernels("nn_conv_numba") is not None
    counts = []
    for kernel in (nn_conv.correlate_by_taps, nn_conv.col2im_compiled):
        with lantern.reference_mode(False), calls_of(kernel) as calls:
            out = conv(x, w, padding=1)
            assert not calls                   # the forward: fewer input than output channels, the columns
            out.sum().backward()
        counts.append(len(calls))
    assert counts == ([0, 1] if col2im_instead else [1, 0])


@pytest.mark.parametrize("stride, groups", [((2, 2), 1), ((1, 1), 2)])
def test_strided_and_grouped_correlations_keep_the_columns(stride, groups):
    assert not nn_conv.by_taps_applies(np.empty((2, 8 // groups, 3, 3)), stride, groups)


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, w_shape, stride, padding, groups", [
    ((5, 1, 12, 12), (4, 1, 3, 3), (1, 1), (1, 1), 1),       # a first layer (the CNN's 16 x 1 x 3 x 3)
    ((4, 4, 9, 8), (6, 2, 3, 2), (2, 1), (1, 0), 2),          # strided, grouped: the generic columns
    ((3, 2, 11), (3, 2, 4), (1,), (2,), 1),
])
def test_per_sample_weight_products_match_one_gemm(x_shape, w_shape, stride, padding, groups, dtype, integer,
                                                   monkeypatch):
    x, w, _ = arrays(x_shape, w_shape, dtype, integer)
    out_sizes = tuple((n + 2 * p - k) // s + 1 for n, p, k, s in zip(x_shape[2:], padding, w_shape[2:], stride))
    grad = arrays((x_shape[0], w_shape[0]) + out_sizes, w_shape, dtype, integer)[0]
    monkeypatch.setattr(nn_conv, "_thread_slices",   # two samples a slice, a last shorter one
                        lambda n, sample_bytes: [slice(i, min(i + 2, n)) for i in range(0, n, 2)])
    args = (np, x, grad, w_shape[2:], stride, padding, (1,) * len(stride), groups, np.dtype(dtype))
    calls, per_sample_product = [], nn_conv.per_sample_product   # counted on every thread: a worker may take
    monkeypatch.setattr(nn_conv, "per_sample_product",            # all the slices
                        lambda *arguments: calls.append(1) or per_sample_product(*arguments))
    with lantern.reference_mode(False):
        per_sample = nn_conv.weight_gradient(*args)
    assert calls
    monkeypatch.setattr(nn_conv, "per_sample_applies", lambda rows, channels: False)
    with lantern.reference_mode(False):
        one_gemm = nn_conv.weight_gradient(*args)
    if integer:
        np.testing.assert_array_equal(per_sample, one_gemm)
    else:
        tolerance = 1e-4 if dtype == np.float32 else 1e-10
        np.testing.assert_allclose(per_sample, one_gemm, rtol=tolerance, atol=tolerance)


def test_large_weights_keep_one_gemm_per_slice():
    assert nn_conv.per_sample_applies(9, 16) and not nn_conv.per_sample_applies(144, 32)


@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
@pytest.mark.parametrize("shape", [(64, 16, 28, 28), (3, 5, 7), (2, 3, 4, 5, 6)])
def test_bias_gradient_on_arrays_matches_the_sum(shape, dtype):
    """Batch first, then each channel's positions: the readable sum's terms in another order (equal to rounding;
    exactly equal on integer values)."""
    grad = lantern.randn(*shape, dtype=dtype, generator=lantern.Generator().manual_seed(0))
    reduced = (0,) + tuple(range(2, len(shape)))
    rounding = 4 * lantern.finfo(dtype).eps * grad.abs().sum(reduced).max().item()   # a few ulps of Σ|g|
    np.testing.assert_allclose(nn_conv.conv_bias_backward_on_arrays(grad).numpy(),
                               nn_conv.conv_bias_backward(grad).numpy(), rtol=0, atol=rounding)
    whole = grad.round()
    assert lantern.equal(nn_conv.conv_bias_backward_on_arrays(whole), nn_conv.conv_bias_backward(whole))



def test_a_bias_gradient_on_arrays_matches_torch():
    x, w, b = lantern.randn(2, 3, 6, 6), lantern.randn(4, 3, 3, 3), lantern.randn(4, requires_grad=True)
    with lantern.reference_mode(False), calls_of(nn_conv.conv_bias_backward_on_arrays) as calls:
        grad, = lantern.autograd.grad(F.conv2d(x, w, b).square().sum(), b)
    assert len(calls) == 1
    torch = pytest.importorskip("torch")
    t_b = torch.tensor(b.detach().numpy(), requires_grad=True)
    expected, = torch.autograd.grad(torch.nn.functional.conv2d(
        torch.tensor(x.numpy()), torch.tensor(w.numpy()), t_b).square().sum(), t_b)
    np.testing.assert_allclose(grad.numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)
