"""PyTorch's CPU random engine: the 32-bit Mersenne Twister, seeded as ATen's `at::mt19937` seeds it.

PyTorch's CPU generator draws every random number from one MT19937 stream. Seeding stores the seed and fills the
624-word state with the reference initialisation (`init_genrand`) of its low 32 bits; each draw takes the next
tempered word. NumPy's MT19937 bit generator runs the same recurrence, so this engine only sets its state the way
ATen does and hands out its words: the same seed gives the same words as torch.

>>> engine = MT19937(0)
>>> engine.random(3).tolist()        # torch.manual_seed(0); the CPU generator's first three 32-bit words
[2357136044, 2546248239, 3071714933]
>>> engine.position()                # torch's (left, next) counters
(622, 3)
"""
import ctypes

import numpy as np

STATE_WORDS = 624


def _init_genrand(seed32):
    """The reference MT19937 initialisation of the 624 state words from a 32-bit seed."""
    key = [seed32]
    for j in range(1, STATE_WORDS):
        previous = key[-1]
        key.append((1812433253 * (previous ^ (previous >> 30)) + j) & 0xFFFFFFFF)
    return np.array(key, dtype=np.uint32)


class MT19937:
    """The word stream: `random(n)` gives n 32-bit words, `random64(n)` n 64-bit ones (two words each, the first
    as the high half, as ATen's `random64()` combines them)."""

    def __init__(self, seed):
        self.bits = np.random.MT19937()
        self._in_place = None
        self.seed(seed)

    def seed(self, seed):
        self.bits.state = {"bit_generator": "MT19937",
                           "state": {"key": _init_genrand(seed & 0xFFFFFFFF), "pos": STATE_WORDS}}
        self._fresh = True   # torch reports next=0 until the first draw regenerates the state

    def random(self, n):
        """n words as uint64 values below 2**32."""
        self._fresh = False
        return self.bits.random_raw(n)

    def random64(self, n):
        words = self.random(2 * n)
        return (words[0::2] << np.uint64(32)) | words[1::2]

    def draw_in_place(self, kernel, *args):
        """Run kernel(words, position, *args) on the generator's own state (state_in_place, which must not be
        None): a compiled sampler that draws as `random` does and advances `position`."""
        kernel(*self._in_place, *args)
        self._fresh = False

    def state_in_place(self):
        """(words, position): NumPy views of the bit generator's memory, laid out as NumPy's mt19937_state struct
        (uint32 key[624], then the int index of the next word, as a one-element int32 array); None if that
        memory does not hold this state (checked once)."""
        if self._in_place is None:
            address = self.bits.ctypes.state_address
            words = np.ctypeslib.as_array((ctypes.c_uint32 * STATE_WORDS).from_address(address))
            position = np.ctypeslib.as_array((ctypes.c_int32 * 1).from_address(address + 4 * STATE_WORDS))
            state = self.bits.state["state"]
            laid_out = np.array_equal(words, state["key"]) and int(position[0]) == state["pos"]
            self._in_place = (words, position) if laid_out else False
        return self._in_place or None

    def words(self):
        """The 624 state words (a copy)."""
        return self.bits.state["state"]["key"].copy()

    def position(self):
        """ATen's counters: `left` (draws until the state regenerates, plus one) and `next` (the index of the next
        word)."""
        pos = int(self.bits.state["state"]["pos"])
        return STATE_WORDS + 1 - pos, 0 if self._fresh else pos

    def restore(self, words, left, next_):
        """Set the state words and ATen's counters (`left` in 1..624), as from torch's saved generator state."""
        self.bits.state = {"bit_generator": "MT19937",
                           "state": {"key": np.asarray(words, dtype=np.uint32), "pos": STATE_WORDS + 1 - left}}
        self._fresh = left == 1 and next_ == 0
