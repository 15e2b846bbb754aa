"""numba kernels for GELU (`approximate='none'`) on float32, forward and backward, and ReLU's backward on
float32/float64 (one select an element where NumPy's mask version makes four passes).

GELU's readable forward is x·Φ(x) with SciPy's ndtr (about 15 ns an element), which for float32 computes Cephes'
ndtr in double and rounds it to float32. gelu_forward computes the same double operations in the same order (numba
rounds each one as C does without fastmath, and calls libm's exp), so it gives the same bits: the values with
|x| < √2, where Φ is a rational function, in a vectorised loop (about 1.5 ns an element), the rest one at a time
through exp (about 20 ns).

GELU's readable backward is five lantern ops over Φ(x). gelu_backward computes what PyTorch's vectorised CPU kernel
computes (ATen's GeluBackwardKernelImpl over Vectorized<float>): grad·(Φ(x) + x·φ(x)) with Φ(x) = ½(1 + erf(x/√2))
and erf by Abramowitz and Stegun's formula 7.1.26 (absolute error below 1.5e-7, as ATen's Vectorized<float>::erf).
The loop vectorises (about 1 ns an element).

Imported only when a specialisation first runs (numba takes ~0.5 s to import); kernels are cached on disk.

>>> import numpy as np, scipy.special
>>> x, grad, out = np.array([-1.0, 0.0, 2.0], np.float32), np.ones(3, np.float32), np.empty(3, np.float32)
>>> gelu_forward(x, out)
>>> out.tobytes() == (x * scipy.special.ndtr(x)).tobytes()
True
>>> gelu_backward(grad, x, out)
>>> [round(v, 4) for v in out.tolist()]
[-0.0833, 0.5, 1.0852]
"""
import math

import numba
import numpy as np

from .float32_numba import exp_nonpositive

_JIT = {"error_model": "numpy", "cache": True, "nogil": True, "fastmath": {"arcp", "contract"}}
_EXACT = {"error_model": "numpy", "cache": True, "nogil": True}   # no fastmath: every operation rounded as in C
f32 = np.float32

# Cephes' ndtr coefficients (SciPy's xsf/cephes/ndtr.h), highest power first: erf(x) = x·T(x²)/U(x²) for |x| < 1,
# erfc(x) = exp(−x²)·P(x)/Q(x) for 1 ≤ x < 8 and exp(−x²)·R(x)/S(x) beyond; U, Q and S have a leading 1 not listed.
_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3, 7.00332514112805075473E3,
      5.55923013010394962768E4)
_U = (3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3, 2.26290000613890934246E4,
      4.92673942608635921086E4)
_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0, 4.86371970985681366614E1,
      1.96520832956077098242E2, 5.26445194995477358631E2, 9.34528527171957607540E2, 1.02755188689515710272E3,
      5.57535335369399327526E2)
_Q = (1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2, 9.75708501743205489753E2,
      1.82390916687909736289E3, 2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2)
_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0, 6.16021097993053585195E0,
      7.40974269950448939160E0, 2.97886665372100240670E0)
_S = (2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1, 1.70814450747565897222E1,
      9.60896809063285878198E0, 3.36907645100081516050E0)
_MAXLOG = 7.09782712893383996732E2   # log(largest double): exp(−x²) underflows beyond it
_SQRT1_2 = 0.70710678118654752440
_BLOCK = 512   # elements gelu_forward takes at a time


@numba.njit(inline="always", **_JIT)
def _erf(x):
    """erf(x) for float32 x: sign(x)·(1 − t·r(t)·exp(−x²)), t = 1 / (1 + p|x|) (Abramowitz and Stegun 7.1.26)."""
    t = f32(1) / (f32(0.3275911) * abs(x) + f32(1))
    r = (((f32(1.061405429) * t + f32(-1.453152027)) * t + f32(1.421413741)) * t + f32(-0.284496736)) * t
    r = r + f32(0.254829592)
    return math.copysign(f32(1) - r * t * exp_nonpositive(-(x * x)), x)


@numba.njit(**_JIT)
def gelu_backward(grad, x, out):
    """out = grad·(Φ(x) + x·φ(x)) over 1-D float32 arrays, φ(x) = exp(−x²/2)/√(2π)."""
    for i in range(x.shape[0]):
        v = x[i]
        cdf = f32(0.5) * (f32(1) + _erf(v * f32(0.70710678118654752)))
        pdf = f32(0.3989422804014327) * exp_nonpositive(v * v * f32(-0.5))
        out[i] = grad[i] * (cdf + v * pdf)


@numba.njit(inline="always", **_EXACT)
def _polevl(x, coefficients):
    """The polynomial with these coefficients (highest power first) at x by Horner's rule, as Cephes' polevl."""
    value = coefficients[0]
    for i in range(1, len(coefficients)):
        value = value * x + coefficients[i]
    return value


@numba.njit(inline="always", **_EXACT)
def _p1evl(x, coefficients):
    """As _polevl with a leading coefficient 1 not listed, as Cephes' p1evl."""
    value = x + coefficients[0]
    for i in range(1, len(coefficients)):
        value = value * x + coefficients[i]
    return value


@numba.njit(inline="always", **_EXACT)
def _ndtr_centre(x):
    """Φ(a) = ½ + ½·erf(x) for x = a/√2 with |x| < 1, erf(x) = x·T(x²)/U(x²) (Cephes' ndtr and erf)."""
    z2 = x * x
    return 0.5 + 0.5 * (x * _polevl(z2, _T) / _p1evl(z2, _U))


@numba.njit(inline="always", **_EXACT)
def _ndtr_tails(x):
    """Φ(a) for x = a/√2 with |x| ≥ 1 (or nan): ½·erfc(|x|), or 1 minus it for x > 0, erfc(z) = exp(−z²)·P(z)/Q(z)
    below 8 and exp(−z²)·R(z)/S(z) beyond, 0 where exp(−z²) underflows (Cephes' ndtr and erfc)."""
    z = abs(x)
    if -z * z < -_MAXLOG:
        erfc = 0.0
    elif z < 8.0:
        erfc = math.exp(-z * z) * _polevl(z, _P) / _p1evl(z, _Q)
    else:
        erfc = math.exp(-z * z) * _polevl(z, _R) / _p1evl(z, _S)
    return 1.0 - 0.5 * erfc if x > 0 else 0.5 * erfc


@numba.njit(**_EXACT)
def gelu_forward(x, out):
    """out = x·Φ(x) over 1-D float32 arrays (out may be x) with the bits of NumPy's x * scipy.special.ndtr(x): Φ by
    Cephes' ndtr in double (the same operations in the same order, libm's exp) rounded to float32, then the float32
    product."""
    for start in range(0, x.shape[0], _BLOCK):
        _gelu_block(x[start:start + _BLOCK], out[start:start + _BLOCK])


@numba.njit(inline="always", **_EXACT)
def _gelu_block(x, out):
    """gelu_forward on one block: a branch-free loop (it vectorises) computes the elements with |x/√2| < 1 and
    counts the others (GELU's inputs in a trained network seldom reach √2: one in 6000 in nanoGPT), which a second
    loop computes through exp if there are any. Where out is x, the second loop still finds them: the first leaves
    them as they were, and the values it writes are below 1.31 (gelu of √2) in magnitude. A nan x gives its own
    nan, quieted, as NumPy's product does (v + v: LLVM may swap a product's operands, x86 keeps the first one's)."""
    tails = 0
    for i in range(x.shape[0]):
        v = x[i]
        tail = not abs(np.float64(v) * _SQRT1_2) < 1.0
        out[i] = v if tail else v * f32(_ndtr_centre(np.float64(v) * _SQRT1_2))
        tails += tail
    if tails:
        for i in range(x.shape[0]):
            v = x[i]
            if not abs(np.float64(v) * _SQRT1_2) < 1.0:
                out[i] = v * f32(_ndtr_tails(np.float64(v) * _SQRT1_2)) if v == v else v + v


@numba.njit(**_JIT)
def relu_backward(grad, result, out):
    """out = grad where result > 0, else 0, over 1-D float arrays of one dtype (a nan result gives 0)."""
    zero = out.dtype.type(0)
    for i in range(out.shape[0]):
        out[i] = grad[i] if result[i] > 0 else zero
