"""torch.xpu (Intel GPUs) as PyTorch's CPU build has it: present, unavailable, and raising the CPU build's errors
for whatever needs a device.

>>> lantern.xpu.is_available(), lantern.xpu.device_count(), lantern.xpu.memory_allocated()
(False, 0, 0)
>>> lantern.xpu.synchronize()
Traceback (most recent call last):
AssertionError: Torch not compiled with XPU enabled
"""
import ctypes

from .core.absent_device import StreamContext as _StreamContext, dummy_class_error as _dummy, needs as _needs
from .core.absent_device import unbound as _unbound
from .core.absent_device import (  # noqa: F401  (what torch.cuda and torch.xpu both answer)
    device_count, get_arch_list, get_gencode_flags, get_rng_state_all, is_available, is_bf16_supported,
    is_initialized, is_tf32_supported, manual_seed, manual_seed_all, seed, seed_all, set_rng_state,
    set_rng_state_all,
)
from .core.device import device as _device

default_generators = ()


def _absent(name, doc):
    return _needs("XPU", name, doc, __name__)


def empty_cache():
    """Release cached XPU memory: none is cached."""


def memory_stats(device=None):
    """The XPU allocator's statistics: empty, as XPU was never used."""
    return {}


def memory_stats_as_nested_dict(device=None):
    return {}


def memory_snapshot(mempool_id=None):
    return []


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


def set_stream(stream):
    """Make `stream` current; None is a no-op (no XPU stream can exist here)."""
    if stream is not None:
        raise _dummy("Stream")


class StreamContext(_StreamContext):
    backend = "XPU"


def stream(stream):
    return StreamContext(stream)


class device:
    """A context selecting XPU device `device`; entering it needs XPU."""

    def __init__(self, device):
        if isinstance(device, (str, _device)):
            device = _device(device).index if _device(device).index is not None else -1
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        raise NotImplementedError("PyTorch was compiled without XPU support")

    def __exit__(self, *exc):
        return False


class device_of(device):
    """device's context for the XPU a tensor is on."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_xpu else -1)


class Stream:
    def __new__(cls, *args, **kwargs):
        raise _dummy("Stream")


class Event:
    def __new__(cls, *args, **kwargs):
        raise _dummy("Event")


class XPUGraph:
    def __new__(cls, *args, **kwargs):
        raise _dummy("XPUGraph")


class MemPool:
    def __new__(cls, *args, **kwargs):
        raise _dummy("MemPool")


class graph:
    """A context capturing XPU work into `xpu_graph`; needs an XPU stream."""

    def __init__(self, xpu_graph, pool=None, stream=None, capture_error_mode="global"):
        raise _dummy("Stream")


class XPUPluggableAllocator:
    """An XPU allocator from a shared library's functions (the library is opened, as in torch)."""

    def __init__(self, path_to_lib_file, alloc_fn_name, free_fn_name):
        self._library = ctypes.CDLL(path_to_lib_file)
        raise AttributeError("module 'torch._C' has no attribute '_xpu_customAllocator' (this build has no XPU)")


def graph_pool_handle():
    raise _dummy("_xpu_graph_pool_handle")


def is_current_stream_capturing():
    raise _dummy("_xpu_isCurrentStreamCapturing")


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    raise _dummy("XPUGraph")


def _needs_pyzes(name):
    def fn(device=None):
        raise ImportError("pyzes is required; install it with 'pip install pyzes'.")
    fn.__name__ = name
    fn.__doc__ = f"XPU {name.replace('_', ' ')}, read through pyzes (Level Zero sysman)."
    return fn


clock_rate, device_memory_used, memory_usage, power_draw, temperature, utilization = (
    _needs_pyzes(n) for n in ("clock_rate", "device_memory_used", "memory_usage", "power_draw", "temperature",
                              "utilization"))

init = _absent("init", "Initialise XPU.")
synchronize = _absent("synchronize", "Wait for the XPU's work to finish.")
current_device = _absent("current_device", "The index of the selected XPU.")
set_device = _absent("set_device", "Select an XPU.")
current_stream = _absent("current_stream", "The selected stream of an XPU.")
get_device_name = _absent("get_device_name", "The name of an XPU.")
get_device_capability = _absent("get_device_capability", "An XPU's capabilities.")
get_device_properties = _absent("get_device_properties", "An XPU's properties.")
get_per_process_memory_fraction = _absent("get_per_process_memory_fraction", "This process's share of XPU memory.")
set_per_process_memory_fraction = _absent("set_per_process_memory_fraction", "Limit this process's XPU memory.")
get_rng_state = _absent("get_rng_state", "The XPU generator's state.")
initial_seed = _absent("initial_seed", "The seed the XPU generator started from.")
mem_get_info = _absent("mem_get_info", "(free, total) bytes of XPU memory.")
can_device_access_peer = _absent("can_device_access_peer", "Whether one XPU can reach another's memory.")
get_stream_from_external = _absent("get_stream_from_external", "A Stream over an externally made XPU queue.")
use_mem_pool = _absent("use_mem_pool", "A context routing allocations to a MemPool.")
change_current_allocator = _unbound("XPU", "change_current_allocator", "_xpu_changeCurrentAllocator",
                                    "Replace the XPU allocator.", __name__)
reset_accumulated_memory_stats = _unbound("XPU", "reset_accumulated_memory_stats", "_xpu_resetAccumulatedMemoryStats",
                                          "Reset the XPU allocator's accumulated statistics.", __name__)
reset_peak_memory_stats = _unbound("XPU", "reset_peak_memory_stats", "_xpu_resetPeakMemoryStats",
                                   "Reset the XPU allocator's peak statistics.", __name__)
