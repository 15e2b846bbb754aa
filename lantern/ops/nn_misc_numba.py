"""numba kernel for embedding's backward: the rows of grad_output added into the rows of the weight's gradient
that their indices name, in one pass (SciPy's sparse-dense product, the readable path, costs ~60 us of set-up for
a batch of 512 rows). Imported only when the specialisation in nn_misc.py first runs; cached on disk.

>>> import numpy as np
>>> out = np.empty((3, 2), np.float32)
>>> add_rows(np.array([2, 0, 2]), np.ones((3, 2), np.float32), out)
True
>>> out.tolist()
[[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]
"""
import numba

__all__ = ["add_rows"]


@numba.njit(error_model="numpy", cache=True)
def add_rows(rows, contributions, out):
    """out = 0, then out[rows[k]] += contributions[k] for k in order (the order of the readable path's sums).
    Returns False, having written part of out, at a row index outside out (for the caller's readable path to
    report)."""
    out[...] = 0
    for k in range(rows.size):
        row = rows[k]
        if row < 0 or row >= out.shape[0]:
            return False
        source, target = contributions[k], out[row]
        for j in range(target.size):
            target[j] += source[j]
    return True
