"""numba kernels that draw PyTorch's CPU random numbers straight from the Mersenne Twister's state.

The readable samplers (random_draws.py) ask NumPy's MT19937 bit generator for words (about 5 ns each, as uint64),
then combine, mask, convert and compare them in separate NumPy passes: a dropout mask of a million elements costs
about 16 ms that way. These kernels run the same generator (the reference genrand: regenerate the 624 state words
every 624 draws, temper each word as it is drawn) on the state in place (MT19937.state_in_place) and turn each
word into its value in the same loop: about 3 ns per word.

Imported only when random_draws' compiled specialisations first run (numba takes ~0.5 s to import); kernels are
cached on disk.

>>> import numpy as np
>>> from lantern.core.mt19937 import MT19937
>>> engine, out = MT19937(0), np.empty(3, np.uint64)
>>> engine.state_in_place() is not None
True
>>> engine.draw_in_place(fill_words, out)
>>> out.tolist()                          # torch.manual_seed(0); the CPU generator's first three 32-bit words
[2357136044, 2546248239, 3071714933]
"""
import numba
import numpy as np

_JIT = {"error_model": "numpy", "cache": True, "nogil": True}

_N, _M = 624, 397
_MATRIX_A = np.uint32(0x9908B0DF)
_UPPER, _LOWER = np.uint32(0x80000000), np.uint32(0x7FFFFFFF)
_LOW_21_BITS = np.uint64((1 << 21) - 1)     # the high word's share of a 53-bit draw


@numba.njit(**_JIT)
def _twist_one(key, i, j, k):
    y = (key[i] & _UPPER) | (key[j] & _LOWER)
    key[i] = key[k] ^ (y >> np.uint32(1)) ^ ((y & np.uint32(1)) * _MATRIX_A)


@numba.njit(**_JIT)
def _regenerate(key):
    """The next 624 state words, in place, in the reference order (each new word reads words already renewed
    below it)."""
    for i in range(_N - _M):
        _twist_one(key, i, i + 1, i + _M)
    for i in range(_N - _M, _N - 1):
        _twist_one(key, i, i + 1, i + _M - _N)
    _twist_one(key, _N - 1, 0, _M - 1)


@numba.njit(**_JIT)
def _tempered(word):
    """The output of state word `word` (uint32), as uint64."""
    y = np.uint64(word)
    y ^= y >> np.uint64(11)
    y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
    y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
    return y ^ (y >> np.uint64(18))


@numba.njit(**_JIT)
def _unit_double(high, low):
    """The low 53 bits of two words, the first as the high half, times 2**-53."""
    return np.float64(((high & _LOW_21_BITS) << np.uint64(32)) | low) * 2.0 ** -53


# Each kernel takes its words as `key[pos]; pos += 1` after regenerating a used-up state: written out in every loop
# because a helper that takes the state array, called once per word, costs more than the word (numba counts the
# array's references on each call; 20 ns against 2).

@numba.njit(**_JIT)
def fill_words(key, cell, out):
    """out (uint64, n): the next n words, as MT19937.random(n) gives them; cell[0], the position, advances."""
    pos = cell[0]
    for i in range(out.shape[0]):
        if pos == _N:
            _regenerate(key)
            pos = 0
        out[i] = _tempered(key[pos])
        pos += 1
    cell[0] = pos


@numba.njit(**_JIT)
def fill_unit_floats(key, cell, out):
    """out (float32, n): the low 24 bits of each next word times 2**-24, as random_draws.unit_uniform's float
    case."""
    pos = cell[0]
    for i in range(out.shape[0]):
        if pos == _N:
            _regenerate(key)
            pos = 0
        out[i] = np.float32(_tempered(key[pos]) & np.uint64(0xFFFFFF)) * np.float32(2.0 ** -24)
        pos += 1
    cell[0] = pos


@numba.njit(**_JIT)
def fill_unit_doubles(key, cell, below, out):
    """out (n): a uniform double in [0, 1) from each next two words, as unit_uniform's double case; with `below`
    a number, whether that double falls below it instead (Bernoulli(below), out of bool)."""
    pos = cell[0]
    for i in range(out.shape[0]):
        if pos == _N:
            _regenerate(key)
            pos = 0
        high = _tempered(key[pos])
        pos += 1
        if pos == _N:
            _regenerate(key)
            pos = 0
        u = _unit_double(high, _tempered(key[pos]))
        pos += 1
        out[i] = u if below is None else u < below
    cell[0] = pos
