"""Small helpers of torch's top-level namespace: typename, is_storage, get_device_module, thread_safe_generator,
and the constants torch re-exports (e, pi, inf, nan, newaxis) with its build flags (has_lapack, ...).

>>> import lantern as torch
>>> torch.typename(torch.ones(2)), torch.typename(3), torch.get_device_module("cpu").__name__
('torch.FloatTensor', 'int', 'lantern.cpu')
"""
import importlib
import math

from threadpoolctl import threadpool_info

from . import accelerator
from .core.device import device as _device
from .core.storage import UntypedStorage
from .core.tensor_impl import TensorImpl
from .storage import TypedStorage

e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None

# What lantern is built on, in torch's terms: LAPACK (through NumPy and SciPy) and FFTs (numpy.fft / scipy.fft) are
# there; MKL only if the BLAS NumPy loaded is MKL; OpenMP never (NumPy's kernels run on the calling thread).
has_lapack = True
has_spectral = True
has_mkl = any(lib.get("internal_api") == "mkl" for lib in threadpool_info())
has_openmp = False

__all__ = ["e", "pi", "inf", "nan", "newaxis", "has_lapack", "has_spectral", "has_mkl", "has_openmp", "typename",
           "is_storage", "get_device_module", "thread_safe_generator", "is_vulkan_available"]


def typename(obj):
    """The type's dotted name: a tensor's legacy type ('torch.FloatTensor'), else module and qualified name."""
    if isinstance(obj, TensorImpl):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module, qualname = type(obj).__module__ or "", type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_storage(obj):
    """Whether obj is a storage (what tensor.untyped_storage() and tensor.storage() give)."""
    return isinstance(obj, (UntypedStorage, TypedStorage))


def get_device_module(device=None):
    """The module of a device type: lantern.cuda for "cuda" or "cuda:1", lantern.cpu for None on a machine without
    an accelerator."""
    if device is None:
        found = accelerator.current_accelerator()
        kind = found.type if found is not None else "cpu"
    elif isinstance(device, (str, _device)):
        kind = _device(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    try:
        return importlib.import_module(f"lantern.{kind}")
    except ImportError:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'.") \
            from None


def thread_safe_generator():
    """The generator of the DataLoader thread worker calling it, else None (the global generator). lantern's
    DataLoader runs its workers as processes, so this is always None."""
    return None


def is_vulkan_available():
    """False: lantern has no Vulkan backend (neither has torch's CPU build)."""
    return False
