"""torch.accelerator: the device-generic API over whichever accelerator a build has; with none (a CPU build, or
lantern) it reports none and every device question raises PyTorch's RuntimeError.

>>> lantern.accelerator.is_available(), lantern.accelerator.device_count(), lantern.accelerator.current_accelerator()
(False, 0, None)
>>> lantern.accelerator.synchronize()
Traceback (most recent call last):
RuntimeError: Cannot access accelerator device when none is available.
"""

from ._unavailable import _needs_accelerator, _no_accelerator
from .graphs import Graph
from .memory import (empty_cache, empty_host_cache, get_memory_info, max_memory_allocated, max_memory_reserved,
                     memory_allocated, memory_reserved, memory_stats, reset_accumulated_memory_stats,
                     reset_peak_memory_stats)

__all__ = ["Graph", "current_accelerator", "current_device_idx", "current_device_index", "get_device_capability",
           "current_stream", "device_count", "device_index", "empty_cache", "empty_host_cache", "get_memory_info",
           "is_available", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize"]


def is_available():
    return False


def device_count():
    return 0


def current_accelerator(check_available=False):
    """The accelerator's device type (device('cuda'), ...): None, there is none."""
    return None


def set_stream(stream):
    """Make `stream` current on its accelerator."""
    raise TypeError(f"set_stream(): expected a torch.Stream, got {type(stream).__name__} (and this build has no "
                    "accelerator)")


class device_index:
    """A context selecting accelerator `device`; None selects nothing and works anywhere."""

    def __init__(self, device):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            raise _no_accelerator()
        return None

    def __exit__(self, *exc):
        return False


current_device_index = _needs_accelerator("current_device_index", "The index of the selected accelerator.")
current_device_idx = _needs_accelerator("current_device_idx", "Deprecated name of current_device_index.")
set_device_index = _needs_accelerator("set_device_index", "Select an accelerator by index.")
set_device_idx = _needs_accelerator("set_device_idx", "Deprecated name of set_device_index.")
get_device_capability = _needs_accelerator("get_device_capability", "The accelerator's capabilities.")
current_stream = _needs_accelerator("current_stream", "The selected stream of the accelerator.")
synchronize = _needs_accelerator("synchronize", "Wait for the accelerator's work to finish.")
