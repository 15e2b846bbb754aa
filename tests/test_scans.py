"""Scans against torch: cumsum, cumprod (dtype=, in-place, out=), logcumsumexp, cummax and cummin (values,
indices; ties and nan), on non-contiguous inputs of several dtypes, with their errors; gradients equal torch's
(cumprod with zeros included) and pass gradcheck and gradgradcheck in float64.
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, check, noncontig, raises_like
from test_autograd_gradcheck_ops import (
    Case, assert_gradcheck_and_gradgradcheck, assert_gradients_match_torch, uniform,
)

RNG = np.random.default_rng(11)
DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]


def sample(dtype, shape=(2, 3, 4)):
    vals = RNG.uniform(-1.5, 1.5, shape)
    if dtype == "bool":
        vals = vals > 0
    elif dtype.startswith(("int", "uint")):
        vals = np.round(vals * 2) + (2 if dtype == "uint8" else 0)
    elif dtype.startswith("complex"):
        vals = vals + 0.5j * RNG.uniform(-1, 1, shape)
    return noncontig(vals.astype("float32" if dtype == "bfloat16" else dtype))


def as_(m, x, dtype):
    return x.to(m.bfloat16) if dtype == "bfloat16" else x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_cumsum_cumprod(op, dtype):
    x = sample(dtype)
    for dim in (0, 1, -1):
        check(lambda m, x: getattr(m, op)(as_(m, x, dtype), dim), x)
        check(lambda m, x: getattr(as_(m, x, dtype), op)(dim=dim), x)
        check(lambda m, x: getattr(m, op)(as_(m, x, dtype), dim, dtype=m.float64), x)
    if dtype not in ("bool",):
        check(lambda m, x: getattr(as_(m, x, dtype).clone(), op + "_")(1), x)
    check(lambda m, x: getattr(m, op)(as_(m, x, dtype), 1, out=m.empty(0, dtype=m.complex128)), x)


def test_cumulative_special_cases():
    for op in ("cumsum", "cumprod"):
        check(lambda m, x: getattr(m, op)(x, 0), np.array(1.5))
        check(lambda m, x: getattr(m, op)(x, -1), np.array(3))
        check(lambda m, x: getattr(m, op)(x, 1), np.zeros((2, 0)))
        check(lambda m, x: getattr(m, op)(x.t(), 0), noncontig(np.arange(6.).reshape(2, 3)))
        check(lambda m, x: getattr(m, op)(x, 0, out=m.empty(0, dtype=m.int64)), np.array([0.5, 1.5, 2.5]))
        check(lambda m, x: getattr(x, op + "_")(0), np.array([1, 2, 3], np.int32))
        raises_like(lambda m, x: getattr(m, op)(x, 3), sample("float32"))
        raises_like(lambda m, x: getattr(m, op)(x.expand(3, 4), 0, out=x.expand(3, 4)), np.ones(4))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_logcumsumexp(dtype):
    x = sample(dtype)
    for dim in (0, 1, -1):
        check(lambda m, x: m.logcumsumexp(as_(m, x, dtype), dim), x)
        check(lambda m, x: as_(m, x, dtype).logcumsumexp(dim), x)
    check(lambda m, x: m.logcumsumexp(as_(m, x, dtype), 1, out=m.empty(0, dtype=as_(m, x, dtype).dtype)), x)
    raises_like(lambda m, x: m.logcumsumexp(x, 1, out=m.empty(0, dtype=m.complex128)), x)


def test_logcumsumexp_special_cases():
    big = np.array([[1000.0, 1000.0, -1000.0, 2.0], [-np.inf, -np.inf, 0.0, np.inf], [np.nan, 1.0, 2.0, 3.0]])
    check(lambda m, x: m.logcumsumexp(x, 1), noncontig(big))
    check(lambda m, x: m.logcumsumexp(x, 0), np.array(2.0))
    check(lambda m, x: m.logcumsumexp(x, 1), np.zeros((2, 0)))
    raises_like(lambda m, x: m.logcumsumexp(x, 0), np.arange(3))
    raises_like(lambda m, x: m.logcumsumexp(x, 2), sample("float32", (2, 2)))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "complex64"])
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin(op, dtype):
    x = sample(dtype)
    for dim in (0, 1, -1):
        def fn(m, x):
            r = getattr(m, op)(as_(m, x, dtype), dim)
            assert r.values is r[0] and r.indices is r[1] and type(r).__name__ == op
            return tuple(r)
        check(fn, x)
        check(lambda m, x: tuple(getattr(as_(m, x, dtype), op)(dim=dim)), x)


def test_cummax_cummin_ties_nan_and_edges():
    ties = noncontig(np.array([[1, 3, 3, 2, 5, 5], [4, 4, 1, 1, 0, 4]], np.int64))
    nans = noncontig(np.array([[1.0, np.nan, 0.0, np.nan, 5.0], [2.0, 1.0, 2.0, 0.5, np.nan]]))
    for op in ("cummax", "cummin"):
        check(lambda m, x: tuple(getattr(m, op)(x, 1)), ties)
        check(lambda m, x: tuple(getattr(m, op)(x, 1)), nans)
        check(lambda m, x: tuple(getattr(m, op)(x, 0)), np.array(2.5))
        check(lambda m, x: tuple(getattr(m, op)(x, 1)), np.zeros((2, 0)))
        raises_like(lambda m, x: getattr(m, op)(x, 2), ties)
        raises_like(lambda m, x: getattr(m, op)(x, 0), sample("complex64"))


def distinct(*shape):
    return RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.31 - 1.1


GRAD_CASES = [
    Case("cumsum", lambda m, x: x.cumsum(1), uniform(2, 3)),
    Case("cumsum", lambda m, x: m.cumsum(x, 0, dtype=m.float32), uniform(3, 2), label="dtype", check=False),
    Case("cumsum", lambda m, x: x.cumsum(0), uniform(3), label="1d"),
    Case("cumprod", lambda m, x: x.cumprod(1), uniform(2, 4)),
    Case("cumprod", lambda m, x: x.cumprod(1), np.array([[1.5, 0.0, 2.0, -0.5], [0.0, 0.7, 0.0, 1.2]]),
         label="zeros"),
    Case("cumprod", lambda m, x: x.cumprod(0), np.array([[0.5, 1.3], [0.0, 0.7], [-1.1, 0.0]]), label="zeros_dim0"),
    Case("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1), uniform(2, 4)),
    Case("logcumsumexp", lambda m, x: x.logcumsumexp(0), uniform(3, 2) * 40, label="large"),
    Case("cummax", lambda m, x: x.cummax(1)[0], distinct(2, 4)),
    Case("cummax", lambda m, x: x.cummax(0).values, np.array([[1.0, 2.0], [1.0, 0.5], [3.0, 2.0]]), label="ties",
         check=False),
    Case("cummin", lambda m, x: m.cummin(x, -1)[0], distinct(3, 3)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_gradients_match_torch(case):
    assert_gradients_match_torch(case)


@pytest.mark.parametrize("case", [c for c in GRAD_CASES if c.check], ids=lambda c: c.id)
def test_gradcheck_and_gradgradcheck_float64_noncontiguous(case):
    assert_gradcheck_and_gradgradcheck(case)


def test_complex_gradients_match_torch():
    z = (uniform(2, 3) + 1j * uniform(2, 3)).astype(np.complex128)
    for fn in (lambda m, x: x.cumsum(1), lambda m, x: x.cumprod(1)):
        case = Case("complex", fn, z)
        assert_gradients_match_torch(case)


def test_cumsum_backward_after_inplace_scan():
    def run(lib):
        x = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=lib.float64, requires_grad=True)
        y = (x * 2).cumsum_(1)
        y.backward(lib.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]], dtype=lib.float64))
        return type(y.grad_fn).__name__, x.grad
    assert_same(run(lantern), run(torch))


def test_meta_device_shapes_match_cpu():
    cpu, meta = lantern.zeros(2, 3), lantern.empty(2, 3, device="meta")
    for fn in (lambda x: x.cumsum(1), lambda x: x.cumprod(0, dtype=lantern.float64), lambda x: x.logcumsumexp(1),
               lambda x: x.cummax(0), lambda x: x.cummin(1)):
        expected, got = fn(cpu), fn(meta)
        for e, g in zip(expected if isinstance(expected, tuple) else (expected,), got if isinstance(got, tuple) else
                        (got,)):
            assert (g.shape, g.dtype, g.device.type) == (e.shape, e.dtype, "meta")
