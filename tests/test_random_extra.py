"""multinomial, poisson, geometric_, cauchy_ and log_normal_: shapes, dtypes, strides and error classes against
torch, reproducibility through generators and manual_seed, and loose statistics (the streams differ from torch's)."""
import math

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, noncontig, raises_like, to_lib


def shapes_like_torch(fn, *inputs):
    """fn gives the same dtype, shape and strides on both libraries (values are random, so not compared)."""
    got = fn(lantern, *[to_lib(lantern, x) for x in inputs])
    expected = fn(torch, *[to_lib(torch, x) for x in inputs])
    assert got.dtype.name == str(expected.dtype).replace("torch.", "")
    assert tuple(got.shape) == tuple(expected.shape)
    if expected.numel() > 1:
        assert got.stride() == expected.stride()
    return got


# ---- multinomial -------------------------------------------------------------------------------------------------

PROBS = noncontig(np.array([[0.1, 0.0, 0.5, 0.4], [1.0, 1.0, 1.0, 1.0]], np.float32))


@pytest.mark.parametrize("fn", [
    lambda m, p: m.multinomial(p, 3), lambda m, p: m.multinomial(p[0], 2), lambda m, p: p.multinomial(7, True),
    lambda m, p: m.multinomial(p.double(), 4), lambda m, p: m.multinomial(p[:0], 2, True),
    lambda m, p: m.multinomial(p, 2, out=m.empty(0, dtype=m.int64)),
])
def test_multinomial_shapes_dtypes(fn):
    shapes_like_torch(fn, PROBS)


@pytest.mark.parametrize("fn", [
    lambda m, p: m.multinomial(p.long(), 1), lambda m, p: m.multinomial(p.unsqueeze(0), 1),
    lambda m, p: m.multinomial(p, 0), lambda m, p: m.multinomial(p, 5), lambda m, p: m.multinomial(p - 0.5, 1),
    lambda m, p: m.multinomial(p * 0, 1, True), lambda m, p: m.multinomial(p * float("nan"), 1),
    lambda m, p: m.multinomial(p, 2.0), lambda m, p: m.multinomial(p, 2, out=m.empty(0, dtype=m.int32)),
    lambda m, p: m.multinomial(p.to(m.complex64), 1), lambda m, p: m.multinomial(p[:, :0], 1, True),
])
def test_multinomial_errors(fn):
    raises_like(fn, PROBS)


def test_multinomial_without_replacement_draws_distinct_categories_never_zero_weight_first():
    p = lantern.tensor([[0.1, 0.0, 0.5, 0.4]] * 500)
    draws = lantern.multinomial(p, 3).numpy()
    assert all(len(set(row)) == 3 for row in draws)
    assert not (draws == 1).any()
    assert np.isin(lantern.multinomial(lantern.tensor([0.0, 2.0, 0.0]), 3).numpy()[0], [1]).all()


def test_multinomial_frequencies():
    g = lantern.Generator().manual_seed(3)
    weights = np.array([0.1, 0.0, 0.5, 0.4])
    draws = lantern.multinomial(lantern.tensor(weights * 7), 20000, True, generator=g).numpy()
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / 20000, weights, atol=0.015)
    first = lantern.multinomial(lantern.tensor([weights] * 20000), 1, generator=g).numpy()[:, 0]
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 20000, weights, atol=0.015)
    lantern.manual_seed(4)
    again = lantern.multinomial(lantern.tensor([weights] * 50), 2).numpy()
    lantern.manual_seed(4)
    np.testing.assert_array_equal(again, lantern.multinomial(lantern.tensor([weights] * 50), 2).numpy())


# ---- poisson -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_poisson_shape_dtype_strides(dtype):
    rates = noncontig(np.array([[0.5, 2.0, 0.0], [3.0, 1.0, 7.0]], dtype))
    out = shapes_like_torch(lambda m, r: m.poisson(r.t()), rates)
    assert (out.numpy() >= 0).all() and (out.numpy() == np.round(out.numpy())).all()
    assert out.numpy().T[0, 2] == 0


@pytest.mark.parametrize("fn", [lambda m, r: m.poisson(r.long()), lambda m, r: m.poisson(r - 5),
                                lambda m, r: m.poisson(r.to(m.bool))])
def test_poisson_errors(fn):
    raises_like(fn, np.array([1.0, 2.0], np.float32))


def test_poisson_mean_variance_and_reproducibility():
    draws = lantern.poisson(lantern.full((20000,), 4.0), generator=lantern.Generator().manual_seed(2))
    assert abs(draws.mean().item() - 4.0) < 0.1 and abs(draws.var().item() - 4.0) < 0.3
    again = lantern.poisson(lantern.full((20000,), 4.0), generator=lantern.Generator().manual_seed(2))
    assert lantern.equal(draws, again)


# ---- in-place samplers -------------------------------------------------------------------------------------------

SAMPLERS = {
    "geometric_": (lambda t, g=None: t.geometric_(0.3, generator=g), 1 / 0.3),
    "log_normal_": (lambda t, g=None: t.log_normal_(0.5, 0.25, generator=g), math.exp(0.5 + 0.25 ** 2 / 2)),
    "cauchy_": (lambda t, g=None: t.cauchy_(1.0, 2.0, generator=g), 1.0),  # the median: the mean does not exist
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "uint8", "bool", "complex64"])
def test_samplers_dtypes_and_errors_like_torch(name, dtype):
    sample = SAMPLERS[name][0]

    def fn(m, x):
        t = m.zeros(2, 3, dtype=getattr(m, dtype)).t()
        out = sample(t)
        return out is t, out.dtype, out.stride()
    try:
        expected = fn(torch, None)
    except Exception:
        raises_like(fn, None)
        return
    assert_same(fn(lantern, None), expected)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_samplers_statistics_and_reproducibility(name):
    sample, centre = SAMPLERS[name]
    values = sample(lantern.empty(20000, dtype=lantern.float64), lantern.Generator().manual_seed(5)).numpy()
    statistic = np.median(values) if name == "cauchy_" else values.mean()
    assert abs(statistic - centre) < 0.05 * centre
    again = sample(lantern.empty(20000, dtype=lantern.float64), lantern.Generator().manual_seed(5)).numpy()
    np.testing.assert_array_equal(values, again)
    lantern.manual_seed(11)
    first = sample(lantern.empty(5)).numpy()
    lantern.manual_seed(11)
    np.testing.assert_array_equal(first, sample(lantern.empty(5)).numpy())


def test_geometric_draws_positive_integers():
    values = lantern.empty(1000, dtype=lantern.int64).geometric_(0.5).numpy()
    assert values.min() >= 1 and values.dtype == np.int64


@pytest.mark.parametrize("fn", [
    lambda m: m.zeros(3).geometric_(0), lambda m: m.zeros(3).geometric_(1.5), lambda m: m.zeros(3).cauchy_(0, 0),
    lambda m: m.zeros(3).log_normal_(1, -1), lambda m: m.zeros(3).expand(2, 3).geometric_(0.5),
])
def test_sampler_argument_errors(fn):
    raises_like(fn)


ZERO_GRADIENT_SAMPLERS = {
    "poisson": lambda m, x: m.poisson(x.abs()), "geometric_": lambda m, x: (x * 1).geometric_(0.5),
    "cauchy_": lambda m, x: (x * 1).cauchy_(), "log_normal_": lambda m, x: (x * 1).log_normal_(),
}


@pytest.mark.parametrize("name", sorted(ZERO_GRADIENT_SAMPLERS))
def test_sampler_gradients_are_zero_like_torch_and_gradcheck(name):
    """The draws do not depend smoothly on their parameters: a zero gradient (PyTorch's), to second order."""
    sample = ZERO_GRADIENT_SAMPLERS[name]
    values = noncontig(np.array([[0.5, 1.5, 2.0], [1.0, 0.3, 0.7]]))
    results = []
    for lib in (torch, lantern):
        x = to_lib(lib, values).requires_grad_()
        y = sample(lib, x)
        results.append((type(y.grad_fn).__name__, lib.autograd.grad(y.sum(), x)[0]))
    assert_same(results[1], results[0])
    x = to_lib(lantern, values).requires_grad_()
    fn = lambda t: sample(lantern, t) * 0 + t * t  # noqa: E731  (deterministic: the draw only enters times 0)
    assert lantern.autograd.gradcheck(fn, [x], eps=1e-6, atol=1e-5)
    assert lantern.autograd.gradgradcheck(fn, [x], eps=1e-6, atol=1e-4)


def test_meta_device():
    p = lantern.empty(4, 5, device="meta")
    assert lantern.multinomial(p, 3).shape == (4, 3) and lantern.poisson(p).device.type == "meta"
    assert p.geometric_(0.5) is p and p.cauchy_() is p and p.log_normal_() is p
