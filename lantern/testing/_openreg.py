"""openreg: a complete device from outside lantern, on the PrivateUse1 path (PyTorch's own example of that path,
torch_openreg, has this name and this idea: host memory posing as a device's).

Its memory is host memory behind its own allocator (each block an anonymous memory mapping, counted by the
device's statistics, never the CPU allocator's); its kernels are lantern's shared `xp` kernels over NumPy, plus a
CPU fallback for the few ops that have none; its copies to the host are real copies, so no host code ever holds a
view of device memory. `setup()` runs the whole registration (docs/internals/custom-devices.md reads it step by
step); the test suite runs its device-generic tests on this device.

>>> from lantern.testing import _openreg
>>> _openreg.setup()
>>> x = lantern.ones(2, 3, device="openreg")
>>> x.device, x.is_openreg, (x * 2).sum().item()
(device(type='openreg'), True, 12.0)
>>> x.cpu().device, lantern.openreg.memory_allocated() > 0
(device(type='cpu'), True)
"""
import mmap
import types

import numpy as np

from ..backends import privateuse1
from ..core import dtype as dt
from ..core.allocator import AllocatorStats
from ..utils import backend_registration

NAME = "openreg"


class OpenRegAllocator:
    """The device's memory: every block is an anonymous memory mapping of its own (page-aligned host pages), seen
    as a uint8 array. A freed block is let go of, and the pages return to the system once no array looks at them;
    nothing is cached, so `stats.cached_bytes` stays 0."""

    def __init__(self):
        self.stats = AllocatorStats()

    def allocate(self, nbytes):
        block = np.frombuffer(mmap.mmap(-1, max(nbytes, 1)), np.uint8, count=nbytes)
        stats = self.stats
        stats.num_allocs += 1
        stats.allocated_bytes += nbytes
        stats.peak_bytes = max(stats.peak_bytes, stats.allocated_bytes)
        return block

    def free(self, block, nbytes):
        self.stats.num_frees += 1
        self.stats.allocated_bytes -= nbytes

    def empty_cache(self):
        """Nothing is cached."""

    @staticmethod
    def address(block):
        return block.ctypes.data


class OpenRegBackend(privateuse1.PrivateUse1Backend):
    """Kernels compute with NumPy on arrays laid over the device's blocks; the host sees copies only."""

    xp = np
    allocator = OpenRegAllocator()

    def array_over(self, storage, shape, dtype):
        return np.ndarray(shape, dtype.np, storage._data)

    def array(self, t):
        nd = t._nd
        if nd is not None and t._nd_gen == t._storage._gen:
            return nd
        itemsize = t.dtype.itemsize
        offset = 0 if 0 in t._size else t._offset * itemsize  # an empty view may lie past its block's end
        nd = np.ndarray(t._size, t.dtype.np, t._storage._data, offset, tuple(s * itemsize for s in t._stride))
        t._nd, t._nd_gen = nd, t._storage._gen
        return nd

    def to_host(self, array):
        """Device to host: a copy in the array's own memory order."""
        return np.array(array, order="K", copy=True)

    def from_host(self, array):
        """Host to device: the host array itself, which the caller writes into device memory."""
        return array


backend = OpenRegBackend()


def _device_module():
    """lantern.openreg: what lantern and programs ask a device's module (torch.cuda's names, for one device)."""
    module = types.ModuleType(f"lantern.{NAME}", "The openreg device's module: one device, host memory.")
    stats = backend.allocator.stats
    module.is_available = lambda: True
    module.is_initialized = lambda: True
    module.device_count = lambda: 1
    module.current_device = lambda: 0
    module.synchronize = lambda device=None: None
    module._is_in_bad_fork = lambda: False
    module.manual_seed_all = lambda seed: None  # its random ops draw from the default (CPU) generator
    module.get_amp_supported_dtype = lambda: [dt.float16, dt.bfloat16]
    module.memory_allocated = lambda device=None: stats.allocated_bytes
    module.max_memory_allocated = lambda device=None: stats.peak_bytes
    module.memory_stats = lambda device=None: stats.as_dict()
    module.reset_peak_memory_stats = lambda device=None: setattr(stats, "peak_bytes", stats.allocated_bytes)
    return module


def setup():
    """Register the openreg device, as a device's package does when imported; again is a no-op."""
    backend_registration.rename_privateuse1_backend(NAME)
    if privateuse1.registered_backend() is backend:
        return
    privateuse1.register_privateuse1_backend(backend)
    privateuse1.register_fallback(privateuse1.cpu_fallback)
    backend_registration._register_device_module(NAME, _device_module())
    backend_registration.generate_methods_for_privateuse1_backend(for_storage=True)
