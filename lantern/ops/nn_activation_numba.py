"""numba kernels for GELU's backward (`approximate='none'`) on float32 in one pass, and ReLU's backward on
float32/float64 (one select an element where NumPy's mask version makes four passes).

GELU's readable backward is five lantern ops over Φ(x) (SciPy's ndtr, about 15 ns an element). This kernel computes
what PyTorch's vectorised CPU kernel computes (ATen's GeluBackwardKernelImpl over Vectorized<float>):
grad·(Φ(x) + x·φ(x)) with Φ(x) = ½(1 + erf(x/√2)) and erf by Abramowitz and Stegun's formula 7.1.26 (absolute error
below 1.5e-7, as ATen's Vectorized<float>::erf). The loop vectorises (about 1 ns an element).

Imported only when a specialisation first runs (numba takes ~0.5 s to import); kernels are cached on disk.

>>> import numpy as np
>>> x, grad, out = np.array([-1.0, 0.0, 2.0], np.float32), np.ones(3, np.float32), np.empty(3, np.float32)
>>> gelu_backward(grad, x, out)
>>> [round(v, 4) for v in out.tolist()]
[-0.0833, 0.5, 1.0852]
"""
import math

import numba
import numpy as np

from .float32_numba import exp_nonpositive

_JIT = {"error_model": "numpy", "cache": True, "nogil": True, "fastmath": {"arcp", "contract"}}
f32 = np.float32


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


@numba.njit(**_JIT)
def relu_backward(grad, result, out):
    """out = grad where result > 0, else 0, over 1-D float arrays of one dtype (a nan result gives 0)."""
    zero = out.dtype.type(0)
    for i in range(out.shape[0]):
        out[i] = grad[i] if result[i] > 0 else zero
