"""Autocast's settings as PyTorch exposes them at `torch.*`: enabled and dtype per device type, the weight-cast
cache, the nesting count, and the older per-device spellings (`torch.is_autocast_cpu_enabled()`, ...).

The settings live per thread in lantern.ops.autocast.state; turning CPU autocast on there turns on the Autocast
dispatch key. Only CPU regions change what lantern computes (a CPU build has no other device); the others keep
their settings as PyTorch's CPU build does.

>>> is_autocast_enabled("cpu"), get_autocast_dtype("cpu"), get_autocast_dtype("cuda")
(False, lantern.bfloat16, lantern.float16)
"""

from ..core.device import device as _device, privateuse1_name
from ..core.dtype import dtype as _dtype_class
from ..ops import autocast as _autocast
from ..core import user_warnings

__all__ = [
    "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
    "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
    "autocast_increment_nesting", "autocast_decrement_nesting",
]


def is_autocast_available(device_type):
    """Whether autocast knows the device type `device_type` (cpu, cuda, mps, xpu, ...)."""
    return _autocast_type(device_type) in _autocast.DEFAULT_DTYPES


def _autocast_type(device_type):
    """The device type autocast files settings under: the PrivateUse1 device's is 'privateuseone', renamed or not."""
    kind = _device(device_type).type
    return "privateuseone" if kind == privateuse1_name() else kind


def _device_type(device_type, unknown_message):
    kind = _autocast_type(device_type)
    if kind not in _autocast.DEFAULT_DTYPES:
        raise RuntimeError(unknown_message)
    return kind


_NO_KEY = "unknown device type for autocast in get_autocast_dispatch_key_from_device_type"


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for `device_type` in this thread (no argument: CUDA, as in PyTorch)."""
    return _autocast.state.enabled[_device_type("cuda" if device_type is None else device_type, _NO_KEY)]


def set_autocast_enabled(device_type, enabled=None):
    """set_autocast_enabled(device_type, enabled), or set_autocast_enabled(enabled) for CUDA."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
                        f"{type(enabled).__name__}")
    _autocast.set_enabled(_device_type(device_type, _NO_KEY), enabled)


def get_autocast_dtype(device_type):
    """The dtype an autocast region on `device_type` casts to (bfloat16 on the CPU unless set)."""
    return _autocast.state.dtypes[_device_type(device_type, "unsupported scalarType")]


def set_autocast_dtype(device_type, dtype):
    if not isinstance(dtype, _dtype_class):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    _autocast.set_dtype(_device_type(device_type, "unsupported scalarType"), dtype)


def is_autocast_cache_enabled():
    return _autocast.state.cache_enabled


def set_autocast_cache_enabled(enabled):
    _autocast.state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Drop the cached lower-precision copies of weights (the outermost autocast region does this as it ends)."""
    _autocast.state.cache.clear()


def autocast_increment_nesting():
    _autocast.state.nesting += 1
    return _autocast.state.nesting


def autocast_decrement_nesting():
    _autocast.state.nesting -= 1
    return _autocast.state.nesting


def _legacy(device_type, old_name):
    """The older, deprecated spellings for one device: is/set_autocast_<old_name>_enabled and
    get/set_autocast_<old_name>_dtype, each warning as PyTorch's do."""
    def warn(old, new):
        user_warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)

    def is_enabled():
        warn(f"is_autocast_{old_name}_enabled()", f"is_autocast_enabled('{device_type}')")
        return is_autocast_enabled(device_type)

    def set_enabled(enabled):
        warn(f"set_autocast_{old_name}_enabled(enabled)", f"set_autocast_enabled('{device_type}', enabled)")
        set_autocast_enabled(device_type, enabled)

    def get_dtype():
        warn(f"get_autocast_{old_name}_dtype()", f"get_autocast_dtype('{device_type}')")
        return get_autocast_dtype(device_type)

    def set_dtype(dtype):
        warn(f"set_autocast_{old_name}_dtype(dtype)", f"set_autocast_dtype('{device_type}', dtype)")
        set_autocast_dtype(device_type, dtype)
    return is_enabled, set_enabled, get_dtype, set_dtype


is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype = \
    _legacy("cpu", "cpu")
_, _, get_autocast_gpu_dtype, set_autocast_gpu_dtype = _legacy("cuda", "gpu")
is_autocast_ipu_enabled, set_autocast_ipu_enabled, get_autocast_ipu_dtype, set_autocast_ipu_dtype = \
    _legacy("ipu", "ipu")
is_autocast_xla_enabled, set_autocast_xla_enabled, get_autocast_xla_dtype, set_autocast_xla_dtype = \
    _legacy("xla", "xla")
__all__ += [f"{verb}_autocast_{dev}_{what}" for dev in ("cpu", "ipu", "xla") for verb, what in
            (("is", "enabled"), ("set", "enabled"), ("get", "dtype"), ("set", "dtype"))]
__all__ += ["get_autocast_gpu_dtype", "set_autocast_gpu_dtype"]
