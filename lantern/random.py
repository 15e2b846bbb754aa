"""Random number generators: `Generator` objects, the default generator, and the module-level seeding functions.

A Generator wraps a NumPy PCG64 bit generator. The same seed gives the same numbers in lantern, run after run;
PyTorch's own stream (a Mersenne Twister) is not reproduced. Like PyTorch, an unseeded program starts from a fixed
default seed, so it too repeats.

>>> g = lantern.Generator().manual_seed(0)
>>> first = lantern.rand(3, generator=g).tolist()
>>> _ = g.manual_seed(0)
>>> lantern.rand(3, generator=g).tolist() == first
True
>>> with lantern.random.fork_rng():
...     _ = lantern.randn(5)          # draws inside do not move the default generator outside
"""
import contextlib
import os

import numpy as np

from .core import dtype as dt
from .core.device import device as _device
from .core.tensor_impl import TensorImpl
from ._construct import tensor
from .ops import random as _random_ops

# What `import lantern` exposes at the top level, as torch does; fork_rng stays lantern.random.fork_rng.
__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state"]

DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed
_SEED_RANGE = (-2**63, 2**64)  # the seeds PyTorch accepts; negative ones wrap modulo 2**64
# The state as bytes: the seed (8), PCG64's 128-bit state and increment (16 + 16), and the buffered 32-bit half of a
# 64-bit draw with its flag (4 + 4).
_STATE_FIELDS = (("seed", 8), ("state", 16), ("inc", 16), ("has_uint32", 4), ("uinteger", 4))
STATE_SIZE = sum(n for _, n in _STATE_FIELDS)


class Generator:
    """A source of random numbers for the `generator=` argument of random ops (CPU only).

    >>> g = lantern.Generator()
    >>> g.initial_seed(), g.device
    (67280421310721, device(type='cpu'))
    """

    __slots__ = ("device", "_seed", "numpy_generator")

    def __init__(self, device="cpu"):
        device = _device("cpu" if device is None else device)
        if device.type != "cpu":
            raise RuntimeError(f"lantern has random generators only for the CPU, not for {device.type}; "
                               "use Generator('cpu')")
        self.device = device
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed):
        """Reseed; returns the generator itself, so `Generator().manual_seed(0)` reads as one expression."""
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not _SEED_RANGE[0] <= seed < _SEED_RANGE[1]:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed % 2**64
        self.numpy_generator = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        """Reseed from the operating system's entropy; returns the new seed."""
        new = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(new)
        return new

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The full state as a uint8 tensor (a copy): `set_state` with it replays the same numbers."""
        return tensor(np.frombuffer(self._state_bytes(), dtype=np.uint8), dtype=dt.uint8)

    def set_state(self, new_state):
        if not isinstance(new_state, TensorImpl):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor (a uint8 tensor, as get_state() returns)")
        if new_state.numel() != STATE_SIZE:
            raise RuntimeError(f"Expected a lantern PCG64 generator state of size {STATE_SIZE} but found the input "
                               f"RNG state size to be {new_state.numel()}")
        self._load_state_bytes(bytes(new_state.reshape(-1).tolist()))
        return self

    def clone_state(self):
        """A new generator in this one's exact state."""
        return _generator_from_state(self._state_bytes())

    def _state_bytes(self):
        bits = self.numpy_generator.bit_generator.state
        values = {"seed": self._seed, **bits["state"], "has_uint32": bits["has_uint32"],
                  "uinteger": bits["uinteger"]}
        return b"".join(values[name].to_bytes(n, "little") for name, n in _STATE_FIELDS)

    def _load_state_bytes(self, data):
        values, at = {}, 0
        for name, n in _STATE_FIELDS:
            values[name] = int.from_bytes(data[at:at + n], "little")
            at += n
        self._seed = values["seed"]
        self.numpy_generator = np.random.Generator(np.random.PCG64())
        self.numpy_generator.bit_generator.state = {
            "bit_generator": "PCG64", "state": {"state": values["state"], "inc": values["inc"]},
            "has_uint32": values["has_uint32"], "uinteger": values["uinteger"]}

    def __reduce__(self):
        return (_generator_from_state, (self._state_bytes(),))

    def __repr__(self):
        return f"<lantern.Generator(device='{self.device}') initial_seed={self._seed}>"


def _generator_from_state(data):
    g = Generator()
    g._load_state_bytes(data)
    return g


default_generator = Generator()
_random_ops.set_default_generator(default_generator)


def manual_seed(seed):
    """Seed the default generator (any int-convertible seed, as PyTorch's `int(seed)`); returns it."""
    return default_generator.manual_seed(int(seed))


def seed():
    """Seed the default generator non-deterministically; returns the seed."""
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, device_type=None):
    """Run a block with the default generator's state restored afterwards. `devices` and `device_type` are
    accepted for PyTorch compatibility: lantern has only the CPU generator, which is always forked."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
