"""torch.special's kernels where ATen's arithmetic, not the true function, decides the values the OpInfos compare:
Airy Ai (Cephes' forms as ATen writes them), float32 erfcx (double polynomials at a float32 argument), the float32
recurrences of the Laguerre and Chebyshev polynomials (fused multiply-adds), Laguerre degrees in the millions, and
the float32 range of I0 and I1 (exp overflows first), which decides signal.windows.kaiser with a large beta.
lantern/ops/special_aten_forms.py and lantern/ops/special_polynomials.py; tests/test_special_functions.py has the
grids over every function."""
import numpy as np
import pytest
import torch

import lantern
from oracle import check

RNG = np.random.default_rng(16)


def both(name, *arrays):
    """torch.<name> and lantern.<name> (a dotted path) of the same arrays, as NumPy arrays."""
    def run(lib):
        fn = lib
        for part in name.split("."):
            fn = getattr(fn, part)
        return fn(*[lib.from_numpy(a.copy()) for a in arrays]).numpy()
    return run(torch), run(lantern)


def assert_bits_match(got, expected, most=1.0, max_ulp=0):
    """At least the fraction `most` of the values are identical (NaN where NaN) and none is more than `max_ulp`
    units in the last place away."""
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert same.mean() >= most, f"{(~same).sum()} of {same.size} differ, e.g. {got[~same][:4]} != {expected[~same][:4]}"
    if max_ulp:
        np.testing.assert_array_max_ulp(got[~same], expected[~same], maxulp=max_ulp)


# ---- Airy Ai -------------------------------------------------------------------------------------------------------

AIRY_X = np.concatenate([np.linspace(-60, 110, 34001), [-2.09, 2.09, 8.3203353, 103.892, 103.9, 1e6, -1e6, 0.0,
                                                       np.inf, -np.inf, np.nan]])


def test_airy_ai_float32_is_atens_arithmetic():
    """Left of -2.09 ATen's modulus and phase denominators lack Cephes' leading 1 (values ~3e-6 off SciPy's near
    the zeros); float32 math throughout, its Horner steps fused multiply-adds: identical bits but for a few
    values where the C library's sin and exp round differently from float64's."""
    got, expected = both("special.airy_ai", AIRY_X.astype(np.float32))[::-1]
    assert_bits_match(got, expected, most=0.99, max_ulp=2)


def test_airy_ai_float64_and_integers():
    check(lambda m, t: m.special.airy_ai(t), AIRY_X, rtol=1e-13, atol=0)
    check(lambda m, t: m.special.airy_ai(t), np.arange(-40, 120, 3))


# ---- erfcx -------------------------------------------------------------------------------------------------------

def test_erfcx_float32_evaluates_its_polynomials_at_float32s_argument():
    """SciPy's float32 erfcx rounds the double result (30x failures at the OpInfos' rtol); ATen rounds y = 400 /
    (4 + x) to float32 first and takes 2 exp(x^2) in float32 for x < 0."""
    x = np.concatenate([RNG.uniform(-27, 60, 40000), RNG.uniform(-7, 7, 40000), [-26.7, -6.1, 50.0, 5e7, 6e7,
                        0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    got, expected = both("special.erfcx", x)[::-1]
    assert_bits_match(got, expected, most=0.9, max_ulp=3)
    check(lambda m, t: m.special.erfcx(t), x[:2000])


# ---- Laguerre and Chebyshev recurrences ----------------------------------------------------------------------------

def test_laguerre_float32_recurrence_is_fused():
    """((2k + 1 - x) L_k - k L_(k-1)) / (k + 1) with its multiply-subtract fused: identical bits up to degree 127
    (unfused, L_127(-1) is 3.3119424e8 where torch gives 3.3119552e8)."""
    x = np.concatenate([RNG.uniform(-130, 130, 4000), np.arange(-128, 128)]).astype(np.float32)
    n = RNG.integers(0, 128, x.size).astype(np.float32)
    n[-256:] = 127
    got, expected = both("special.laguerre_polynomial_l", x, n)[::-1]
    assert_bits_match(got, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_laguerre_degrees_in_the_millions(dtype):
    """ATen loops millions of times in microseconds; lantern hands such degrees to SciPy's compiled loop. An
    overflow (L_n(-501), or any but 0.5 in float32) is NaN, where ATen's loop reaches inf - inf. (A finite float32
    value is SciPy's float64 one rounded, where ATen's float32 loop drifts: tests/deliberate_differences.py.)"""
    x = np.array([501.0, -501.0, 1001.2, 0.5, 13437.7, 0.0], dtype)
    if dtype == np.float32:
        x[3] = 200.0
    n = np.full(x.shape, 4988429.0, dtype)
    check(lambda m, t, k: m.special.laguerre_polynomial_l(t, k), x, n)


SHIFTED = [f"shifted_chebyshev_polynomial_{k}" for k in "tuvw"]
CHEBYSHEV = [f"chebyshev_polynomial_{k}" for k in "tuvw"] + SHIFTED


@pytest.mark.parametrize("name", CHEBYSHEV)
def test_chebyshev_float32_recurrence_is_fused(name):
    """2y P_(k-1) - P_(k-2) as one fused multiply-add: identical bits for the degrees the recurrence serves
    everywhere (n <= 4; past 4 to 8, by kind, ATen uses the trigonometric form inside the interval)."""
    x = RNG.uniform(-3, 3, 6000).astype(np.float32)
    n = RNG.integers(-1, 5, x.size).astype(np.float32)
    got, expected = both(f"special.{name}", x, n)[::-1]
    assert_bits_match(got, expected)


@pytest.mark.parametrize("name", SHIFTED)
def test_shifted_chebyshev_trigonometric_form_in_float32(name):
    """sin/cos of n acos(2x - 1) rounded as the C library's float functions round them: within the OpInfos'
    tolerance where NumPy's float32 arccos (a few ulp off) was not (float32/105 of shifted U: 1.3e-5 off)."""
    x = np.array([0.02915454, 0.031038523, 0.12329149, 0.10828052, 0.5774937], np.float32)
    n = np.array([8.400494, 8.168826, 8.740003, 31.0, 25.0], np.float32)
    check(lambda m, t, k: getattr(m.special, name)(t, k), x, n)


# ---- I0 and I1 in float32; kaiser ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["i0", "special.i0", "special.i1", "special.modified_bessel_i0",
                                  "special.modified_bessel_i1"])
def test_bessel_i_float32_overflows_with_exp(name):
    """exp(|x|) overflows float32 past 88.72, and ATen's I0 and I1 with it (the functions themselves reach
    float32's largest value only near 91); +-inf gives NaN."""
    x = np.array([88.0, 88.72283, 88.7229, 89.0, -89.0, 91.0, 100.0, np.inf, -np.inf, np.nan, 3.0], np.float32)
    fn = eval(f"lambda m, t: m.{name}(t)")
    check(fn, x)
    check(fn, x.astype(np.float64))


@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kaiser_with_a_large_beta(sym, dtype):
    """beta = 100: in float32 I0(beta) is inf, so the window is NaN where I0 of its point is inf too."""
    check(lambda m: m.signal.windows.kaiser(256, sym=sym, beta=100, dtype=getattr(m, dtype)))
