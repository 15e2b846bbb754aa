"""Layer norm's compiled specialisations (lantern/ops/nn_norm.py over nn_norm_numba.py) against the readable NumPy
kernels and formulas they replace, and against PyTorch. Their sums are reassociated, so values agree to rounding:
float32 within torch.testing's default tolerance, float64 to ~1e-12."""
import numpy as np
import pytest
import torch

import lantern
from intra_op_fixtures import fast_paths  # noqa: F401 (fixture)
from lantern.ops import nn_norm
from lantern.ops.call_by_name import call_op
from lantern.ops.nn_norm import _layer_norm_weight_grad, layer_norm_weight_grad_on_arrays
from test_ops_specialisations import calls_of

pytest.importorskip("numba")
pytestmark = pytest.mark.usefixtures("fast_paths")  # fast paths on, also in the reference tier

TOLERANCE = {lantern.float32: dict(rtol=1.3e-6, atol=1e-5), lantern.float64: dict(rtol=1e-12, atol=1e-12)}


def noncontiguous(*shape, dtype=lantern.float32, seed=0, scale=3.0, shift=1.0):
    """A transposed view of values away from zero mean (what layer norm's sums are sensitive to)."""
    data = np.random.default_rng(seed).standard_normal(shape[::-1]) * scale + shift
    return lantern.tensor(data, dtype=dtype).permute(*range(len(shape) - 1, -1, -1))


def close(fast, readable, dtype):
    np.testing.assert_allclose(fast.detach().numpy(), readable.detach().numpy(), **TOLERANCE[dtype])


def affine(normalized_shape, dtype, which):
    w, b = (noncontiguous(*normalized_shape, dtype=dtype, seed=s) for s in (1, 2))
    return {"both": (w, b), "weight": (w, None), "none": (None, None)}[which]


CASES = [((6, 9, 40), (40,)), ((5, 7, 3, 16), (3, 16)), ((4, 5), (5,)), ((3, 2, 1), (1,))]


@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
@pytest.mark.parametrize("shape, normalized_shape", CASES)
@pytest.mark.parametrize("which", ["both", "weight", "none"])
def test_compiled_forward_matches_numpy(dtype, shape, normalized_shape, which):
    x = noncontiguous(*shape, dtype=dtype)
    w, b = affine(normalized_shape, dtype, which)
    fast = lantern.native_layer_norm(x, normalized_shape, w, b, 1e-5)
    with lantern.reference_mode():
        readable = lantern.native_layer_norm(x, normalized_shape, w, b, 1e-5)
    for f, r in zip(fast, readable):
        assert (f.shape, f.stride(), f.dtype) == (r.shape, r.stride(), r.dtype)
        close(f, r, dtype)
    as_torch = [None if t is None else torch.tensor(t.numpy()) for t in (x, w, b)]
    expected = torch.native_layer_norm(as_torch[0], normalized_shape, *as_torch[1:], 1e-5)
    for f, e in zip(fast, expected):
        torch.testing.assert_close(torch.tensor(f.numpy()), e)


@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("grad_kind", ["noncontiguous", "expanded"])
def test_compiled_input_backward_matches_numpy(dtype, with_weight, grad_kind):
    x = noncontiguous(8, 5, 24, dtype=dtype)
    w = noncontiguous(24, dtype=dtype, seed=1) if with_weight else None
    _, mean, rstd = lantern.native_layer_norm(x, (24,), w, None, 1e-5)
    g = noncontiguous(8, 5, 24, dtype=dtype, seed=3) if grad_kind == "noncontiguous" else \
        lantern.tensor(1.5, dtype=dtype).expand(8, 5, 24)
    args = (g, x, (24,), mean, rstd, w, 1e-5)
    fast = call_op("_layer_norm_input_backward", *args)
    with lantern.reference_mode():
        readable = call_op("_layer_norm_input_backward", *args)
    close(fast, readable, dtype)


@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
def test_weight_grad_on_arrays_matches_formula(dtype):
    x = noncontiguous(6, 7, 3, 16, dtype=dtype)
    g = noncontiguous(6, 7, 3, 16, dtype=dtype, seed=4)
    _, mean, rstd = lantern.native_layer_norm(x, (3, 16), None, None, 1e-5)
    fast = layer_norm_weight_grad_on_arrays(g, x, (3, 16), mean, rstd)
    readable = _layer_norm_weight_grad(g, x, (3, 16), 1e-5).sum((0, 1))
    assert (fast.shape, fast.dtype) == (readable.shape, readable.dtype)
    close(fast, readable, dtype)


@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("grad_kind", ["noncontiguous", "expanded"])
def test_input_and_bias_grads_on_arrays_match_formulas(dtype, with_weight, grad_kind):
    x = noncontiguous(6, 7, 3, 16, dtype=dtype)
    w = noncontiguous(3, 16, dtype=dtype, seed=1) if with_weight else None
    g = noncontiguous(6, 7, 3, 16, dtype=dtype, seed=4) if grad_kind == "noncontiguous" else \
        lantern.tensor(-0.5, dtype=dtype).expand(6, 7, 3, 16)
    _, mean, rstd = lantern.native_layer_norm(x, (3, 16), w, None, 1e-5)
    pairs = [(nn_norm.layer_norm_input_grad_on_arrays(g, x, (3, 16), w, mean, rstd),
              nn_norm._layer_norm_input_grad(g, x, (3, 16), w, 1e-5, mean, rstd)),
             (nn_norm.layer_norm_bias_grad_on_arrays(g, (3, 16)), nn_norm._layer_norm_bias_grad(g, (3, 16)))]
    for fast, readable in pairs:
        assert (fast.shape, fast.stride(), fast.dtype) == (readable.shape, readable.stride(), readable.dtype)
        close(fast, readable, dtype)


def test_bias_grad_without_leading_dims_is_the_gradient():
    g = noncontiguous(3, 16)
    assert nn_norm._layer_norm_bias_grad(g, (3, 16)) is g
    close(nn_norm.layer_norm_bias_grad_on_arrays(g, (3, 16)), g, lantern.float32)


def layer_norm_step(dtype):
    x = noncontiguous(4, 6, 32, dtype=dtype).requires_grad_()
    w, b = (t.clone().requires_grad_() for t in affine((32,), dtype, "both"))
    y = lantern.nn.functional.layer_norm(x, (32,), w, b)
    return (y * noncontiguous(4, 6, 32, dtype=dtype, seed=5)).sum(), (x, w, b)


ON_ARRAYS = (layer_norm_weight_grad_on_arrays, nn_norm.layer_norm_input_grad_on_arrays,
             nn_norm.layer_norm_bias_grad_on_arrays)
# where each runs in a step: the derivative formulas on arrays without create_graph only, the compiled rows also
# under create_graph (through the ops the readable formulas dispatch)
RUNS = {nn_norm._layer_norm_rows_compiled: {"fast", "create_graph"},
        nn_norm._layer_norm_backward_rows_compiled: {"fast", "create_graph"}, **{f: {"fast"} for f in ON_ARRAYS}}


@pytest.mark.parametrize("function", list(RUNS), ids=lambda f: f.__name__)
def test_each_runs_only_where_it_may(function):
    """With fast paths on the specialisation runs; in reference mode none does, and under create_graph the
    derivative formulas stay readable (their lantern ops are what double backward differentiates)."""
    grads = {}
    for setting in ("fast", "reference", "create_graph"):
        with lantern.reference_mode(setting == "reference"):
            loss, leaves = layer_norm_step(lantern.float64)
            with calls_of(function) as calls:
                grads[setting] = lantern.autograd.grad(loss, leaves, create_graph=setting == "create_graph")
            if function is nn_norm._layer_norm_rows_compiled:
                with calls_of(function) as forward_calls:
                    layer_norm_step(lantern.float64)
                calls += forward_calls
        assert bool(calls) is (setting in RUNS[function]), setting
    for fast, readable in zip(grads["fast"], grads["reference"]):
        close(fast, readable, lantern.float64)


def test_double_backward_with_fast_paths_on():
    x = noncontiguous(3, 5, dtype=lantern.float64).requires_grad_()
    w, b = (t.clone().requires_grad_() for t in affine((5,), lantern.float64, "both"))
    assert lantern.autograd.gradgradcheck(lambda *a: lantern.nn.functional.layer_norm(a[0], (5,), a[1], a[2]),
                                          (x, w, b))


def test_half_precision_runs_the_compiled_rows_in_float32():
    x = noncontiguous(4, 6, 32, dtype=lantern.float16)
    w, b = affine((32,), lantern.float32, "both")
    fast = lantern.nn.functional.layer_norm(x, (32,), w, b)
    with lantern.reference_mode():
        readable = lantern.nn.functional.layer_norm(x, (32,), w, b)
    assert fast.dtype is lantern.float16
    np.testing.assert_allclose(fast.numpy().astype(np.float32), readable.numpy().astype(np.float32), atol=2e-3)
