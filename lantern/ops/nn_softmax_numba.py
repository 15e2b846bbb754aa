"""numba kernels for softmax and log_softmax along the last axis (ops/nn_activation_softmax.py): each row less its
maximum in one loop (NumPy's max along rows of a few dozen elements costs as much as the rest of softmax together),
each row scaled by its factor (the float64 softmax, around NumPy's exp and sums), a whole float32 softmax or
log_softmax over rows, the softmax backward (grad - Σ grad · output) · output of a row in one loop and the float32
log_softmax backward grad - exp(output) · Σ grad. Shift and scaling are exact, so the forward that uses them gives
the readable kernel's bits; the float32 kernels and the backward reassociate their sums (fastmath), and the float32
ones use float32_numba's exp: they agree to rounding. Imported only when a specialisation in nn_activation_softmax.py
first runs; cached on disk.

>>> import numpy as np
>>> x, out = np.array([[1.0, 3.0, 2.0]], np.float32), np.empty((1, 3), np.float32)
>>> shift_rows(x, out)
>>> out.tolist()
[[-2.0, 0.0, -1.0]]
"""
import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .float32_numba import exp_nonpositive

_JIT = {"error_model": "numpy", "cache": True, "nogil": True}
_REASSOCIATED = dict(_JIT, fastmath={"reassoc", "contract"})  # sums LLVM may vectorise


@intrinsic
def _maxnum(typingctx, a, b):
    """The larger of the floats a and b, or the other where one is nan: LLVM's maxnum, which (unlike a compare and
    select) LLVM may reorder, so a running maximum of it vectorises."""
    def codegen(context, builder, signature, args):
        kind = context.get_value_type(signature.return_type)
        suffix = "f32" if signature.return_type == types.float32 else "f64"
        maxnum = builder.module.declare_intrinsic(f"llvm.maxnum.{suffix}", (), ir.FunctionType(kind, [kind, kind]))
        return builder.call(maxnum, args)
    if isinstance(a, types.Float) and a == b:
        return a(a, b), codegen


@numba.njit(**_JIT)
def _long_row_max(row):
    """The maximum of the row's numbers, skipping nans, in a loop LLVM vectorises."""
    top = row[0]
    for j in range(1, row.size):
        top = _maxnum(top, row[j])
    return top


_LANES = 16  # running maxima kept side by side: sixteen independent compare chains, which the CPU overlaps


@numba.njit(inline="always", **_JIT)
def _short_row_max(row, lanes):
    """The maximum of row, over _LANES running maxima in the scratch lanes when the row has as many elements, each
    skipping a nan (unless the row starts with one)."""
    n, top = row.size, row[0]
    if n < _LANES:
        for j in range(1, n):
            top = row[j] if row[j] > top else top
        return top
    for lane in range(_LANES):  # (a slice assignment here, lanes[:] = row[:_LANES], takes three times as long)
        lanes[lane] = row[lane]
    k = _LANES
    while k + _LANES <= n:
        for lane in range(_LANES):
            value = row[k + lane]
            lanes[lane] = value if value > lanes[lane] else lanes[lane]
        k += _LANES
    top = lanes[0]
    for lane in range(1, _LANES):
        top = lanes[lane] if lanes[lane] > top else top
    for j in range(k, n):
        top = row[j] if row[j] > top else top
    return top


_LONG_ROW = 256  # from this length _long_row_max's vectorised loop is the faster (1000: 2x; over 64 it takes 2x)


@numba.njit(inline="always", **_JIT)
def _row_max(row, lanes):
    """The maximum of row (lanes: _LANES elements of scratch for a short row); nan only for a row of nans, or one
    starting with nan and shorter than _LONG_ROW (its softmax is nan throughout either way)."""
    return _long_row_max(row) if row.size >= _LONG_ROW else _short_row_max(row, lanes)


@numba.njit(**_JIT)
def _row_maxima(x):
    """The maximum of each row of the 2-D x, taken before the rows' exp loops: with a short row's maximum inlined
    among them, LLVM made softmax's exp loop over rows of 64 1.6 times slower."""
    lanes = x[0, :_LANES].copy()  # scratch of its own (lanes in out's rows ran 3 times slower)
    maxima = x[:, 0].copy()  # one per row, each overwritten
    for i in range(x.shape[0]):
        maxima[i] = _row_max(x[i], lanes)
    return maxima


@numba.njit(**_JIT)
def shift_rows(x, out):
    """out = x - the maximum of its row, for the 2-D x. The maximum skips a nan, so a row holding one gets nan
    there, where NumPy's gives the whole row nan; the softmax of either is nan throughout (its sum is nan)."""
    lanes = x[0, :_LANES].copy()  # scratch, as in _row_maxima (here the maximum inlined is the faster)
    for i in range(x.shape[0]):
        row, shifted = x[i], out[i]
        top = _row_max(row, lanes)
        for j in range(row.size):
            shifted[j] = row[j] - top


@numba.njit(**_REASSOCIATED)
def softmax_rows_float32(x, out):
    """out = exp(x - max) / Σ exp(x - max) along each row of the 2-D float32 x, in two loops per row: float32_numba's
    exp (within ~2 ulp of the exact value, where NumPy's is within 1) and a reassociated sum, so within rounding of
    the readable kernel. A row holding a nan, or +inf, or only -inf comes out nan, as there."""
    maxima = _row_maxima(x)
    for i in range(x.shape[0]):
        row, result, top = x[i], out[i], maxima[i]
        total = np.float32(0)
        for j in range(row.size):
            e = exp_nonpositive(row[j] - top)
            result[j] = e
            total += e
        factor = np.float32(1) / total
        for j in range(row.size):
            result[j] *= factor


@numba.njit(**_REASSOCIATED)
def log_softmax_rows_float32(x, out):
    """out = (x - max) - log Σ exp(x - max) along each row of the 2-D float32 x, the exponentials only summed
    (float32_numba's, as in softmax_rows_float32), so within rounding of the readable kernel; nan where it is."""
    maxima = _row_maxima(x)
    for i in range(x.shape[0]):
        row, result, top = x[i], out[i], maxima[i]
        total = np.float32(0)
        for j in range(row.size):
            total += exp_nonpositive(row[j] - top)
        log_total = np.float32(math.log(total))
        for j in range(row.size):
            result[j] = (row[j] - top) - log_total


@numba.njit(**_JIT)
def scale_rows(rows, factors):
    """rows[i] *= factors[i, 0] for each row of the 2-D rows."""
    for i in range(rows.shape[0]):
        row, factor = rows[i], factors[i, 0]
        for j in range(row.size):
            row[j] *= factor


@numba.njit(**_REASSOCIATED)
def log_softmax_backward_rows_float32(g, y, out):
    """out = g - exp(y) · Σ g along each row of the 2-D float32 g and y (y the log_softmax's output, so at most 0:
    float32_numba's exp, within rounding of NumPy's; a row with a larger y, given to the op directly, takes libm's)."""
    maxima = _row_maxima(y)
    for i in range(g.shape[0]):
        g_row, y_row, result = g[i], y[i], out[i]
        total = np.float32(0)
        for j in range(g_row.size):
            total += g_row[j]
        if maxima[i] <= 0:
            for j in range(g_row.size):
                result[j] = g_row[j] - exp_nonpositive(y_row[j]) * total
        else:
            for j in range(g_row.size):
                result[j] = g_row[j] - math.exp(y_row[j]) * total


@numba.njit(**_REASSOCIATED)
def softmax_backward_rows(g, y, out):
    """out = (g - Σ g · y) · y along each row of the 2-D g and y (y the softmax's output)."""
    for i in range(g.shape[0]):
        g_row, y_row, result = g[i], y[i], out[i]
        dot = g.dtype.type(0)
        for j in range(g_row.size):
            dot += g_row[j] * y_row[j]
        for j in range(g_row.size):
            result[j] = (g_row[j] - dot) * y_row[j]
