"""numba kernels for 2-d max pooling on float arrays: the 2 × 2 max pool of stride 2 (MaxPool2d(2), most CNNs'
pooling) with each window's maximum and its index in one pass over the input, where the NumPy version
(nn_pooling.max_pool_planes) makes four passes per kernel tap over strided views; and the backward of any max pool
whose windows do not overlap, each output's gradient written at its maximum's place.

Imported only when nn_pooling's compiled specialisations first run (numba takes ~0.5 s to import); kernels are
cached on disk. The forward follows max_pool_planes: taps in row-major order, the first maximum wins. It does not
look for nan (a comparison per tap made it 2.5 times slower): nn_pooling runs the NumPy version on input that
holds a nan.

>>> import numpy as np
>>> a = np.array([[[1, 5, 2, 0], [3, 5, 9, 9]]], np.float32)
>>> best, where = np.empty((1, 1, 2), np.float32), np.empty((1, 1, 2), np.int64)
>>> max_pool_2x2(a, best, where)
>>> best.tolist(), where.tolist()
([[[5.0, 9.0]]], [[[1, 6]]])
"""
import numba

_JIT = {"error_model": "numpy", "cache": True, "nogil": True}


@numba.njit(**_JIT)
def max_pool_2x2(a, best, where):
    """best, where (L, oh, ow): the 2 × 2, stride 2 max pool of a (L, H, W) (2·oh ≤ H, 2·ow ≤ W, no nan) and the
    flat index of each maximum in its (H, W) plane."""
    width = a.shape[2]
    for p in range(a.shape[0]):
        for oy in range(best.shape[1]):
            for ox in range(best.shape[2]):
                y, x = 2 * oy, 2 * ox
                value, index = a[p, y, x], y * width + x
                for i in range(2):
                    for j in range(2):
                        v = a[p, y + i, x + j]
                        if v > value:
                            value, index = v, (y + i) * width + x + j
                best[p, oy, ox] = value
                where[p, oy, ox] = index


@numba.njit(**_JIT)
def max_pool_backward(grad, where, out):
    """out (L, H·W): zero, and each output's gradient grad (L, P) at its maximum's place where (L, P) (windows
    that do not overlap: nothing to accumulate). An index outside the plane (a window of -inf whose first tap is
    padding) is skipped, never written past the array."""
    for p in range(out.shape[0]):
        for k in range(out.shape[1]):
            out[p, k] = 0
        for k in range(grad.shape[1]):
            w = where[p, k]
            if 0 <= w < out.shape[1]:
                out[p, w] = grad[p, k]
