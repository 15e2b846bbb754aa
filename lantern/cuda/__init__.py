"""torch.cuda as PyTorch's CPU build has it: every name is there, nothing needs a GPU to be imported or asked
whether it is there, and what would need one raises the CPU build's error.

lantern runs on NumPy; its CUDA backend (CuPy kernels) is future work, so `is_available()` is False, seeding is
accepted and does nothing, memory queries answer zero, and `.cuda()` / `device='cuda'` raise
AssertionError('Torch not compiled with CUDA enabled'), as PyTorch's CPU build does. Programs written as
`device = 'cuda' if torch.cuda.is_available() else 'cpu'` run unchanged.

>>> lantern.cuda.is_available(), lantern.cuda.device_count(), lantern.cuda.is_bf16_supported()
(False, 0, False)
>>> lantern.cuda.current_device()
Traceback (most recent call last):
AssertionError: Torch not compiled with CUDA enabled
"""
import importlib

from .._legacy_types import make_types as _make_types
from ..core.absent_device import needs as _needs, needs_nvml as _needs_nvml, unbound as _unbound
from ..core.absent_device import StreamContext as _StreamContext, unbound_error as _unbound_error
from ..core import cuda_as_cpu as _cuda_as_cpu
from ..core.absent_device import (  # noqa: F401  (what torch.cuda and torch.xpu both answer)
    device_count, get_arch_list, get_gencode_flags, is_available, is_bf16_supported, is_initialized,
    is_tf32_supported,
)
from ..core.device import device as _device, not_compiled_error as _not_compiled_error
from . import graphs, memory, nvtx, profiler, random, streams  # noqa: F401
from .graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing, make_graphed_callables  # noqa
from .memory import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .streams import Event, ExternalStream, Stream  # noqa: F401

globals().update(_make_types("cuda", __name__))  # lantern.cuda.FloatTensor & co.: refuse to be built here

has_half = True
has_magma = False
default_generators = ()


def set_stream(stream):
    """Make `stream` current; a no-op for None, as in torch (no CUDA stream can exist here)."""
    if stream is not None:
        raise _not_compiled_error("CUDA")


class StreamContext(_StreamContext):
    backend = "CUDA"


def stream(stream):
    """`with lantern.cuda.stream(s):` runs its block on stream `s` (None: the current one)."""
    return StreamContext(stream)


class device:
    """A context that selects CUDA device `device` for its block. Selecting index -1 does nothing; any real
    device cannot be selected in a CPU build (in cuda-as-cpu mode it is the CPU, and selecting it does nothing)."""

    def __init__(self, device):
        if isinstance(device, (str, _device)) and _cuda_as_cpu.enabled():
            device = _cuda_as_cpu.cuda_index(device, optional=True)
        elif isinstance(device, (str, _device)):
            dev = _device(device)
            if dev.type != "cuda":
                raise ValueError(f"Expected a cuda device, but got: {dev}")
            device = -1 if dev.index is None else dev.index
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx < 0:
            return None
        if _cuda_as_cpu.enabled():  # the device is the CPU: selecting it changes nothing
            return None
        raise RuntimeError("PyTorch was compiled without CUDA support")

    def __exit__(self, *exc):
        return False


class device_of(device):
    """device's context for the device a tensor is on (no change for a CPU tensor)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


class cudaStatus:
    """cudaError_t codes PyTorch names."""

    SUCCESS = 0
    ERROR_NOT_READY = 34


class CudaError(RuntimeError):
    """An error returned by the CUDA runtime, described by the runtime from its code (so, as in PyTorch's CPU build,
    it cannot be made without one)."""

    def __init__(self, code):
        raise _unbound_error("CUDA", "cudart", "Describe a CUDA error code.")


class DeferredCudaCallError(Exception):
    """Raised when a call PyTorch queued until CUDA initialisation fails."""


class OutOfMemoryError(RuntimeError):
    """A device allocator ran out of memory."""


def check_error(res):
    """Raise CudaError if `res`, a CUDA runtime return code, is not success: that asks the CUDA runtime."""
    raise _unbound_error("CUDA", "cudart", "Check a CUDA runtime return code.")


# What needs a CUDA device: AssertionError('Torch not compiled with CUDA enabled'), as in the CPU build.
init = _needs("CUDA", "init", "Initialise CUDA.", __name__)
_synchronize = _needs("CUDA", "synchronize", "Wait for all work on a CUDA device to finish.", __name__)
_current_device = _needs("CUDA", "current_device", "The index of the selected CUDA device.", __name__)
get_device_name = _needs("CUDA", "get_device_name", "The name of a CUDA device.", __name__)
get_device_capability = _needs("CUDA", "get_device_capability", "A CUDA device's (major, minor) compute "
                               "capability.", __name__)
get_device_properties = _needs("CUDA", "get_device_properties", "A CUDA device's properties.", __name__)
current_stream = _needs("CUDA", "current_stream", "The selected stream of a CUDA device.", __name__)
default_stream = _needs("CUDA", "default_stream", "The default stream of a CUDA device.", __name__)
get_stream_from_external = _needs("CUDA", "get_stream_from_external", "A Stream over an externally made CUDA "
                                  "stream.", __name__)
cudart = _needs("CUDA", "cudart", "The CUDA runtime library module.", __name__)
current_blas_handle = _needs("CUDA", "current_blas_handle", "The current cuBLAS handle.", __name__)
current_solver_handle = _needs("CUDA", "current_solver_handle", "The current cuSOLVER handle.", __name__)
ipc_collect = _needs("CUDA", "ipc_collect", "Free CUDA memory shared with exited processes.", __name__)
can_device_access_peer = _needs("CUDA", "can_device_access_peer", "Whether one CUDA device can reach another's "
                                "memory.", __name__)
get_sync_debug_mode = _needs("CUDA", "get_sync_debug_mode", "The CUDA synchronisation debug mode.", __name__)
set_sync_debug_mode = _needs("CUDA", "set_sync_debug_mode", "Set the CUDA synchronisation debug mode.", __name__)

# Where the CPU build lacks the C binding: AttributeError.
_set_device = _unbound("CUDA", "set_device", "_cuda_setDevice", "Select a CUDA device.", __name__)


# Selecting and waiting for a device: what the CPU build raises, unless CUDA devices mean the CPU
# (lantern.core.cuda_as_cpu), where they select "a GPU" that is the CPU.
def set_device(device):
    """Select CUDA device `device` (an index, 'cuda:1', a device). PyTorch's CPU build lacks the binding
    (AttributeError); in cuda-as-cpu mode the index is remembered and current_device() answers it."""
    index = _cuda_as_cpu.cuda_index(device)
    if index < 0:  # torch: a negative index selects nothing
        return
    if not _cuda_as_cpu.enabled():
        _set_device(device)
    _cuda_as_cpu.select(index)


def current_device():
    """The index of the selected CUDA device. PyTorch's CPU build: AssertionError('Torch not compiled with CUDA
    enabled'); in cuda-as-cpu mode, the index set_device selected (0 at first)."""
    if not _cuda_as_cpu.enabled():
        _current_device()
    return _cuda_as_cpu.SWITCH.selected_index


def synchronize(device=None):
    """Wait for all work on a CUDA device to finish. PyTorch's CPU build: AssertionError('Torch not compiled with
    CUDA enabled'); in cuda-as-cpu mode there is nothing to wait for (CPU work is done when its call returns)."""
    if not _cuda_as_cpu.enabled():
        _synchronize(device)

# GPU sensors, read through nvidia-ml-py.
device_memory_used = _needs_nvml("device_memory_used", "GPU memory in use, by the driver's count.", __name__)
memory_usage = _needs_nvml("memory_usage", "Percent of time GPU memory was read or written.", __name__)
utilization = _needs_nvml("utilization", "Percent of time a kernel ran on the GPU.", __name__)
temperature = _needs_nvml("temperature", "The GPU's temperature.", __name__)
power_draw = _needs_nvml("power_draw", "The GPU's power draw.", __name__)
clock_rate = _needs_nvml("clock_rate", "The GPU's SM clock.", __name__)


def __getattr__(name):
    if name == "amp":  # imported on first use: lantern.amp needs all of lantern, which imports this module first
        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module 'lantern.cuda' has no attribute '{name}'")
