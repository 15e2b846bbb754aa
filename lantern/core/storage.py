"""UntypedStorage: a flat byte buffer owned by one device's allocator; tensors are views over it.

>>> s = lantern.UntypedStorage(16)
>>> s.nbytes(), s.device
(16, device(type='cpu'))
"""
import mmap
import os
import tempfile
import weakref

import numpy as np

from .allocator import cpu_allocator, meta_allocator
from .device import CPU, device as _device, device_unavailable_error

_ALLOCATORS = {"cpu": cpu_allocator, "meta": meta_allocator}


def register_allocator(device_type, allocator):
    """Storages on `device_type` get their bytes from `allocator` (PyTorch's SetAllocator / REGISTER_ALLOCATOR):
    how a device from outside brings its memory (lantern.backends.privateuse1)."""
    _ALLOCATORS[device_type] = allocator


def allocator_for(dev):
    try:
        return _ALLOCATORS[dev.type]
    except KeyError:
        raise device_unavailable_error(dev.type) from None


class SharedMapping(mmap.mmap):
    """Memory other processes can map too: a mapping of an in-memory file whose descriptor, `fd`, stays open while
    the mapping lives, so that it can be sent to a process started later (torch.multiprocessing's file_descriptor
    sharing; a forked process shares the mapping anyway).

    >>> m = SharedMapping.create(8); m[:2] = b"hi"; SharedMapping.attach(os.dup(m.fd), 8)[:2]
    b'hi'
    """

    @classmethod
    def create(cls, nbytes):
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("lantern-storage")
        else:  # an unlinked temporary file where the system has no anonymous in-memory files
            with tempfile.TemporaryFile() as f:
                fd = os.dup(f.fileno())
        os.ftruncate(fd, nbytes)
        return cls.attach(fd, nbytes)

    @classmethod
    def attach(cls, fd, nbytes):
        """Map `nbytes` of the file `fd` (which the mapping then owns and closes)."""
        mapping = cls(fd, nbytes)
        mapping.fd = fd
        weakref.finalize(mapping, os.close, fd)
        return mapping


class UntypedStorage:
    """Bytes plus the allocator that made them. `_data` is a 1-D uint8 array (None on the meta device)."""

    __slots__ = ("_data", "_nbytes", "device", "_allocator", "_ptr", "_gen", "resizable", "__weakref__")

    def __init__(self, nbytes=0, *, device=None):
        dev = CPU if device is None else _device(device)
        self._init(allocator_for(dev), dev, int(nbytes))

    def _init(self, allocator, dev, nbytes):
        self._allocator = None  # set once the buffer exists: __del__ after a failed allocation has nothing to free
        self._data = allocator.allocate(nbytes)
        self._allocator = allocator
        self.device = dev
        self._nbytes = nbytes
        self._ptr = None
        self._gen = 0  # bumped when the buffer is replaced, so tensors rebuild their cached arrays
        self.resizable = True

    @classmethod
    def _allocate(cls, nbytes, dev, allocator):
        """Fast constructor used for op outputs (no argument parsing)."""
        data = allocator.allocate(nbytes)  # first: a failed allocation leaves no half-made storage to __del__
        self = object.__new__(cls)
        self._allocator = allocator
        self.device = dev
        self._nbytes = nbytes
        self._data = data
        self._ptr = None
        self._gen = 0  # bumped when the buffer is replaced, so tensors rebuild their cached arrays
        self.resizable = True
        return self

    @classmethod
    def _wrap(cls, data, dev):
        """A storage over memory that some other owner (a user's NumPy array) keeps alive; not counted."""
        self = object.__new__(cls)
        self._allocator = None
        self.device = dev
        self._nbytes = data.shape[0]
        self._data = data
        self._ptr = None
        self._gen = 0
        self.resizable = False
        return self

    def __del__(self):
        allocator = self._allocator
        if allocator is not None and self._data is not None:
            allocator.free(self._data, self._nbytes)

    def nbytes(self):
        return self._nbytes

    def size(self):
        return self._nbytes

    __len__ = nbytes

    def data_ptr(self):
        """The address of byte 0 (0 on the meta device)."""
        if self._ptr is None:
            self._ptr = 0 if self._data is None or self._nbytes == 0 else self._data.ctypes.data
        return self._ptr

    def element_size(self):
        return 1

    @property
    def is_meta(self):
        return self.device.type == "meta"

    def resize_(self, nbytes):
        """Grow or shrink in place, keeping the common prefix; every tensor over this storage sees the new bytes."""
        nbytes = int(nbytes)
        if not self.resizable:
            raise RuntimeError(
                "Trying to resize storage that is not resizable (it wraps memory lantern does not own, "
                "e.g. from lantern.from_numpy); clone() the tensor first")
        allocator = self._allocator
        old, old_n = self._data, self._nbytes
        new = allocator.allocate(nbytes)
        if new is not None and old is not None:
            keep = min(old_n, nbytes)
            new[:keep] = old[:keep]
        self._data, self._nbytes, self._ptr = new, nbytes, None
        self._gen += 1
        if old is not None:
            allocator.free(old, old_n)
        return self

    def share_memory_(self):
        """Move the bytes into an anonymous shared mapping, which forked processes keep sharing (what
        torch.multiprocessing relies on for Hogwild! training); a no-op when already shared or on the meta device.
        Shared storage cannot be resized, as in PyTorch."""
        if self._data is None or self.is_shared():
            return self
        shared = np.frombuffer(SharedMapping.create(max(self._nbytes, 1)), np.uint8)
        shared[:self._nbytes] = self._data[:self._nbytes]
        old, allocator = self._data, self._allocator
        self._data, self._ptr, self._allocator, self.resizable = shared, None, None, False
        self._gen += 1
        if allocator is not None:
            allocator.free(old, self._nbytes)
        return self

    def is_shared(self):
        """Whether share_memory_() moved these bytes into shared memory."""
        return self._shared_mapping() is not None

    def _shared_mapping(self):
        """The SharedMapping under the bytes, or None."""
        base = None if self._data is None else self._data.base
        return base.obj if isinstance(base, memoryview) and isinstance(base.obj, SharedMapping) else None

    @classmethod
    def _over_shared(cls, mapping, nbytes):
        """A storage over another process's shared bytes (what a process receives for a shared storage)."""
        return cls._wrap(np.frombuffer(mapping, np.uint8, count=nbytes), CPU)

    def __getitem__(self, i):
        return int(self._data[i])

    def __setitem__(self, i, value):
        self._data[i] = value

    def tolist(self):
        return self._data[:self._nbytes].tolist()

    def fill_(self, value):
        self._data[:self._nbytes] = value
        return self

    def copy_(self, other):
        if other.nbytes() != self._nbytes:
            raise RuntimeError(f"size mismatch: copy_ from a storage of {other.nbytes()} bytes into {self._nbytes}")
        self._data[:self._nbytes] = other._data[:self._nbytes]
        return self

    def __repr__(self):
        if self._data is None:
            return f"[lantern.storage.UntypedStorage(device={self.device}) of size {self._nbytes}]"
        body = "\n".join(f" {b}" for b in self._data[:self._nbytes].tolist())
        return f"{body}\n[lantern.storage.UntypedStorage(device={self.device}) of size {self._nbytes}]"


def wrap_numpy_memory(arr):
    """A storage covering exactly the bytes a (non-negative-strided) NumPy array spans, sharing its memory."""
    span = 0 if arr.size == 0 else sum((n - 1) * s for n, s in zip(arr.shape, arr.strides)) + arr.itemsize
    base = arr.__array_interface__["data"][0]
    holder = _MemoryHolder(base, span, arr)
    data = np.asarray(holder)
    return UntypedStorage._wrap(data, CPU)


class _MemoryHolder:
    """Exposes raw bytes to NumPy while keeping the array that owns them alive."""

    def __init__(self, address, nbytes, owner):
        self.owner = owner
        self.__array_interface__ = {"data": (address, False), "shape": (nbytes,), "typestr": "|u1", "version": 3}
