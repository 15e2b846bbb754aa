"""The arithmetic behind SobolEngine, over NumPy int64 arrays: direction numbers, Owen's scrambling, the Gray-code
walk that draws points.

The initial direction numbers are Joe and Kuo's (new-joe-kuo-6.21201, search criterion D(6)), the table torch
builds into its C++; SciPy ships the same table, which is where lantern reads it. Each dimension's remaining
direction numbers follow from its primitive polynomial by Sobol's recurrence.

>>> state = direction_numbers(3)
>>> (state[:, :3] >> (MAXBIT - 3)).tolist()   # the first three direction numbers, as 3-bit fractions
[[4, 2, 1], [4, 6, 5], [4, 6, 3]]
>>> (draw(np.zeros(3, np.int64), state, 0, 3)[0] / 2**MAXBIT).tolist()
[[0.5, 0.5, 0.5], [0.75, 0.25, 0.25], [0.25, 0.75, 0.75]]
"""
import functools
import importlib.util
import os

import numpy as np

MAXBIT = 30    # bits per coordinate: a point is a 30-bit integer per dimension, over 2**30
MAXDIM = 21201


@functools.cache
def _joe_kuo_table():
    """(poly, vinit): each dimension's primitive polynomial as an integer (leading and constant terms included)
    and its initial direction numbers m_1, m_2, ... (zero-padded), from SciPy's copy of the table."""
    scipy_dir = importlib.util.find_spec("scipy").submodule_search_locations[0]
    with np.load(os.path.join(scipy_dir, "stats", "_sobol_direction_numbers.npz")) as table:
        return table["poly"], table["vinit"]


def direction_numbers(dimension):
    """(dimension, MAXBIT) int64: v[d, j] = m_{j+1} * 2**(MAXBIT-1-j), the direction numbers as 30-bit fractions.

    The first dimension has m_j = 1 throughout; dimension d of degree s takes its s initial m_j from the table and
    m_j = 2 a_1 m_{j-1} ^ 4 a_2 m_{j-2} ^ ... ^ 2**s m_{j-s} ^ m_{j-s} (a_k the polynomial's coefficients) after."""
    poly, vinit = _joe_kuo_table()
    rows = [[1] * MAXBIT]
    for d in range(1, dimension):
        p, degree = int(poly[d]), int(poly[d]).bit_length() - 1
        m = [int(x) for x in vinit[d, :degree]]
        taps = [k for k in range(1, degree + 1) if (p >> (degree - k)) & 1]   # a_k = 1, and k = degree
        for j in range(degree, MAXBIT):
            value = m[j - degree]
            for k in taps:
                value ^= m[j - k] << k
            m.append(value)
        rows.append(m)
    return np.array(rows, np.int64) << np.arange(MAXBIT - 1, -1, -1)


def scramble(state, ltm):
    """Owen's linear matrix scrambling: each direction number's bits (most significant first) times the dimension's
    lower-triangular 0/1 matrix `ltm` (dimension, MAXBIT, MAXBIT), its diagonal set to 1, over GF(2)."""
    ltm = ltm.copy()
    ltm[:, np.arange(MAXBIT), np.arange(MAXBIT)] = 1
    place = np.arange(MAXBIT - 1, -1, -1)   # the bit of a 30-bit fraction holding column c
    bits = (state[:, :, None] >> place) & 1                      # [d, j, c]
    scrambled = np.einsum("dpc,djc->djp", ltm, bits) % 2          # [d, j, p]
    return (scrambled << place).sum(axis=-1)


def _gray_code_columns(start, n):
    """The direction-number column each of the next n points flips: the lowest zero bit of its index."""
    return [((~k) & (k + 1)).bit_length() - 1 for k in range(start, start + n)]


def draw(quasi, state, num_generated, n):
    """The next n points after point `num_generated` (whose integer coordinates are `quasi`), as (n, dimension)
    integers, and the new `quasi` (the last row)."""
    flips = state[:, _gray_code_columns(num_generated, n)].T     # [n, dimension]
    points = quasi ^ np.bitwise_xor.accumulate(flips, axis=0)
    return points, (points[-1] if n else quasi)
