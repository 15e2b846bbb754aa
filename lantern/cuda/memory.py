"""torch.cuda.memory: the CUDA caching allocator's statistics and controls, as PyTorch's CPU build has them.

The statistics read from the CUDA allocator once a backend registers one (lantern.core.storage's allocator table);
until then they are empty or zero, as in a CPU build where CUDA was never used, and the controls raise its errors.

>>> lantern.cuda.memory_allocated(), lantern.cuda.memory_stats()
(0, {})
"""
import ctypes
import warnings

from ..core.absent_device import dummy_class_error, needs, unbound, unbound_error
from ..core.storage import _ALLOCATORS
from ..inspect.memory import stats_of, summary_of

__all__ = ["caching_allocator_alloc", "caching_allocator_delete", "caching_allocator_disabled",
           "caching_allocator_enable", "get_per_process_memory_fraction", "set_per_process_memory_fraction",
           "empty_cache", "memory_stats", "memory_stats_as_nested_dict", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
           "host_memory_stats", "host_memory_stats_as_nested_dict", "reset_accumulated_host_memory_stats",
           "reset_peak_host_memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "memory_cached", "max_memory_cached", "memory_snapshot", "memory_summary",
           "list_gpu_processes", "mem_get_info", "get_allocator_backend", "CUDAPluggableAllocator",
           "change_current_allocator", "MemPool", "use_mem_pool"]


def _allocator():
    return _ALLOCATORS.get("cuda")


def memory_stats(device=None):
    """The CUDA allocator's statistics; empty, as in torch, while CUDA has not been used."""
    allocator = _allocator()
    if allocator is None:
        return {}
    return stats_of(allocator)


def memory_stats_as_nested_dict(device=None):
    """memory_stats() with its dotted keys nested ('allocated_bytes.all.current' -> [...]['all']['current'])."""
    nested = {}
    for key, value in memory_stats(device).items():
        *path, last = key.split(".")
        level = nested
        for part in path:
            level = level.setdefault(part, {})
        level[last] = value
    return nested


def memory_allocated(device=None):
    """Bytes held by live CUDA tensors (0 while CUDA has not been used, as in torch)."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since the start or reset_peak_memory_stats()."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    """Bytes the CUDA allocator holds, cached free blocks included."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    """The peak of memory_reserved()."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def memory_cached(device=None):
    """Deprecated name of memory_reserved()."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`", FutureWarning,
                  stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated name of max_memory_reserved()."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to `torch.cuda.max_memory_reserved`",
                  FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def memory_summary(device=None, abbreviated=False):
    """The CUDA allocator's statistics as torch.cuda.memory_summary's table. Without an allocator the statistics
    are empty and, as in PyTorch's CPU build, reading the first counter raises KeyError."""
    allocator = _allocator()
    if allocator is None:
        raise KeyError("allocated_bytes.all.current")
    return summary_of(allocator, "cuda")


def _reset_peak():
    allocator = _allocator()
    if allocator is None:
        raise unbound_error("CUDA", "_cuda_resetPeakMemoryStats", "Reset the CUDA allocator's peak statistics.")
    allocator.stats.peak_bytes = allocator.stats.allocated_bytes


def reset_peak_memory_stats(device=None):
    """Start the CUDA peak over from the bytes allocated now (AttributeError without CUDA, as in torch)."""
    _reset_peak()


def reset_max_memory_allocated(device=None):
    """Deprecated: resets every peak statistic (reset_peak_memory_stats)."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, which resets "
                  "/all/ peak memory stats.", FutureWarning, stacklevel=2)
    _reset_peak()


def reset_max_memory_cached(device=None):
    """Deprecated: resets every peak statistic (reset_peak_memory_stats)."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls torch.cuda.reset_peak_memory_stats, which resets "
                  "/all/ peak memory stats.", FutureWarning, stacklevel=2)
    _reset_peak()


def empty_cache():
    """Release the CUDA allocator's cached free blocks; nothing to do where CUDA was never initialised."""


def host_memory_stats():
    """The pinned host memory allocator's statistics: empty, since a CPU build pins no memory."""
    return {}


def host_memory_stats_as_nested_dict():
    """host_memory_stats() nested by key parts: empty here."""
    return {}


def list_gpu_processes(device=None):
    """A description of the processes using the GPU; PyTorch answers with this line when pynvml is missing."""
    return "pynvml module not found, please install nvidia-ml-py"


def caching_allocator_enable(value=True):
    """Turn the CUDA caching allocator on or off; a no-op until CUDA is initialised, as in torch."""


class caching_allocator_disabled:
    """A context with the caching allocator off; entering it asks the allocator, which a CPU build lacks."""

    def __enter__(self):
        raise unbound_error("CUDA", "_cuda_cudaCachingAllocator_is_enabled", "Query the CUDA caching allocator.")

    def __exit__(self, *exc):
        return False


caching_allocator_alloc = needs("CUDA", "caching_allocator_alloc", "Allocate memory from the caching allocator.",
                                __name__)
caching_allocator_delete = unbound("CUDA", "caching_allocator_delete", "_cuda_cudaCachingAllocator_raw_delete",
                                   "Free memory allocated by caching_allocator_alloc.", __name__)
get_per_process_memory_fraction = needs("CUDA", "get_per_process_memory_fraction",
                                        "The fraction of GPU memory this process may allocate.", __name__)
set_per_process_memory_fraction = needs("CUDA", "set_per_process_memory_fraction",
                                        "Limit this process's share of GPU memory.", __name__)
mem_get_info = needs("CUDA", "mem_get_info", "(free, total) bytes of GPU memory.", __name__)
use_mem_pool = needs("CUDA", "use_mem_pool", "A context routing allocations to a MemPool.", __name__)
reset_accumulated_memory_stats = unbound("CUDA", "reset_accumulated_memory_stats",
                                         "_cuda_resetAccumulatedMemoryStats",
                                         "Reset the CUDA allocator's accumulated statistics.", __name__)
reset_accumulated_host_memory_stats = unbound("CUDA", "reset_accumulated_host_memory_stats",
                                              "_cuda_resetAccumulatedHostMemoryStats",
                                              "Reset the pinned allocator's accumulated statistics.", __name__)
reset_peak_host_memory_stats = unbound("CUDA", "reset_peak_host_memory_stats", "_cuda_resetPeakHostMemoryStats",
                                       "Reset the pinned allocator's peak statistics.", __name__)
memory_snapshot = unbound("CUDA", "memory_snapshot", "_cuda_memorySnapshot",
                          "Snapshot the CUDA allocator's segments.", __name__)
get_allocator_backend = unbound("CUDA", "get_allocator_backend", "_cuda_getAllocatorBackend",
                                "Name the CUDA allocator's backend.", __name__)
change_current_allocator = unbound("CUDA", "change_current_allocator", "_cuda_changeCurrentAllocator",
                                   "Replace the CUDA allocator.", __name__)


class CUDAPluggableAllocator:
    """A CUDA allocator loaded from a shared library's alloc/free functions (the library is opened, as in torch)."""

    def __init__(self, path_to_so_file, alloc_fn_name, free_fn_name):
        self._library = ctypes.CDLL(path_to_so_file)
        raise unbound_error("CUDA", "_cuda_customAllocator", "Install a pluggable CUDA allocator.")


class MemPool:
    """A private pool of CUDA memory; its C base is a placeholder in a CPU build."""

    def __init__(self, *args, **kwargs):
        raise dummy_class_error("MemPool")
