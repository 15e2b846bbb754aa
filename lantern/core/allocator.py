"""Allocators: each device makes its byte buffers through one, which keeps statistics.

The CPU allocator hands out 64-byte aligned NumPy uint8 buffers (PyTorch's alloc_cpu uses posix_memalign with 64).
Freed blocks are cached and reused, much as PyTorch's CUDA caching allocator does: small blocks (up to 64 KiB)
because finding a NumPy buffer's address costs ~1.4 µs, more than a whole small add; large ones because fresh
memory pages cost a page fault on first touch (an 8 MB buffer: ~2 ms fresh, ~0.35 ms reused). A block goes back
to the cache only when no NumPy array still looks at it.

Small blocks are cached by exact size class (64-byte steps to 1 KiB, then powers of two). Large blocks (sizes
rounded up to 64 KiB) are cached in one list ordered by size, and a request takes the smallest cached block that
holds it, if that block is at most twice the request: a training step's backward frees blocks of other sizes than
its forward asks for, and with exact size classes those could serve nothing, so the cache grew past the live
tensors (the CNN benchmark: 18 MiB held for a 10.5 MiB live peak; 15.8 MiB with this best fit). Bytes held in
large blocks, live and cached, stay under max(_HELD_FLOOR, _HELD_SLACK × the most bytes ever live at once):
a fresh block that would pass the bound first releases the least recently freed cached blocks. The bound is loose
on purpose: measured on the training benchmarks, a bound at 1× the live peak made every step evict and re-fault
its blocks (MLP and CNN steps ~1.4× slower) while a steady loop that reuses its blocks never reaches 1.5×. What
the resident set holds beyond these blocks is NumPy's own temporaries inside kernels (im2col matrices, products).

>>> from lantern.core.allocator import CPUAllocator, cpu_allocator
>>> buf = cpu_allocator.allocate(100)
>>> cpu_allocator.address(buf) % 64
0
>>> al = CPUAllocator()
>>> block = al.allocate(1 << 20)
>>> al.free(block, 1 << 20); del block
>>> len(al.allocate(600_000)), al.stats.cached_bytes       # served by the cached 1 MiB block
(1048576, 0)
"""
from bisect import bisect_left, insort
from sys import getrefcount as _refcount

import numpy as np

ALIGNMENT = 64
_SMALL_LIMIT = 1 << 16          # up to 64 KiB: size classes of 64 bytes, then powers of two
_LARGE_GRAIN = 1 << 16          # above: sizes rounded up to 64 KiB
_CACHE_LIMIT = 512 << 20        # small blocks are cached while cached small blocks hold under 512 MiB
_LARGE_FIT = 2                  # a cached large block serves requests down to 1/_LARGE_FIT of its size
_HELD_FLOOR = 16 << 20          # large blocks held (live + cached) may always reach this ...
_HELD_SLACK = 1.5               # ... or this many times the live peak


class AllocatorStats:
    """Counters every allocator keeps: live bytes, the peak, allocation and free counts, cached bytes."""

    __slots__ = ("allocated_bytes", "peak_bytes", "num_allocs", "num_frees", "cached_bytes")

    def __init__(self):
        self.reset()

    def reset(self):
        self.allocated_bytes = self.peak_bytes = self.num_allocs = self.num_frees = self.cached_bytes = 0

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}


class CPUAllocator:
    """64-byte aligned host memory with a cache of freed blocks (see the module docstring for the policy)."""

    device_type = "cpu"

    def __init__(self):
        self.stats = AllocatorStats()
        self._cache = {}      # small size class -> list of aligned uint8 blocks (each a slice of a raw array)
        self._large = []      # cached large blocks as (size, free order, block), sorted
        self._freed = 0       # free order: larger is more recent
        self._held = 0        # bytes of large blocks, live and cached
        self._large_cached = 0  # bytes of cached large blocks (the rest of stats.cached_bytes is small blocks)
        self._live_peak = 0   # the most bytes live at a large request (stats.peak_bytes is the user's to reset)

    @staticmethod
    def _aligned_empty(size, nbytes):
        """A fresh aligned block of `size` bytes for a request of `nbytes`; RuntimeError, as PyTorch's
        DefaultCPUAllocator raises, when the system cannot give that much memory."""
        try:
            raw = np.empty(size + ALIGNMENT, np.uint8)
        except (MemoryError, ValueError):  # NumPy: MemoryError, or ValueError for sizes past its maximum
            if nbytes >= 1 << 63:
                raise RuntimeError(f"Storage size calculation overflowed: {nbytes} bytes do not fit in a 64-bit "
                                   "byte count (make the tensor smaller)") from None
            raise RuntimeError(
                f"DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes "
                f"({nbytes / 2 ** 30:.1f} GiB; make the tensor smaller or free others)") from None
        start = -raw.ctypes.data % ALIGNMENT
        return raw[start:start + size]

    def allocate(self, nbytes):
        """A uint8 buffer of at least nbytes bytes, 64-byte aligned. Its contents are uninitialised."""
        stats = self.stats
        # size classes: multiples of 64 bytes up to 1 KiB, then powers of two up to 64 KiB
        if nbytes <= 1024:
            size = ((nbytes + ALIGNMENT - 1) & -ALIGNMENT) or ALIGNMENT
        elif nbytes <= _SMALL_LIMIT:
            size = 1 << (nbytes - 1).bit_length()
        else:
            size = 0
        if size:
            blocks = self._cache.get(size)
            if blocks:
                block = blocks.pop()
                stats.cached_bytes -= size
            else:
                block = self._aligned_empty(size, nbytes)
        else:
            block = self._allocate_large((nbytes + _LARGE_GRAIN - 1) & -_LARGE_GRAIN, nbytes,
                                         stats.allocated_bytes + nbytes)
        # counted once the block exists: a failed allocation leaves the statistics as they were
        stats.num_allocs += 1
        live = stats.allocated_bytes = stats.allocated_bytes + nbytes
        if live > stats.peak_bytes:
            stats.peak_bytes = live
        return block

    def _allocate_large(self, size, nbytes, live):
        peak = self._live_peak
        if live > peak:
            self._live_peak = live
        large = self._large
        if large:
            i = bisect_left(large, (size,))   # the smallest cached block of at least `size` bytes
            if i < len(large) and large[i][0] <= size * _LARGE_FIT:
                block = large.pop(i)[2]
                self.stats.cached_bytes -= len(block)
                self._large_cached -= len(block)
                return block
        self._held += size
        bound = max(_HELD_FLOOR, _HELD_SLACK * self._live_peak)
        while self._held > bound and large:
            self._release(min(range(len(large)), key=lambda k: large[k][1]))
        try:
            return self._aligned_empty(size, nbytes)
        except RuntimeError:
            self._held, self._live_peak = self._held - size, peak
            raise

    def _release(self, k):
        """Let go of the k-th cached large block (its memory goes back to the system)."""
        size = self._large.pop(k)[0]
        self._held -= size
        self._large_cached -= size
        self.stats.cached_bytes -= size

    def free(self, buf, nbytes):
        """Called when a Storage dies; the block is cached if nothing else references its memory."""
        stats = self.stats
        stats.num_frees += 1
        stats.allocated_bytes -= nbytes
        size = len(buf)
        # References when nothing else holds the block: the dying storage's slot, `buf`, getrefcount's argument
        # (3); every NumPy view of the block holds its raw array, so: buf.base and the argument (2).
        reusable = _refcount(buf) == 3 and _refcount(buf.base) == 2
        if size > _SMALL_LIMIT:
            if reusable:
                self._freed += 1
                insort(self._large, (size, self._freed, buf))
                stats.cached_bytes += size
                self._large_cached += size
            else:
                self._held -= size
        elif reusable and stats.cached_bytes - self._large_cached + size <= _CACHE_LIMIT:
            blocks = self._cache.get(size)
            if blocks is None:
                blocks = self._cache[size] = []
            blocks.append(buf)
            stats.cached_bytes += size

    def empty_cache(self):
        """Drop every cached block (memory goes back to the system)."""
        self._cache.clear()
        while self._large:
            self._release(-1)
        self.stats.cached_bytes = 0

    @staticmethod
    def address(buf):
        return buf.ctypes.data


class MetaAllocator:
    """The meta device has shapes and dtypes but no memory: buffers are None."""

    device_type = "meta"

    def __init__(self):
        self.stats = AllocatorStats()

    def allocate(self, nbytes):
        return None

    def free(self, buf, nbytes):
        pass

    @staticmethod
    def address(buf):
        return 0


cpu_allocator = CPUAllocator()
meta_allocator = MetaAllocator()
