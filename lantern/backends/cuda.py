"""The CUDA device: registered by name so that asking for it without CuPy or a GPU fails clearly.

The CuPy kernels themselves come with a later issue; until then every CUDA request raises `lantern.core.device.cuda_unavailable_error()`.

>>> lantern.cuda.is_available()
False
"""


def is_available():
    return False


def device_count():
    return 0


# ---- memory statistics (torch.cuda's names): read from the CUDA allocator once a backend registers one ----------

def _allocator():
    from ..core.storage import _ALLOCATORS
    return _ALLOCATORS.get("cuda")


def memory_stats(device=None):
    """The CUDA allocator's statistics; empty, as in torch, while CUDA has not been used."""
    allocator = _allocator()
    if allocator is None:
        return {}
    from ..inspect.memory import stats_of
    return stats_of(allocator)


def memory_allocated(device=None):
    """Bytes held by live CUDA tensors (0 while CUDA has not been used, as in torch)."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since the start or reset_peak_memory_stats()."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    """Bytes the CUDA allocator holds, cached free blocks included."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def memory_summary(device=None, abbreviated=False):
    """The CUDA allocator's statistics as torch.cuda.memory_summary's table; raises without CUDA."""
    allocator = _allocator()
    if allocator is None:
        from ..core.device import cuda_unavailable_error
        raise cuda_unavailable_error()
    from ..inspect.memory import summary_of
    return summary_of(allocator, "cuda")


def reset_peak_memory_stats(device=None):
    """Start the CUDA peak over from the bytes allocated now; raises without CUDA."""
    allocator = _allocator()
    if allocator is None:
        from ..core.device import cuda_unavailable_error
        raise cuda_unavailable_error()
    allocator.stats.peak_bytes = allocator.stats.allocated_bytes
