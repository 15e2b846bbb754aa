"""float32 exp, sigmoid and tanh for numba kernels, as formulas LLVM vectorises (libm's scalar expf and tanhf
are ~10 times slower than NumPy's ufuncs): exp(x) = 2^-m (1 + q) with Cephes' polynomial for q = expm1 of the
reduced argument, and sigmoid and tanh built from it without cancellation (within ~2 ulp, or 2e-7 absolute, of the
exact values). The recurrent cells (nn_rnn_numba) and GELU (nn_activation_numba) compile them into their loops.

>>> import numpy as np
>>> x = np.array([-100, -3, -1e-5, 0, 2, np.inf, np.nan], np.float32)
>>> exact = x.astype(np.float64)
>>> bool(np.allclose([sigmoid(v) for v in x], 1 / (1 + np.exp(-exact)), rtol=1e-6, atol=1e-37, equal_nan=True))
True
>>> bool(np.allclose([tanh(v) for v in x], np.tanh(exact), rtol=1e-6, atol=1e-37, equal_nan=True))
True
>>> bool(np.allclose([exp_nonpositive(v) for v in x[:4]], np.exp(exact[:4]), rtol=1e-6, atol=1e-37))
True
"""
import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["exp_nonpositive", "sigmoid", "tanh"]

f32 = np.float32
_JIT = {"error_model": "numpy", "cache": True, "fastmath": {"arcp", "contract"}}
_INLINE = dict(_JIT, inline="always")


@intrinsic
def _float32_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 `bits` (a bitcast, which LLVM vectorises)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@numba.njit(**_INLINE)
def _exp_parts(x):
    """(s, q) with exp(x) = s (1 + q) for float32 x <= 0 (x below -87.3, where exp turns subnormal, taken as
    -87.3): s = 2^-m, q = expm1 of the rest, r = x + m ln 2 in [-ln 2 / 2, ln 2 / 2], by Cephes' polynomial."""
    x = x if x >= f32(-87.3) else f32(-87.3)
    m = -np.int32(x * f32(1.44269504088896341) - f32(0.5))         # round(-x / ln 2)
    r = x + f32(m) * f32(0.693359375) + f32(m) * f32(-2.12194440e-4)  # ln 2 in two parts
    p = f32(1.9875691500e-4) * r + f32(1.3981999507e-3)
    p = p * r + f32(8.3334519073e-3)
    p = p * r + f32(4.1665795894e-2)
    p = p * r + f32(1.6666665459e-1)
    p = p * r + f32(5.0000001201e-1)
    return _float32_bits((127 - m) << 23), p * r * r + r      # 2^-m: exponent field 127 - m, m <= 126


@numba.njit(**_INLINE)
def exp_nonpositive(x):
    """exp(x) for float32 x <= 0: 0 below -87.3, NaN for NaN."""
    s, q = _exp_parts(x)
    return s + s * q if x >= f32(-87.3) else (f32(0) if x < f32(0) else x)


@numba.njit(**_INLINE)
def _expm1_nonpositive(x):
    """exp(x) - 1 for float32 x <= 0, without the cancellation of subtracting 1 near x = 0: -1 below -87.3."""
    s, q = _exp_parts(x)
    return (s - f32(1)) + s * q if x >= f32(-87.3) else (f32(-1) if x < f32(0) else x)


@numba.njit(**_INLINE)
def sigmoid(x):
    """1 / (1 + exp(-x)) in float32, from exp(-|x|) so that nothing overflows or cancels."""
    e = exp_nonpositive(-abs(x))
    s = f32(1) / (f32(1) + e)
    return s if x >= f32(0) else e * s


@numba.njit(**_INLINE)
def tanh(x):
    """tanh(x) in float32 as -expm1(-2|x|) / (2 + expm1(-2|x|)), with the sign of x."""
    q = _expm1_nonpositive(f32(-2) * abs(x))
    return math.copysign(-q / (f32(2) + q), x)
