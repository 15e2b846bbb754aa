"""numba kernels for layer norm over rows (ops/nn_norm.py): a row's statistics, its normalisation and the affine in
one loop over the row, and in backward the input gradient of a row, or the weight gradient of all rows, likewise;
the readable kernels make five to seven NumPy passes over the whole array. The sums are reassociated (fastmath), so
the results agree with the readable kernels to rounding, not bit for bit. Imported only when a specialisation in
nn_norm.py first runs; cached on disk.

>>> import numpy as np
>>> x = np.array([[1.0, 3.0]], np.float32)
>>> y, mean, rstd = np.empty_like(x), np.empty((1, 1), np.float32), np.empty((1, 1), np.float32)
>>> layer_norm_rows(x, None, None, 0.0, y, mean, rstd)
>>> y.tolist(), mean.tolist(), rstd.tolist()
([[-1.0, 1.0]], [[2.0]], [[1.0]])
"""
import math

import numba

_JIT = {"error_model": "numpy", "cache": True, "nogil": True, "fastmath": {"reassoc", "contract"}}


@numba.njit(**_JIT)
def layer_norm_rows(x, weight, bias, eps, y, mean, rstd):
    """y = (x - mean) * rstd * weight + bias for each row of the 2-D x (weight, bias 1-D or None); each row's mean
    and 1/sqrt(biased var + eps) written into the (rows, 1) arrays mean and rstd."""
    real = x.dtype.type  # every constant in x's dtype: float32 rows are computed in float32, as PyTorch does
    size, one, eps = real(x.shape[1]), real(1), real(eps)
    for i in range(x.shape[0]):
        row, out = x[i], y[i]
        total = real(0)
        for j in range(x.shape[1]):
            total += row[j]
        m = total / size
        squares = real(0)
        for j in range(x.shape[1]):
            squares += (row[j] - m) * (row[j] - m)
        r = one / real(math.sqrt(squares / size + eps))  # (float32 rounding of the exact square root)
        mean[i, 0], rstd[i, 0] = m, r
        for j in range(x.shape[1]):
            value = (row[j] - m) * r
            if weight is not None:
                value *= weight[j]
            if bias is not None:
                value += bias[j]
            out[j] = value


@numba.njit(**_JIT)
def layer_norm_input_backward_rows(g, x, mean, rstd, weight, result):
    """The input gradient of each row of x into result: rstd * gw + c1 * x + c0 with gw = g * weight (g if weight
    is None), c1 = (Σ gw · mean - Σ gw x) rstd³ / size and c0 = -c1 mean - Σ gw · rstd / size, as PyTorch's CPU
    kernel computes it."""
    real = x.dtype.type
    size = real(x.shape[1])
    for i in range(x.shape[0]):
        m, r = mean[i, 0], rstd[i, 0]
        g_row, x_row, out = g[i], x[i], result[i]
        total, dot = real(0), real(0)
        for j in range(x.shape[1]):
            gw = g_row[j] if weight is None else g_row[j] * weight[j]
            total += gw
            dot += gw * x_row[j]
        c1 = (total * m - dot) * (r * r * r / size)
        c0 = -c1 * m - total * (r / size)
        for j in range(x.shape[1]):
            gw = g_row[j] if weight is None else g_row[j] * weight[j]
            out[j] = gw * r + x_row[j] * c1 + c0


@numba.njit(**_JIT)
def layer_norm_weight_backward(g, x, mean, rstd, out):
    """out (size,) = Σ over the rows of g * (x - mean) * rstd: the weight's gradient."""
    out[:] = 0
    for i in range(x.shape[0]):
        m, r = mean[i, 0], rstd[i, 0]
        g_row, x_row = g[i], x[i]
        for j in range(x.shape[1]):
            out[j] += g_row[j] * ((x_row[j] - m) * r)


@numba.njit(**_JIT)
def column_sums(g, out):
    """out (columns,) = Σ over the rows of the 2-D g: the bias's gradient."""
    out[:] = 0
    for i in range(g.shape[0]):
        g_row = g[i]
        for j in range(g.shape[1]):
            out[j] += g_row[j]
