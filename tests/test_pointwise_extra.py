"""The pointwise ops added beside the basic table (special functions, logit, round(decimals), clamp_min/max,
float_power, lerp, addcmul, addcdiv, fmax/fmin, hypot, copysign, nan_to_num, isclose/allclose/equal, heaviside,
xlogy, logaddexp(2), sinc, deg2rad/rad2deg, positive, i0) against torch: values, dtypes, strides and errors in
every form PyTorch has, then gradients (compared with torch, gradcheck and gradgradcheck in float64).

The ops that joined pointwise_unary.UNARY and pointwise_binary.BINARY are also swept over every dtype by test_pointwise.py.
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import TOLERANCES, assert_same, check, matches_torch, noncontig, raises_like
from test_autograd_gradcheck_ops import (
    Case, assert_gradcheck_and_gradgradcheck, assert_gradients_match_torch, cplx, positive, uniform, unit,
)
from test_pointwise import NAMES, as_, binary_forms, call_forms, sample

FLOATS = ["float16", "bfloat16", "float32", "float64"]
SOME = ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]


def special_values(dtype="float32"):
    return noncontig(np.array([[0.0, -0.0, -1.0, -2.5, 1.0, 2.0], [np.inf, -np.inf, np.nan, 0.5, -0.999, 30.0]],
                              dtype))


# ---- unary ops -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NAMES)
@pytest.mark.parametrize("op", ["deg2rad", "rad2deg"])
def test_angles_every_dtype_and_form(op, dtype):
    for fn in call_forms(op).values():
        matches_torch(lambda m, x: fn(m, as_(m, x, dtype)), sample(dtype))


@pytest.mark.parametrize("op", ["erf", "erfc", "erfinv", "lgamma", "digamma", "i0", "sinc", "deg2rad", "rad2deg"])
def test_unary_special_values(op):
    for dtype in ("float32", "float64"):
        check(lambda m, x: getattr(m, op)(x), special_values(dtype), atol=1e-5, rtol=1e-5)
    check(lambda m, x: getattr(m, op)(x.t()), noncontig(np.linspace(-0.9, 0.9, 6).reshape(3, 2)))  # layout follows


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_i1(dtype):
    check(lambda m, x: m.special.i1(as_(m, x, dtype)) if m is torch else m.special_i1(as_(m, x, dtype)),
          sample(dtype))
    raises_like(lambda m, x: torch.special.i1(x) if m is torch else m.special_i1(x), np.ones(2, np.complex64))


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("dtype", ["int64", "float16", "float32", "float64"])
def test_polygamma(n, dtype):
    x = noncontig(np.array([[0.3, 1.0, 2.5], [7.0, 0.05, 4.0]], np.float32 if dtype == "float16" else dtype)) \
        if dtype != "int64" else noncontig(np.array([[1, 2, 3], [4, 5, 6]]))
    check(lambda m, x: m.polygamma(n, x), x)
    check(lambda m, x: x.polygamma(n), x)
    # torch computes in x's float32 and widens into the float64 out=, so float32's tolerance applies then
    computed_in = "float64" if dtype == "float64" else "float32"
    rtol, atol = TOLERANCES[computed_in]
    check(lambda m, x: m.polygamma(n, x, out=m.empty(0, dtype=m.float64)), x, rtol=rtol, atol=atol)


def test_polygamma_errors():
    raises_like(lambda m, x: m.polygamma(-1, x), np.ones(2))
    raises_like(lambda m, x: m.polygamma(1, x), np.ones(2, np.complex64))


@pytest.mark.parametrize("eps", [None, 0.1, 0.0])
@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "bfloat16", "float32", "float64", "complex64"])
def test_logit(dtype, eps):
    x = noncontig(np.array([[0.3, 0.0, 1.0], [1.2, -0.1, 0.05]])).astype("float32" if dtype == "bfloat16" else dtype)
    matches_torch(lambda m, x: m.logit(as_(m, x, dtype), eps), x)
    matches_torch(lambda m, x: as_(m, x, dtype).logit(eps=eps), x)
    matches_torch(lambda m, x: as_(m, x, dtype).clone().logit_(eps), x)
    tol = 1e-2 if dtype in ("float16", "bfloat16") else 1e-4  # a float64 out= holds half results: 1 ulp apart
    matches_torch(lambda m, x: m.logit(as_(m, x, dtype), eps, out=m.empty(0, dtype=m.float64)), x, atol=tol, rtol=tol)


@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "bfloat16", "float32", "float64", "complex64"])
def test_round_decimals(dtype, decimals):
    vals = np.array([[2.5, 0.125, 1234.5678, -2.5], [-0.55, 3.5, 15.0, -151.0]])
    x = noncontig(vals.astype("float32" if dtype == "bfloat16" else dtype))
    matches_torch(lambda m, x: m.round(as_(m, x, dtype), decimals=decimals), x)
    matches_torch(lambda m, x: as_(m, x, dtype).round(decimals=decimals), x)
    matches_torch(lambda m, x: as_(m, x, dtype).clone().round_(decimals=decimals), x)
    matches_torch(lambda m, x: m.round(as_(m, x, dtype), decimals=decimals, out=as_(m, x, dtype).new_empty(0)), x)
    raises_like(lambda m, x: m.round(x, out=m.empty(4, dtype=m.float64)), np.ones(4, np.float32))


@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "float32", "float64", "complex64"])
def test_nan_to_num(dtype):
    vals = np.array([[np.nan, np.inf, -np.inf], [1.5, -2.0, 0.0]])
    if dtype.startswith("complex"):
        vals = vals + 1j * vals[::-1]
    x = noncontig(vals.astype(dtype)) if dtype[0] in "fc" else noncontig(np.array([[1, 0, 1], [0, 1, 1]], dtype))
    for kw in ({}, {"nan": 1.5}, {"posinf": 7.0, "neginf": -7.0}, {"nan": -1.0, "posinf": 1e10}):
        check(lambda m, x: m.nan_to_num(x, **kw), x)
        check(lambda m, x: x.nan_to_num(**kw), x)
        check(lambda m, x: x.clone().nan_to_num_(**kw), x)
        check(lambda m, x: m.nan_to_num(x, **kw, out=m.empty_like(x)), x)
    raises_like(lambda m, x: m.nan_to_num(x, out=m.empty(2, dtype=m.float64)), np.ones(2, np.float32))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float16", "float32", "float64"])
@pytest.mark.parametrize("op", ["clamp_min", "clamp_max"])
def test_clamp_min_max(op, dtype):
    x, bound = sample(dtype), sample(dtype, (3,), shift=2)
    for b in (1, 0.5, True):
        matches_torch(lambda m, x: getattr(m, op)(x, b), x)
        matches_torch(lambda m, x: getattr(x, op)(b), x)
    matches_torch(lambda m, x, b: getattr(m, op)(x, b), x, bound)
    matches_torch(lambda m, x, b: getattr(x.clone(), op + "_")(b), x, bound)
    matches_torch(lambda m, x, b: getattr(m, op)(x, b, out=m.empty(0, dtype=x.dtype)), x, bound)
    matches_torch(lambda m, x: getattr(m, op)(x, 1, out=m.empty(0, dtype=m.float64)), x)  # exact out dtype: an error


def test_clamp_min_max_errors():
    raises_like(lambda m, x: m.clamp_max(x, True), np.array([True, False]))
    raises_like(lambda m, x: m.clamp_min(x, 1), np.ones(2, np.complex64))
    raises_like(lambda m, x, b: m.clamp_min(x, b), np.ones(3), np.ones(2))
    raises_like(lambda m, x: x.clone().clamp_min_(1.5), np.ones(3, np.int64))


def test_positive():
    for dtype in ("int32", "float32", "complex64"):
        check(lambda m, x: m.positive(x), sample(dtype))
        check(lambda m, x: x.positive() is x, sample(dtype))
    raises_like(lambda m, x: m.positive(x), np.array([True]))


# ---- binary ops ----------------------------------------------------------------------------------------------

EXTRA_BINARY = ["hypot", "logaddexp", "logaddexp2", "heaviside"]


@pytest.mark.parametrize("dtype", NAMES)
@pytest.mark.parametrize("op", EXTRA_BINARY)
def test_binary_every_dtype_and_form(op, dtype):
    for fn in binary_forms(op).values():
        matches_torch(lambda m, x, y: fn(m, as_(m, x, dtype), as_(m, y, dtype)), sample(dtype), sample(dtype, shift=3))


@pytest.mark.parametrize("a,b", [("float32", "float64"), ("int32", "float32"), ("float16", "float32"),
                                 ("bfloat16", "float16"), ("int64", "int32")])
@pytest.mark.parametrize("op", EXTRA_BINARY + ["fmax", "fmin", "copysign", "xlogy"])
def test_binary_mixed_dtypes_broadcast_and_numbers(op, a, b):
    forms = binary_forms(op)
    for form in ("functional", "inplace", "out"):
        matches_torch(lambda m, x, y: forms[form](m, as_(m, x, a), as_(m, y, b)), sample(a), sample(b, (3,), shift=2))
    matches_torch(lambda m, x: getattr(m, op)(as_(m, x, a), 2.5), sample(a))
    matches_torch(lambda m, x: getattr(m, op)(2, as_(m, x, a)), sample(a))


@pytest.mark.parametrize("op", ["fmax", "fmin", "maximum", "copysign", "xlogy", "hypot", "logaddexp", "logaddexp2",
                                "heaviside"])
def test_binary_special_values(op):
    x = special_values("float64")
    y = noncontig(np.array([[np.nan, 0.0, -0.0, 3.0, np.inf, -np.inf], [2.0, np.nan, np.nan, -0.0, 0.5, 1.0]]))
    check(lambda m, x, y: getattr(m, op)(x, y), x, y)
    check(lambda m, x, y: getattr(m, op)(y, x), x, y)


def test_logaddexp_complex_and_large():
    check(lambda m, x, y: m.logaddexp(x, y), cplx(2, 3), cplx(3))
    check(lambda m, x, y: m.logaddexp(x, y), np.array([800.0, -800.0, 1e-30]), np.array([799.0, -801.0, 0.0]))


def test_xlogy_zero_times_nan_and_scalars():
    check(lambda m, x, y: m.xlogy(x, y), np.array([0.0, 0.0, 1.0]), np.array([np.nan, 0.0, 0.0]))
    check(lambda m, y: m.xlogy(0, y), np.array([np.nan, 0.0, 2.0]))
    check(lambda m, y: m.xlogy(2, y), np.array([1, 2, 3]))


def test_heaviside_errors():
    raises_like(lambda m, x, y: m.heaviside(x, y), np.ones(2, np.float32), np.ones(2, np.int64))
    raises_like(lambda m, x: m.heaviside(x, 1.0), np.ones(2))
    raises_like(lambda m, x: m.heaviside(x, x), np.ones(2, np.complex64))
    raises_like(lambda m, x: m.heaviside(x, x, out=m.empty(2, dtype=m.float64)), np.ones(2, np.float32))


# ---- ternary ops -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SOME)
def test_lerp(dtype):
    x, end, w = sample(dtype), sample(dtype, (3,), shift=2), sample(dtype, (2, 1), shift=4)
    for weight in (0.3, 0.7, 2, -1.5):
        matches_torch(lambda m, x, e: m.lerp(as_(m, x, dtype), as_(m, e, dtype), weight), x, end)
        matches_torch(lambda m, x, e: as_(m, x, dtype).clone().lerp_(as_(m, e, dtype), weight), x, end)
    matches_torch(lambda m, x, e, w: m.lerp(as_(m, x, dtype), as_(m, e, dtype), as_(m, w, dtype)), x, end, w, atol=1e-4,
          rtol=1e-4)
    matches_torch(lambda m, x, e, w: m.lerp(as_(m, x, dtype), as_(m, e, dtype), as_(m, w, dtype),
                                    out=m.empty(0, dtype=as_(m, x, dtype).dtype)), x, end, w)


def test_lerp_errors_and_exact_ends():
    raises_like(lambda m, x, e: m.lerp(x, e, 0.5), np.ones(2, np.float32), np.ones(2))
    raises_like(lambda m, x, e: m.lerp(x, x, e), np.ones(2, np.float32), np.ones(2))
    raises_like(lambda m, x: m.lerp(x, 1.0, 0.5), np.ones(2))
    raises_like(lambda m, x: m.lerp(x, x, x, out=m.empty(2, dtype=m.float64)), np.ones(2, np.float32))
    raises_like(lambda m, x, e: x.clone().lerp_(e, 0.5), np.ones(2), np.ones((3, 2)))
    check(lambda m, x, e: (m.lerp(x, e, 1.0), m.lerp(x, e, 0.0)), np.array([1e8, -3.0]), np.array([1.0, 1e-8]),
          atol=0, rtol=0)


@pytest.mark.parametrize("dtype", SOME)
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv(op, dtype):
    x, t1, t2 = sample(dtype), sample(dtype, (3,), shift=2), sample(dtype, (2, 1), shift=5)
    for value in (1, 2, -0.5):
        if isinstance(value, float) and dtype in ("bool", "uint8", "int32", "int64"):
            continue  # PyTorch casts the value to the integer dtype: covered below
        matches_torch(lambda m, x, a, b: getattr(m, op)(as_(m, x, dtype), as_(m, a, dtype), as_(m, b, dtype), value=value),
              x, t1, t2)
    matches_torch(lambda m, x, a, b: getattr(as_(m, x, dtype).clone(), op + "_")(as_(m, a, dtype), as_(m, b, dtype)),
          x, t1, t2)
    matches_torch(lambda m, x, a, b: getattr(m, op)(as_(m, x, dtype), as_(m, a, dtype), as_(m, b, dtype),
                                            out=m.empty(0, dtype=m.float64)), x, t1, t2)


def test_addcmul_addcdiv_mixed_and_errors():
    check(lambda m, x, a, b: m.addcmul(x, a, b, value=2.5), np.array([1, 2, -3]), np.array([1, 2, 3]),
          np.array([1, 2, 2]))
    check(lambda m, x, a, b: m.addcmul(x, a, b), np.array([1, 2, -3]), np.array([0.5, 2, 3]), np.array([1, 2, 2]))
    check(lambda m, x, a, b: m.addcdiv(x, a, b, value=-2), np.array([1, 2, -3]), np.array([0.5, 2, 3]),
          np.array([1.0, 2, 4]))
    raises_like(lambda m, x, a: m.addcdiv(x, a, a), np.ones(2), np.ones(2, np.int64))
    raises_like(lambda m, x: m.addcmul(x, x, 2), np.ones(2))
    raises_like(lambda m, x, a: m.addcmul(x, a, a), np.ones(2), np.ones(3))


# ---- closeness, float_power ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "bfloat16", "float32", "float64", "complex64"])
def test_isclose_allclose_equal(dtype):
    base = np.array([[1.0, np.nan, np.inf, -np.inf, 100.0, 0.0], [1e-9, 5.0, -np.inf, np.nan, 100.0001, 0.5]])
    other = np.array([[1.0 + 1e-6, np.nan, np.inf, np.inf, 100.0, 1e-9], [0.0, 5.05, -np.inf, 1.0, 100.0, 0.45]])
    np_dtype = "float32" if dtype == "bfloat16" else dtype
    if dtype[0] not in "fcb":
        base, other = np.array([[1, 5, 7], [200, 0, 3]]), np.array([[1, 6, 7], [199, 0, 2]])
    x, y = noncontig(np.nan_to_num(base).astype(np_dtype) if dtype == "bool" else base.astype(np_dtype)), \
        noncontig(np.nan_to_num(other).astype(np_dtype) if dtype == "bool" else other.astype(np_dtype))
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.02}, {"atol": 1.5, "rtol": 0.0}):
        check(lambda m, x, y: m.isclose(as_(m, x, dtype), as_(m, y, dtype), **kw), x, y)
        check(lambda m, x, y: as_(m, x, dtype).isclose(as_(m, y, dtype), **kw), x, y)
        check(lambda m, x, y: m.allclose(as_(m, x, dtype), as_(m, y, dtype), **kw), x, y)
        check(lambda m, x, y: as_(m, x, dtype).allclose(as_(m, x, dtype), **kw), x, y)
    check(lambda m, x, y: (m.equal(x, y), m.equal(x, x), m.equal(x, x[:1])), x, y)


def test_isclose_errors():
    raises_like(lambda m, x, y: m.isclose(x, y), np.ones(2, np.int64), np.ones(2, np.float32))
    raises_like(lambda m, x, y: m.allclose(x, y), np.ones(2, np.int64), np.ones(2, np.float32))
    raises_like(lambda m, x: m.isclose(x, 1.0), np.ones(2))
    raises_like(lambda m, x: m.isclose(x, x, rtol=-1), np.ones(2))
    raises_like(lambda m, x: m.isclose(x, x, atol=-1), np.ones(2))
    check(lambda m, x: m.equal(x, x.to(m.float32)), np.array([1, 2]))


@pytest.mark.parametrize("dtype", ["uint8", "int64", "float32", "float64", "complex64"])
def test_float_power(dtype):
    x, e = sample(dtype), sample(dtype, (3,), shift=2)
    check(lambda m, x, e: m.float_power(x, e), x, e)
    check(lambda m, x, e: x.float_power(e), x, e)
    for exponent in (2, -1.5, 0.5 + 1j):
        check(lambda m, x: m.float_power(x, exponent), x)
    check(lambda m, e: m.float_power(2, e), e)
    check(lambda m, x, e: x.to(m.complex128 if x.is_complex() else m.float64).float_power_(e), x, e)
    check(lambda m, x, e: m.float_power(x, e, out=m.empty(0, dtype=m.complex128 if x.is_complex() else m.float64)),
          x, e)


def test_float_power_errors():
    raises_like(lambda m, x: x.clone().float_power_(2), np.ones(2, np.float32))
    raises_like(lambda m, x: m.float_power(x, 2, out=m.empty(2)), np.ones(2, np.float32))
    raises_like(lambda m, x: x.float_power_(2j), np.ones(2))


# ---- gradients -----------------------------------------------------------------------------------------------

def in_open_unit(*shape):
    return uniform(*shape, low=0.15, high=0.85)


def away_from_zero(*shape):
    return uniform(*shape, low=0.3, high=2.0) * np.where(np.arange(np.prod(shape)).reshape(shape) % 2, 1, -1)


def aten(m, name):
    return getattr(m, name) if m is lantern else getattr(torch.ops.aten, name)


def U(name, fn=None, sample=uniform, **kw):
    return Case(name, fn or (lambda m, x: getattr(m, name)(x)), sample(2, 3), **kw)


CASES = [
    U("erf"), U("erfc"), U("erfinv", sample=unit), U("lgamma", sample=positive), U("digamma", sample=positive),
    U("i0"), U("sinc"), U("deg2rad"), U("rad2deg"), U("special_i1", lambda m, x: aten(m, "special_i1")(x)),
    Case("polygamma", lambda m, x: m.polygamma(1, x), positive(2, 3)),
    Case("polygamma", lambda m, x: x.polygamma(2), positive(2, 3), label="n2"),
    Case("logit", lambda m, x: m.logit(x), in_open_unit(2, 3)),
    Case("logit", lambda m, x: m.logit(x, 0.2), np.array([0.1, 0.3, 0.5, 0.93]), label="eps"),
    Case("round", lambda m, x: m.round(x), uniform(2, 3)),
    Case("round", lambda m, x: m.round(x, decimals=1), uniform(2, 3), label="decimals", check=False),
    Case("nan_to_num", lambda m, x: m.nan_to_num(x), uniform(2, 3)),
    Case("nan_to_num", lambda m, x: m.nan_to_num(x / (x > 0).to(x.dtype), posinf=3.0) * 1, uniform(2, 3),
         label="inf", check=False),
    Case("clamp_min", lambda m, x: m.clamp_min(x, 0.3), uniform(2, 3)),
    Case("clamp_min", lambda m, x, b: m.clamp_min(x, b), uniform(2, 3), uniform(3), label="tensor"),
    Case("clamp_max", lambda m, x: x.clamp_max(-0.2), uniform(2, 3)),
    Case("clamp_max", lambda m, x, b: m.clamp_max(x, b), uniform(2, 3), uniform(2, 1), label="tensor"),
    Case("fmax", lambda m, x, y: m.fmax(x, y), uniform(2, 3), uniform(3)),
    Case("fmin", lambda m, x, y: m.fmin(x, y), uniform(2, 3), uniform(2, 1)),
    Case("fmax", lambda m, x, y: m.fmax(x, y), np.array([1.0, np.nan, 2.0, 1.0]), np.array([np.nan, 1.0, 3.0, 1.0]),
         label="nan_ties", check=False),
    Case("fmin", lambda m, x, y: m.fmin(x, y), np.array([1.0, np.nan, 2.0, 1.0]), np.array([np.nan, 1.0, 3.0, 1.0]),
         label="nan_ties", check=False),
    Case("copysign", lambda m, x, y: m.copysign(x, y), away_from_zero(2, 3), uniform(3)),
    Case("copysign", lambda m, x: m.copysign(x, -1.0), away_from_zero(2, 3), label="scalar"),
    Case("copysign", lambda m, x, y: m.copysign(x, y), np.array([0.0, 1.0]), np.array([-1.0, -2.0]), label="zero",
         check=False),
    Case("xlogy", lambda m, x, y: m.xlogy(x, y), uniform(2, 3), positive(3)),
    Case("xlogy", lambda m, y: m.xlogy(2.5, y), positive(2, 3), label="scalar_self"),
    Case("xlogy", lambda m, x: m.xlogy(x, 3.0), uniform(2, 3), label="scalar_other"),
    Case("xlogy", lambda m, x, y: m.xlogy(x, y), np.array([0.0, 0.0, 1.0]), np.array([0.5, 2.0, 3.0]), label="zeros",
         check=False),
    Case("hypot", lambda m, x, y: m.hypot(x, y), away_from_zero(2, 3), uniform(2, 1)),
    Case("logaddexp", lambda m, x, y: m.logaddexp(x, y), uniform(2, 3), uniform(3)),
    Case("logaddexp2", lambda m, x, y: m.logaddexp2(x, y), uniform(2, 3), uniform(3)),
    Case("lerp", lambda m, x, e: m.lerp(x, e, 0.3), uniform(2, 3), uniform(3)),
    Case("lerp", lambda m, x, e, w: m.lerp(x, e, w), uniform(2, 3), uniform(3), uniform(2, 1), label="tensor"),
    Case("addcmul", lambda m, x, a, b: m.addcmul(x, a, b, value=0.5), uniform(2, 3), uniform(3), uniform(2, 1)),
    Case("addcdiv", lambda m, x, a, b: m.addcdiv(x, a, b, value=-2), uniform(3), uniform(2, 3), positive(2, 1)),
    Case("float_power", lambda m, x, y: m.float_power(x, y), positive(2, 3), uniform(3)),
    Case("float_power", lambda m, x: m.float_power(x, 3), uniform(2, 3), label="scalar_exponent"),
    Case("float_power", lambda m, x: m.float_power(2, x), uniform(2, 3), label="scalar_base"),
]

COMPLEX_CASES = [
    Case("sinc", lambda m, x: m.sinc(x), cplx(2, 3)),
    Case("logaddexp", lambda m, x, y: m.logaddexp(x, y), cplx(2, 3), cplx(3)),
    Case("lerp", lambda m, x, e, w: m.lerp(x, e, w), cplx(2, 3), cplx(3), cplx(2, 1)),
    Case("addcmul", lambda m, x, a, b: m.addcmul(x, a, b, value=2), cplx(2, 3), cplx(3), cplx(2, 3)),
    Case("addcdiv", lambda m, x, a, b: m.addcdiv(x, a, b), cplx(2, 3), cplx(3), cplx(2, 3)),
]


@pytest.mark.parametrize("case", CASES + COMPLEX_CASES, ids=lambda c: c.id)
def test_gradients_match_torch(case):
    assert_gradients_match_torch(case)


@pytest.mark.parametrize("case", [c for c in CASES + COMPLEX_CASES if c.check], ids=lambda c: c.id)
def test_gradcheck_and_gradgradcheck_float64_noncontiguous(case):
    assert_gradcheck_and_gradgradcheck(case)


def test_heaviside_and_isclose_gradients():
    """heaviside has no derivative in PyTorch (its node is NotImplemented); isclose's bool output needs none."""
    for lib in (torch, lantern):
        x = lib.tensor([0.5, -1.5], requires_grad=True)
        assert not lib.isclose(x, x).requires_grad
        y = lib.heaviside(x, x)
        assert y.requires_grad and type(y.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError):
            y.sum().backward()


def test_polygamma_inplace():
    matches_torch(lambda m, x: x.clone().polygamma_(1), positive(2, 3))
    matches_torch(lambda m, x: x.to(m.int64).polygamma_(1), positive(2, 3))  # an integer result dtype: refused
    raises_like(lambda m, x: m.polygamma(x, 1), positive(2, 3))


def test_polygamma_inplace_gradient():
    values = positive(2, 3)

    def grads(lib):
        x = lib.tensor(values, requires_grad=True)
        y = (x * 1).polygamma_(2)
        return type(y.grad_fn).__name__, lib.autograd.grad(y.sum(), x)
    assert_same(grads(lantern), grads(torch))
