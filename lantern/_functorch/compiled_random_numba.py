"""Numba kernel of compiled_random.py: a dropout mask from Philox4x32-10 words in one loop (imported lazily).

>>> import numpy as np
>>> from lantern._functorch.compiled_random import philox_words
>>> out = np.empty(10, np.float32)
>>> philox_mask(np.uint64(7), np.uint64(9), np.uint64(2 ** 31), out)
>>> bool(np.array_equal(out, philox_words((7, 9), 10) < 2 ** 31))
True
"""
import numba
import numpy as np

from .compiled_random import PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1, LOW_32

_S = np.uint64(32)


@numba.njit(cache=True, nogil=True)
def philox_mask(k0, k1, threshold, out):
    """out[i] = 1 where word i of compiled_random.philox_words((k0, k1), n) is below threshold, else 0."""
    n = out.shape[0]
    for block in range((n + 3) // 4):
        c0, c1 = np.uint64(block) & LOW_32, np.uint64(block) >> _S
        c2, c3 = np.uint64(0), np.uint64(0)
        a, b = k0, k1
        for _ in range(10):
            p0, p1 = PHILOX_M0 * c0, PHILOX_M1 * c2
            c0, c1, c2, c3 = (p1 >> _S) ^ c1 ^ a, p1 & LOW_32, (p0 >> _S) ^ c3 ^ b, p0 & LOW_32
            a, b = (a + PHILOX_W0) & LOW_32, (b + PHILOX_W1) & LOW_32
        i = block * 4
        out[i] = 1 if c0 < threshold else 0
        if i + 1 < n:
            out[i + 1] = 1 if c1 < threshold else 0
        if i + 2 < n:
            out[i + 2] = 1 if c2 < threshold else 0
        if i + 3 < n:
            out[i + 3] = 1 if c3 < threshold else 0
