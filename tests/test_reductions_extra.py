"""The reductions beyond sum/mean/max against torch: var, std, var_mean, std_mean (correction= / unbiased=),
logsumexp, nansum, nanmean, norm, count_nonzero, aminmax, median, nanmedian, mode, quantile, nanquantile: values,
dtypes, method / out= forms, non-contiguous inputs, errors; gradients equal torch's and pass gradcheck and
gradgradcheck in float64.
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, check, matches_torch, noncontig, raises_like
from test_autograd_gradcheck_ops import (
    Case, assert_gradcheck_and_gradgradcheck, assert_gradients_match_torch, uniform, vjp,
)

RNG = np.random.default_rng(5)
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def sample(dtype="float32", shape=(2, 3, 4), nans=False):
    """Distinct values (no ties: selections and their gradients are well defined), non-contiguous."""
    vals = RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.37 - 2.0
    if dtype.startswith("complex"):
        vals = vals + 1j * RNG.uniform(-1, 1, shape)
    if nans:
        vals.flat[::5] = np.nan
    return noncontig(vals.astype("float32" if dtype == "bfloat16" else dtype))


def as_(m, x, dtype):
    return x.to(m.bfloat16) if dtype == "bfloat16" else x




# ---- var / std / var_mean / std_mean ----------------------------------------------------------------------------

CORRECTION_CALLS = [
    lambda f, x: f(x),
    lambda f, x: f(x, 1),
    lambda f, x: f(x, (0, 2), keepdim=True),
    lambda f, x: f(x, -1, False),
    lambda f, x: f(x, 1, True, True),
    lambda f, x: f(x, False),
    lambda f, x: f(x, dim=(1,), correction=0),
    lambda f, x: f(x, 2, correction=2.5, keepdim=True),
    lambda f, x: f(x, unbiased=False),
    lambda f, x: f(x, dim=None, correction=5),  # more correction than elements: inf, as torch
]


@pytest.mark.parametrize("dtype", FLOATS + ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["var", "std", "var_mean", "std_mean"])
def test_var_std_forms(op, dtype):
    for call in CORRECTION_CALLS:
        check(lambda m, x: call(getattr(m, op), as_(m, x, dtype)), sample(dtype))
        if op in ("var", "std"):
            check(lambda m, x: call(lambda *a, **k: getattr(as_(m, x, dtype), op)(*a[1:], **k), x), sample(dtype))


def test_var_std_edge_cases():
    for op in ("var", "std", "var_mean", "std_mean"):
        check(lambda m, x: getattr(m, op)(x), np.array(1.5))
        check(lambda m, x: getattr(m, op)(x, 0, correction=0), np.array(1.5))
        check(lambda m, x: getattr(m, op)(x, 1), np.zeros((2, 0)))
        check(lambda m, x: getattr(m, op)(x, 0), np.ones((1, 3)))
        raises_like(lambda m, x: getattr(m, op)(x), np.arange(4))
        raises_like(lambda m, x: getattr(m, op)(x, 3), sample())
        raises_like(lambda m, x: getattr(m, op)(x, 0, True, correction=1), sample())
    check(lambda m, x: x.std(0), np.array([[3.0, 1.0], [3.0, 2.0]]))


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_out(op):
    def fn(m, x):
        o = m.empty(0, dtype=m.float64)
        r = getattr(m, op)(x, 1, out=o)
        assert r is o
        return o
    check(fn, sample("float32"))
    raises_like(lambda m, x: getattr(m, op)(x, 1, out=m.empty(0, dtype=m.int64)), sample("float32"))


# ---- logsumexp / nansum / nanmean / count_nonzero / aminmax / norm -------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS + ["int64", "bool", "complex64"])
def test_logsumexp(dtype):
    for dim, keepdim in ((0, False), (-1, True), ((0, 2), False), ((0, 1, 2), True)):
        check(lambda m, x: m.logsumexp(as_(m, x, dtype), dim, keepdim), sample(dtype) > 0 if dtype == "bool" else
              sample(dtype))
    check(lambda m, x: as_(m, x, dtype).logsumexp(1), sample("float32"))


def test_logsumexp_is_stable_and_keeps_infinities():
    big = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0]])
    check(lambda m, x: m.logsumexp(x, 1), noncontig(big))
    check(lambda m, x: m.logsumexp(x, 0), np.array(3.0))
    check(lambda m, x: m.logsumexp(x, 1), np.zeros((2, 0)))
    check(lambda m, x: m.logsumexp(x, 1, out=m.empty(0)), sample())


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8", "bool"])
def test_nansum_nanmean(dtype):
    x = sample(dtype, nans=dtype in FLOATS) if dtype in FLOATS else (sample("float32") * 3).astype(dtype)
    for op in ("nansum", "nanmean"):
        if op == "nanmean" and dtype not in FLOATS:
            raises_like(lambda m, x: m.nanmean(x), x)
            continue
        for args in ((), (1,), ((0, 2), True), (-1, False)):
            check(lambda m, x: getattr(m, op)(as_(m, x, dtype), *args), x)
            check(lambda m, x: getattr(as_(m, x, dtype), op)(*args), x)
    check(lambda m, x: m.nansum(x, 1, dtype=m.float64), x)
    check(lambda m, x: m.nansum(x, 0, out=m.empty(0, dtype=m.float64)), x)


def test_nan_reductions_special_cases():
    allnan = np.full((2, 3), np.nan)
    check(lambda m, x: (m.nansum(x), m.nanmean(x, 1)), allnan)
    check(lambda m, x: m.nanmean(x, 1, out=m.empty(0, dtype=m.float64)), sample(nans=True))
    check(lambda m, x: m.nanmean(x, dtype=m.float64), sample(nans=True))
    raises_like(lambda m, x: m.nansum(x), sample("complex64"))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64"])
def test_count_nonzero(dtype):
    x = (sample("float32") * 2).round().astype(dtype) if dtype != "complex64" else sample(dtype)
    for args in ((), (1,), ((0, 2),), (-1,)):
        check(lambda m, x: m.count_nonzero(x, *args), x)
        check(lambda m, x: x.count_nonzero(*args), x)
    check(lambda m, x: m.count_nonzero(x, dim=0), np.array(0.0))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool"])
def test_aminmax(dtype):
    x = (sample("float32") * 3).astype(dtype) if dtype != "bool" else sample() > 0
    for kw in ({}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"keepdim": True}):
        def fn(m, x):
            r = m.aminmax(x, **kw)
            assert r.min is r[0] and r.max is r[1] and type(r).__name__ == "aminmax"
            return tuple(r)
        check(fn, x)
        check(lambda m, x: tuple(x.aminmax(**kw)), x)
    raises_like(lambda m, x: m.aminmax(x), np.zeros((0, 2)))
    raises_like(lambda m, x: m.aminmax(x), sample("complex64"))
    check(lambda m, x: tuple(m.aminmax(x, dim=0)), np.array(2.0))


@pytest.mark.parametrize("p", [None, "fro", 1, 2, 3, 0.5, 0, float("inf"), -float("inf")])
def test_norm(p):
    for dim, keepdim in ((None, False), (1, False), ((0, 2), True), (-1, True)):
        check(lambda m, x: m.norm(x, p, dim, keepdim), sample(), atol=1e-4, rtol=1e-5)
        check(lambda m, x: x.norm(p, dim, keepdim), sample("float64"))
    check(lambda m, x: x.norm(p), sample("complex64"), atol=1e-4, rtol=1e-5)


def test_norm_forms_and_errors():
    check(lambda m, x: m.norm(x, dim=1, dtype=m.float64), sample())
    check(lambda m, x: m.norm(x, 2, 1, out=m.empty(0)), sample())
    check(lambda m, x: x.norm(), np.zeros((0, 3)))
    raises_like(lambda m, x: x.norm(), np.arange(3))
    raises_like(lambda m, x: x.norm(float("inf")), np.zeros((0, 3)))


# ---- median / nanmedian / mode ----------------------------------------------------------------------------------

ORDERED = ["float32", "float64", "float16", "bfloat16", "int64", "int16", "uint8"]


def ordered_sample(dtype, nans=False):
    return sample(dtype, nans=nans) if dtype in FLOATS else (sample("float32") * 3).astype(dtype)


@pytest.mark.parametrize("dtype", ORDERED)
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median(op, dtype):
    for x in (ordered_sample(dtype), ordered_sample(dtype, nans=True)):
        check(lambda m, x: getattr(m, op)(as_(m, x, dtype)), x)
        check(lambda m, x: getattr(as_(m, x, dtype), op)(), x)
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                def fn(m, x):
                    r = getattr(m, op)(as_(m, x, dtype), dim, keepdim)
                    assert r.values is r[0] and r.indices is r[1] and type(r).__name__ == op
                    return tuple(r)
                check(fn, x)
                check(lambda m, x: tuple(getattr(as_(m, x, dtype), op)(dim=dim, keepdim=keepdim)), x)


def test_median_special_cases():
    for op in ("median", "nanmedian"):
        check(lambda m, x: (getattr(m, op)(x), tuple(getattr(m, op)(x, 0))), np.array(2.5))
        check(lambda m, x: tuple(getattr(m, op)(x, 1)), np.full((2, 3), np.nan))
        check(lambda m, x: getattr(m, op)(x), np.zeros((0, 3)))
        check(lambda m, x: tuple(getattr(m, op)(x, 0)), np.zeros((2, 0)))
        raises_like(lambda m, x: getattr(m, op)(x, 1), np.zeros((2, 0)))
        raises_like(lambda m, x: getattr(m, op)(x), sample("complex64"))
        raises_like(lambda m, x: getattr(m, op)(x, 0), np.ones(3, bool))
        raises_like(lambda m, x: getattr(m, op)(x, 3), sample())
    check(lambda m, x: tuple(m.median(x, 0)), np.array([1.0, 5.0, 2.0, 5.0, 5.0]))  # ties: the first one


@pytest.mark.parametrize("dtype", ORDERED + ["bool"])
def test_mode(dtype):
    x = noncontig(RNG.integers(0, 3, (3, 4, 5)).astype("float32" if dtype == "bfloat16" else dtype))
    for args in ((), (0,), (1, True), (-1, False)):
        check(lambda m, x: tuple(m.mode(as_(m, x, dtype), *args)), x)
        check(lambda m, x: tuple(as_(m, x, dtype).mode(*args)), x)
    check(lambda m, x: tuple(m.mode(x)), np.array([[1, 2, 2, 3, 2, 1], [3, 1, 1, 3, 0, 0]]))
    check(lambda m, x: tuple(m.mode(x)), np.array(2.0))
    raises_like(lambda m, x: m.mode(x, 1), np.zeros((2, 0)))
    raises_like(lambda m, x: m.mode(x), sample("complex64"))


# ---- quantile / nanquantile -------------------------------------------------------------------------------------

MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", MODES)
@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
def test_quantile(op, interpolation):
    for dtype in ("float32", "float64"):
        for x in (sample(dtype), sample(dtype, nans=True)):
            q1 = np.array([0.0, 0.25, 0.5, 0.8, 1.0], dtype)
            for dim, keepdim in ((None, False), (None, True), (0, False), (1, True), (-1, False)):
                check(lambda m, x, q: getattr(m, op)(x, q, dim, keepdim, interpolation=interpolation), x, q1)
                check(lambda m, x: getattr(x, op)(0.3, dim, keepdim, interpolation=interpolation), x)
                check(lambda m, x, q: getattr(m, op)(x, q, dim, keepdim, interpolation=interpolation), x,
                      np.array(0.7, dtype))


def test_quantile_forms_and_errors():
    check(lambda m, x: m.quantile(x, 0.4), np.array(2.0))
    check(lambda m, x: m.nanquantile(x, 0.4, dim=1), np.full((2, 3), np.nan))
    check(lambda m, x: m.quantile(x, 0.4, 1, out=m.empty(0, dtype=m.float64)), sample("float64"))
    for op in ("quantile", "nanquantile"):
        raises_like(lambda m, x: getattr(m, op)(x, 1.5), sample())
        raises_like(lambda m, x, q: getattr(m, op)(x, q), sample(), np.array([0.5, 2.0], np.float32))
        raises_like(lambda m, x, q: getattr(m, op)(x, q), sample(), np.array([[0.5]], np.float32))
        raises_like(lambda m, x, q: getattr(m, op)(x, q), sample(), np.array(0.5))
        raises_like(lambda m, x: getattr(m, op)(x, 0.5), np.arange(4))
        raises_like(lambda m, x: getattr(m, op)(x, 0.5), np.zeros(0, np.float32))
        raises_like(lambda m, x: getattr(m, op)(x, 0.5, interpolation="cubic"), sample())
        raises_like(lambda m, x: getattr(m, op)(x, 0.5, dim=3), sample())


# ---- gradients --------------------------------------------------------------------------------------------------

def distinct(*shape):
    """float64 values with no ties, so median/mode/quantile select one element each."""
    return RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.29 - 1.3


GRAD_CASES = [
    Case("var.correction", lambda m, x: x.var(1), uniform(2, 3)),
    Case("var.correction", lambda m, x: m.var(x, (0, 2), correction=0, keepdim=True), uniform(2, 3, 2), label="dims"),
    Case("var.correction", lambda m, x: x.var(), uniform(2, 3), label="all"),
    Case("std.correction", lambda m, x: x.std(0, True), uniform(3, 2)),
    Case("std.correction", lambda m, x: m.std(x, correction=2), uniform(2, 3), label="correction"),
    Case("var_mean.correction", lambda m, x: m.var_mean(x, 1), uniform(2, 3)),
    Case("var_mean.correction", lambda m, x: m.var_mean(x, 0, keepdim=True)[1], uniform(2, 3), label="mean_only"),
    Case("std_mean.correction", lambda m, x: m.std_mean(x, 0), uniform(2, 3)),
    Case("std_mean.correction", lambda m, x: m.std_mean(x)[0], uniform(2, 3), label="std_only"),
    Case("logsumexp", lambda m, x: m.logsumexp(x, 1), uniform(2, 3)),
    Case("logsumexp", lambda m, x: x.logsumexp((0, 1), keepdim=True), uniform(2, 3), label="dims"),
    Case("nansum", lambda m, x: m.nansum(x, 1), np.array([[1.5, np.nan, -0.5], [0.25, 2.0, np.nan]]), check=False),
    Case("nansum", lambda m, x: m.nansum(x), uniform(2, 3), label="all"),
    Case("nanmean", lambda m, x: m.nanmean(x, 0), uniform(2, 3)),
    Case("norm", lambda m, x: x.norm(), uniform(2, 3)),
    Case("norm", lambda m, x: m.norm(x, 1, 1), uniform(2, 3), label="p1"),
    Case("norm", lambda m, x: m.norm(x, 3, 0, True), uniform(2, 3), label="p3"),
    Case("norm", lambda m, x: m.norm(x, float("inf"), 1), distinct(2, 3), label="inf"),
    Case("aminmax", lambda m, x: m.aminmax(x, dim=1), distinct(2, 3)),
    Case("aminmax", lambda m, x: m.aminmax(x).max, distinct(2, 3), label="max_only"),
    Case("median.all", lambda m, x: x.median(), distinct(2, 3)),
    Case("median.dim", lambda m, x: x.median(1)[0], distinct(2, 3)),
    Case("median.dim", lambda m, x: x.median(0, keepdim=True).values, distinct(3, 2), label="keepdim"),
    Case("nanmedian.all", lambda m, x: x.nanmedian(), distinct(2, 3)),
    Case("nanmedian.dim", lambda m, x: m.nanmedian(x, 1)[0], distinct(2, 3)),
    Case("mode", lambda m, x: m.mode(x, 1)[0], np.array([[0.5, 1.5, 0.5, -1.0], [2.0, 2.0, 2.0, 1.0]]),
         check=False),
    Case("mode", lambda m, x: m.mode(x, 0, True)[0], distinct(3, 2), label="distinct"),
    Case("quantile", lambda m, x: m.quantile(x, 0.3), distinct(2, 3)),
    Case("quantile", lambda m, x: m.quantile(x, m.tensor([0.2, 0.5, 0.9], dtype=x.dtype), dim=1, keepdim=True),
         distinct(2, 5), label="q_tensor"),
    Case("quantile", lambda m, x: m.quantile(x, 0.6, 0, interpolation="midpoint"), distinct(4, 3), label="midpoint"),
    Case("nanquantile", lambda m, x: m.nanquantile(x, 0.4, 1), np.array([[0.5, np.nan, 1.5, -0.5], [2.0, 1.0, 3.0,
                                                                                                       -1.0]]),
         check=False),
]


def grad_id(case):
    return case.id


@pytest.mark.parametrize("case", GRAD_CASES, ids=grad_id)
def test_gradients_match_torch(case):
    got, expected = vjp(lantern, case), vjp(torch, case)
    # torch's quantile and nanmean are composites too, but of other ops: their last node differs
    if case.op in ("quantile", "nanquantile"):
        got, expected = (got[0], got[2]), (expected[0], expected[2])
    assert_same(got, expected, atol=1e-6, rtol=1e-6, strides=False)


@pytest.mark.parametrize("case", [c for c in GRAD_CASES if c.check], ids=grad_id)
def test_gradcheck_and_gradgradcheck_float64_noncontiguous(case):
    assert_gradcheck_and_gradgradcheck(case)


def test_complex_gradients_match_torch():
    z = (uniform(2, 3) + 1j * uniform(2, 3)).astype(np.complex128)
    for fn in (lambda m, x: x.var(1), lambda m, x: x.std(), lambda m, x: m.logsumexp(x, 1),
               lambda m, x: x.norm(), lambda m, x: m.var_mean(x, 0)):
        case = Case("complex", fn, z)
        assert_gradients_match_torch(case)


def test_count_nonzero_is_not_differentiable():
    x = lantern.tensor([0.5, 0.0], requires_grad=True)
    assert not lantern.count_nonzero(x).requires_grad


def test_meta_device_shapes_match_cpu():
    calls = [lambda m, x: x.var(1), lambda m, x: m.std_mean(x, (0, 2)), lambda m, x: x.logsumexp(1, True),
             lambda m, x: x.nansum(), lambda m, x: x.nanmean(0), lambda m, x: m.count_nonzero(x, 1),
             lambda m, x: m.aminmax(x, dim=1), lambda m, x: x.median(), lambda m, x: x.nanmedian(0, True),
             lambda m, x: x.mode(1), lambda m, x: m.quantile(x, m.zeros(5, device=x.device), 1, True)]
    cpu, meta = lantern.zeros(2, 3, 4), lantern.empty(2, 3, 4, device="meta")
    for fn in calls:
        expected, got = fn(lantern, cpu), fn(lantern, meta)
        for e, g in zip(expected if isinstance(expected, tuple) else (expected,), got if isinstance(got, tuple) else
                        (got,)):
            assert (g.shape, g.dtype, g.device.type) == (e.shape, e.dtype, "meta")


# ---- bincount / histc ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda m, x, w: m.bincount(x),
    lambda m, x, w: m.bincount(x, minlength=9),
    lambda m, x, w: x.bincount(w),
    lambda m, x, w: m.bincount(x, w.double()),
    lambda m, x, w: m.bincount(x, m.ones(x.shape[0], dtype=m.int32)),
    lambda m, x, w: m.bincount(x[:0]),
    lambda m, x, w: m.bincount(x.float()),
    lambda m, x, w: m.bincount(x - 5),
    lambda m, x, w: m.bincount(x.view(2, 3)),
    lambda m, x, w: m.bincount(x, w[:2]),
    lambda m, x, w: m.bincount(x, minlength=-1),
])
def test_bincount(fn):
    matches_torch(fn, np.array([0, 1, 1, 3, 5, 3]), np.array([0.5, 1, 2, 3, 4, 5], np.float32))


def test_bincount_weights_gradient_is_not_implemented():
    for lib in (torch, lantern):
        w = lib.ones(3, requires_grad=True)
        out = lib.bincount(lib.tensor([0, 1, 1]), w)
        assert out.requires_grad
        with pytest.raises(RuntimeError, match="not implemented"):
            out.sum().backward()


@pytest.mark.parametrize("fn", [
    lambda m, x: m.histc(x, bins=4, min=0, max=3),
    lambda m, x: m.histc(x, bins=3),
    lambda m, x: x.histc(5, -1, 10),
    lambda m, x: m.histc(x.double(), 2),
    lambda m, x: m.histc(x[:2] * 0 + 1, 2),
    lambda m, x: m.histc(x.long(), 2),
    lambda m, x: m.histc(x, bins=0),
    lambda m, x: m.histc(x, bins=2, min=3, max=1),
    lambda m, x: m.histc(x.requires_grad_(), 2).requires_grad,
])
def test_histc(fn):
    matches_torch(fn, noncontig(np.array([1., 2, 1, 2.5, 7, float("nan")], np.float32)))
    matches_torch(fn, noncontig(np.array([1., 2, 1, 2.5, 7, -3], np.float32)))


def test_histc_on_meta():
    assert lantern.histc(lantern.ones(5, device="meta"), bins=7).shape == (7,)
