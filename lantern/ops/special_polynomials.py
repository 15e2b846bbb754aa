"""torch.special's orthogonal polynomials P_n(x): Chebyshev T, U, V, W and their shifted forms on [0, 1], the
physicists' and probabilists' Hermite polynomials H and He, Laguerre L and Legendre P.

Each op takes (Tensor x, Tensor n), (Scalar x, Tensor n) or (Tensor x, Scalar n), promotes them to one floating
dtype, and reads n as PyTorch's kernels do: truncated to an integer, and any n that is no int64 (NaN, inf, huge)
as a negative degree. Values follow PyTorch's kernels case by case: 0 for n < 0, exact values at the ends of the
interval, the trigonometric closed form for Chebyshev polynomials of high degree inside (-1, 1), NaN for Hermite
degrees past 128 (float32) or 512 (float64), and the three-term recurrence otherwise, run for all elements at once
(an element that overflows to NaN stays NaN, as PyTorch's loop stops there). In float32 the recurrences' multiply-adds
are fused and the trigonometric forms use the C library's acosf, sinf and cosf roundings, as the compiled kernels do
(special_aten_forms.fused_multiply_add, c_library_acos, c_library). None has a derivative.

>>> x = lantern.tensor([-1.0, 0.0, 0.5, 2.0], dtype=lantern.float64)
>>> lantern.special_chebyshev_polynomial_t(x, 3).tolist()   # 4x^3 - 3x (-0.0 at 0, as torch)
[-1.0, -0.0, -1.0, 26.0]
>>> lantern.special_legendre_polynomial_p(x, lantern.tensor([2, 2, -1, 2])).tolist()
[1.0, -0.5, 0.0, 5.5]
"""
import math
from functools import partial

import numpy as np

from ..core import dtype as dt
from .derivative import nondifferentiable
from .registry import structured
from .special_aten_forms import c_library, c_library_acos, fused_multiply_add
from .pointwise_common import special
from .special_functions import _refuse, number_or_tensor_meta

_INT64_RANGE = 2.0 ** 63


def _degrees(xp, n):
    """n (a floating array) as the integer degree PyTorch's kernels use: truncated toward zero; NaN, infinities and
    values outside int64 convert to INT64_MIN on PyTorch's CPUs, a negative degree, here -1."""
    representable = xp.isfinite(n) & (n < _INT64_RANGE) & (n >= -_INT64_RANGE)
    return xp.where(representable, n, -1).astype(np.int64)


def _sign_of_parity(xp, degree):
    """(-1)^n."""
    return xp.where(degree % 2 == 0, 1.0, -1.0)


def _recurrence(xp, v, degree, first, step):
    """P_degree(v) elementwise for degrees >= 0, from P_0 = 1, P_1 = first(v) and P_m = step(v, m, P_(m-1), P_(m-2)),
    run up to the largest degree (or until every unfinished element is NaN, where PyTorch's loops stop)."""
    previous, current = xp.ones_like(v), first(v)
    result = xp.where(degree == 0, previous, current)
    top = int(degree.max()) if degree.size else 0
    for m in range(2, top + 1):
        previous, current = current, step(v, m, current, previous)
        result = xp.where(degree == m, current, result)
        if m % 64 == 0 and not xp.any((degree > m) & ~xp.isnan(current)):
            return xp.where(degree > m, current, result)   # NaN from here on
    return result


def _by_cases(xp, v, degree, cases, first, step):
    """The value of the first case whose condition holds, else the recurrence in the variable v (run only on the
    elements no case decides). cases: (condition, value) pairs over v's shape, in PyTorch's order of tests."""
    result = xp.zeros(v.shape, dtype=v.dtype)
    decided = xp.zeros(v.shape, dtype=bool)
    for condition, value in cases:
        take = condition & ~decided
        result = xp.where(take, value, result)
        decided = decided | take
    rest = ~decided
    if xp.any(rest):
        result[rest] = _recurrence(xp, v[rest], degree[rest], first, step)
    return result


# ---- Chebyshev polynomials, plain on [-1, 1] and shifted to [0, 1] ------------------------------------------------

def _chebyshev_closed_form(kind, shifted):
    """The trigonometric form of the degree-n polynomial at y = cos(theta) (PyTorch's, with its fallbacks where the
    denominator rounds to 0), as a function (xp, x, y, n, degree) -> array."""
    def closed_form(xp, x, y, n, degree):
        sin, cos = partial(c_library, xp, xp.sin), partial(c_library, xp, xp.cos)
        theta = c_library_acos(xp, y)
        if kind == "t":
            return cos(n * theta)
        if kind == "u":
            s = sin(theta)
            return xp.where(s != 0, sin((n + 1) * theta) / s, (n + 1) * cos((n + 1) * theta) / y)
        half = theta / 2
        odd_value = (n + n + 1) * _sign_of_parity(xp, degree)
        if kind == "v":
            return xp.where(sin(half) != 1, cos((n + 0.5) * theta) / cos(half), odd_value)
        near_one = _sign_of_parity(xp, degree) if shifted else xp.where(x > 0, n + n + 1, _sign_of_parity(xp, degree))
        return xp.where(cos(half) != 1, sin((n + 0.5) * theta) / sin(half), near_one)
    return closed_form


def _chebyshev_step(xp, y, m, q, p):
    """P_m = 2y P_(m-1) - P_(m-2), for each of the four kinds."""
    return fused_multiply_add(xp, y + y, q, -p)


# kind: (P_1 in terms of y, value at y = 1, value at y = -1 for even n (odd n: its negative), closed-form threshold
# on n for the plain and the shifted polynomials)
_CHEBYSHEV = {
    "t": (lambda y: y, lambda n: 1.0, lambda n: 1.0, 6, 6),
    "u": (lambda y: y + y, lambda n: n + 1, lambda n: n + 1, 8, 6),
    "v": (lambda y: y + y - 1, lambda n: 1.0, lambda n: n + n + 1, 8, 6),
    "w": (lambda y: y + y + 1, lambda n: n + n + 1, lambda n: 1.0, 8, 4),
}


def _chebyshev(kind, shifted):
    """The kernel of chebyshev_polynomial_<kind> (shifted: of shifted_chebyshev_polynomial_<kind>, in y = 2x - 1).
    The ends y = +-1 are x = +-1 (shifted: x = 1 and x = 0; 2x - 1 is exact there)."""
    first, at_one, at_minus_one, plain_threshold, shifted_threshold = _CHEBYSHEV[kind]
    threshold = shifted_threshold if shifted else plain_threshold
    closed_form = _chebyshev_closed_form(kind, shifted)

    def kernel(xp, x, degree):
        y = x + x - 1 if shifted else x
        n = degree.astype(x.dtype)
        cases = [
            (degree < 0, 0.0),
            (y == 1, at_one(n)),
            (y == -1, at_minus_one(n) * _sign_of_parity(xp, degree)),
            ((degree > threshold) & (xp.abs(y) < 1), closed_form(xp, x, y, n, degree)),
        ]
        return _by_cases(xp, y, degree, cases, first, partial(_chebyshev_step, xp))
    kernel.__name__ = f"{'shifted_' if shifted else ''}chebyshev_polynomial_{kind}"
    return kernel


# ---- Hermite, Laguerre, Legendre ----------------------------------------------------------------------------------

def _hermite_limit(dtype):
    """The largest degree PyTorch's Hermite kernels compute; past it they return NaN."""
    return 128 if dtype == np.float32 else 512


def _hermite_h(xp, x, degree):
    """H_m = 2x H_(m-1) - 2(m-1) H_(m-2)."""
    cases = [(degree < 0, 0.0), (degree > _hermite_limit(x.dtype), math.nan)]
    return _by_cases(xp, x, degree, cases, lambda v: v + v,
                     lambda v, m, q, p: fused_multiply_add(xp, v + v, q, -(2 * (m - 1) * p)))


def _hermite_he(xp, x, degree):
    """He_m = x He_(m-1) - (m-1) He_(m-2)."""
    cases = [(degree < 0, 0.0), (degree > _hermite_limit(x.dtype), math.nan)]
    return _by_cases(xp, x, degree, cases, lambda v: v,
                     lambda v, m, q, p: fused_multiply_add(xp, v, q, -((m - 1) * p)))


LONG_LAGUERRE = 1 << 14   # degrees past this go to SciPy's compiled loop (_laguerre_long)


def _laguerre_l(xp, x, degree):
    """L_m = ((2m - 1 - x) L_(m-1) - (m-1) L_(m-2)) / m; L_n(0) = 1."""
    long = (degree > LONG_LAGUERRE) & (x != 0)
    cases = [(degree < 0, 0.0), (x == 0, 1.0), (long, _laguerre_long(xp, x, degree, long))]
    return _by_cases(xp, x, degree, cases, lambda v: 1 - v,
                     lambda v, m, q, p: fused_multiply_add(xp, 2 * (m - 1) + (1 - v), q, -((m - 1) * p)) / m)


def _laguerre_long(xp, x, degree, where):
    """L_n(x) at `where` (0 elsewhere) for degrees past LONG_LAGUERRE, through scipy.special.eval_laguerre's
    compiled recurrence: ATen's loop runs millions of steps in microseconds where the vectorised recurrence here
    would take minutes. SciPy's loop rounds differently (~1e-10 relative to ATen's after 5e6 steps, in float64; it
    sums float32 inputs in float64), and where the terms overflow (the dtype's range) it gives inf where ATen's loop
    reaches inf - inf and stops at NaN: read as NaN.

    >>> import numpy as np
    >>> x, n = np.array([501.0, -501.0]), np.array([4988429, 4988429])
    >>> _laguerre_long(np, x, n, n > LONG_LAGUERRE)   # L_n(-501) overflows
    array([1.57961926e+105,             nan])
    """
    result = xp.zeros(x.shape, dtype=x.dtype)
    if xp.any(where):
        with xp.errstate(all="ignore"):
            values = special(xp).eval_laguerre(degree[where], x[where].astype(np.float64)).astype(x.dtype)
        result[where] = xp.where(xp.isfinite(values), values, math.nan)
    return result


def _legendre_p(xp, x, degree):
    """P_m = ((2m - 1) x P_(m-1) - (m-1) P_(m-2)) / m; P_n(1) = 1, P_n(-1) = (-1)^n."""
    cases = [(degree < 0, 0.0), (xp.abs(x) == 1, xp.where(x > 0, 1.0, _sign_of_parity(xp, degree)))]
    return _by_cases(xp, x, degree, cases, lambda v: v,
                     lambda v, m, q, p: fused_multiply_add(xp, (2 * m - 1) * v, q, -((m - 1) * p)) / m)


KERNELS = {
    **{f"chebyshev_polynomial_{k}": _chebyshev(k, shifted=False) for k in "tuvw"},
    **{f"shifted_chebyshev_polynomial_{k}": _chebyshev(k, shifted=True) for k in "tuvw"},
    "hermite_polynomial_h": _hermite_h,
    "hermite_polynomial_he": _hermite_he,
    "laguerre_polynomial_l": _laguerre_l,
    "legendre_polynomial_p": _legendre_p,
}


# ---- the ops ------------------------------------------------------------------------------------------------------

def _polynomial_impl(kernel):
    """Broadcast x and n (a tensor or a number each) to the output, compute in the result dtype, write."""
    def impl(xp, out, dtype, x, n):
        x = xp.broadcast_to(xp.asarray(x, dtype=dtype), out.shape)
        n = xp.broadcast_to(xp.asarray(n, dtype=dtype), out.shape)
        xp.copyto(out, kernel(xp, x, _degrees(xp, n)), casting="unsafe")
    impl.__name__ = kernel.__name__
    return impl


for _name, _kernel in KERNELS.items():
    structured(f"special_{_name}(Tensor x, Tensor n) -> Tensor",
               number_or_tensor_meta(f"special_{_name}", _refuse(f"{_name}_cpu")), _polynomial_impl(_kernel),
               inplace=False, pointwise=True, method=False)
    nondifferentiable(f"special_{_name}")
