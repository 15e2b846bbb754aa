"""Random number generators: `Generator` objects, the default generator, and the module-level seeding functions.

A Generator is PyTorch's CPU generator: a Mersenne Twister seeded as ATen seeds it (lantern.core.mt19937), whose
words the random ops turn into values with ATen's own algorithms (lantern.ops.random_draws). So a seed gives the
numbers torch gives. As in torch 2.13, the default generator starts from a seed drawn from the operating system
(an unseeded program differs run to run), while a new `Generator()` starts from the fixed default seed.

>>> _ = lantern.manual_seed(0)
>>> lantern.rand(3)                                  # torch.manual_seed(0); torch.rand(3) prints the same
tensor([0.4963, 0.7682, 0.0885])
>>> lantern.get_rng_state().shape                    # torch's 5056-byte state: it loads in either library
lantern.Size([5056])
>>> with lantern.random.fork_rng():
...     _ = lantern.randn(5)          # draws inside do not move the default generator outside
"""
import contextlib
import os
import struct

import numpy as np

from .core import dtype as dt
from .core.device import device as _device
from .core.mt19937 import MT19937, STATE_WORDS
from .core.tensor_impl import TensorImpl
from ._construct import tensor
from .ops import random as _random_ops

# What `import lantern` exposes at the top level, as torch does; fork_rng stays lantern.random.fork_rng.
__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state"]

DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed
_SEED_RANGE = (-2**63, 2**64)  # the seeds PyTorch accepts; negative ones wrap modulo 2**64

# torch's CPUGeneratorImplState, little-endian: the seed, the engine's left/seeded/next counters and 624 words
# (each in 8 bytes), the legacy normal_x/normal_y/normal_rho doubles and is-valid flag (normal_y holds the kept
# double normal), then the kept float normal and its flag.
_HEAD = struct.Struct(f"<QiiQ{STATE_WORDS}Q")
_TAIL = struct.Struct("<dddi4xf?3x")
STATE_SIZE = _HEAD.size + _TAIL.size   # 5056


class Generator:
    """A source of random numbers for the `generator=` argument of random ops (CPU only).

    >>> g = lantern.Generator()
    >>> g.initial_seed(), g.device
    (67280421310721, device(type='cpu'))
    """

    __slots__ = ("device", "_seed", "engine", "next_double_normal", "next_float_normal")

    def __init__(self, device="cpu"):
        device = _device("cpu" if device is None else device)
        if device.type != "cpu":
            raise RuntimeError(f"lantern has random generators only for the CPU, not for {device.type}; "
                               "use Generator('cpu')")
        self.device = device
        self.engine = MT19937(DEFAULT_SEED)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed):
        """Reseed; returns the generator itself, so `Generator().manual_seed(0)` reads as one expression."""
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not _SEED_RANGE[0] <= seed < _SEED_RANGE[1]:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed % 2**64
        self.engine.seed(self._seed)
        self.next_double_normal = self.next_float_normal = None
        return self

    def seed(self):
        """Reseed from the operating system's entropy; returns the new seed."""
        new = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(new)
        return new

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The full state as a uint8 tensor in torch's layout (a copy): `set_state` with it, in lantern or torch,
        replays the same numbers."""
        return tensor(np.frombuffer(self._state_bytes(), dtype=np.uint8), dtype=dt.uint8)

    def set_state(self, new_state):
        if not isinstance(new_state, TensorImpl):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor (a uint8 tensor, as get_state() returns)")
        if new_state.numel() != STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the input RNG state "
                               f"size to be {new_state.numel()}")
        self._load_state_bytes(bytes(new_state.reshape(-1).tolist()))
        return self

    def clone_state(self):
        """A new generator in this one's exact state."""
        return _generator_from_state(self._state_bytes())

    def _state_bytes(self):
        left, next_ = self.engine.position()
        double_valid, float_valid = self.next_double_normal is not None, self.next_float_normal is not None
        head = _HEAD.pack(self._seed, left, 1, next_, *self.engine.words().tolist())
        return head + _TAIL.pack(0.0, self.next_double_normal if double_valid else 0.0, 0.0, double_valid,
                                 self.next_float_normal if float_valid else 0.0, float_valid)

    def _load_state_bytes(self, data):
        seed, left, _seeded, next_, *words = _HEAD.unpack_from(data)
        _, normal_y, _, double_valid, float_normal, float_valid = _TAIL.unpack_from(data, _HEAD.size)
        if not 1 <= left <= STATE_WORDS:
            raise RuntimeError("Invalid mt19937 state")
        self._seed = seed
        self.engine.restore(words, left, next_)
        self.next_double_normal = normal_y if double_valid else None
        self.next_float_normal = float_normal if float_valid else None

    def __reduce__(self):
        return (_generator_from_state, (self._state_bytes(),))

    def __repr__(self):
        return f"<lantern.Generator(device='{self.device}') initial_seed={self._seed}>"


def _generator_from_state(data):
    g = Generator()
    g._load_state_bytes(data)
    return g


default_generator = Generator()
default_generator.seed()   # torch 2.13 seeds its default generator from the OS at start-up; Generator() starts fixed
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
