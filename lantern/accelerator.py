"""torch.accelerator: the device-generic API over whichever accelerator a build has; with none (a CPU build, or
lantern) it reports none and every device question raises PyTorch's RuntimeError.

>>> lantern.accelerator.is_available(), lantern.accelerator.device_count(), lantern.accelerator.current_accelerator()
(False, 0, None)
>>> lantern.accelerator.synchronize()
Traceback (most recent call last):
RuntimeError: Cannot access accelerator device when none is available.
"""

__all__ = ["Graph", "current_accelerator", "current_device_idx", "current_device_index", "get_device_capability",
           "current_stream", "device_count", "device_index", "empty_cache", "empty_host_cache", "get_memory_info",
           "is_available", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize"]


def _no_accelerator():
    return RuntimeError("Cannot access accelerator device when none is available.")


def _needs_accelerator(name, doc):
    def fn(*args, **kwargs):
        raise _no_accelerator()
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{doc}\n\nWithout an accelerator: RuntimeError, as in PyTorch's CPU build."
    return fn


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


class Graph:
    """A captured accelerator graph."""

    def __init__(self, *args, **kwargs):
        raise _no_accelerator()


current_device_index = _needs_accelerator("current_device_index", "The index of the selected accelerator.")
current_device_idx = _needs_accelerator("current_device_idx", "Deprecated name of current_device_index.")
set_device_index = _needs_accelerator("set_device_index", "Select an accelerator by index.")
set_device_idx = _needs_accelerator("set_device_idx", "Deprecated name of set_device_index.")
get_device_capability = _needs_accelerator("get_device_capability", "The accelerator's capabilities.")
current_stream = _needs_accelerator("current_stream", "The selected stream of the accelerator.")
synchronize = _needs_accelerator("synchronize", "Wait for the accelerator's work to finish.")
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
