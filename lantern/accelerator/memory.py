"""torch.accelerator.memory: the accelerator allocator's statistics and cache; without an accelerator, every
question raises PyTorch's RuntimeError.

>>> lantern.accelerator.memory.memory_allocated()
Traceback (most recent call last):
RuntimeError: Cannot access accelerator device when none is available.
"""
from ._unavailable import _needs_accelerator

__all__ = ["empty_cache", "empty_host_cache", "get_memory_info", "max_memory_allocated", "max_memory_reserved",
           "memory_allocated", "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats"]

empty_cache = _needs_accelerator("empty_cache", "Release the accelerator allocator's cached memory.")
empty_host_cache = _needs_accelerator("empty_host_cache", "Release cached pinned host memory.")
get_memory_info = _needs_accelerator("get_memory_info", "(free, total) bytes of accelerator memory.")
memory_stats = _needs_accelerator("memory_stats", "The accelerator allocator's statistics.")
memory_allocated = _needs_accelerator("memory_allocated", "Bytes held by live accelerator tensors.")
max_memory_allocated = _needs_accelerator("max_memory_allocated", "The peak of memory_allocated().")
memory_reserved = _needs_accelerator("memory_reserved", "Bytes the accelerator allocator holds.")
max_memory_reserved = _needs_accelerator("max_memory_reserved", "The peak of memory_reserved().")
reset_accumulated_memory_stats = _needs_accelerator("reset_accumulated_memory_stats",
                                                    "Reset the accelerator allocator's accumulated statistics.")
reset_peak_memory_stats = _needs_accelerator("reset_peak_memory_stats", "Reset the accelerator allocator's peaks.")
