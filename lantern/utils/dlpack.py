"""lantern.utils.dlpack: tensors shared with other array libraries through DLPack, as torch.utils.dlpack.

from_dlpack takes any object with `__dlpack__` (a NumPy array, a lantern tensor) or a capsule from to_dlpack and
returns a tensor over the same memory; NumPy reads a lantern tensor with np.from_dlpack. Only CPU memory is shared
(lantern exports and imports through NumPy's DLPack support).

>>> import numpy as np
>>> array = np.arange(4.0)
>>> t = lantern.utils.dlpack.from_dlpack(array)
>>> t[0] = 10
>>> array
array([10.,  1.,  2.,  3.])
>>> back = np.from_dlpack(lantern.utils.dlpack.from_dlpack(lantern.utils.dlpack.to_dlpack(t)))
>>> back[1] = 20
>>> t
tensor([10., 20.,  2.,  3.], dtype=lantern.float64)
"""
import enum

import numpy as np

from .._construct import _wrap_ndarray

__all__ = ["DLDeviceType", "from_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor):
    """A DLPack capsule over `tensor`'s memory (the legacy interface: pass it to from_dlpack, once).

    The capsule is DLPack 1.0's versioned kind: the unversioned one has no read-only flag, so NumPy imports it
    read-only."""
    return tensor.detach().__dlpack__(max_version=(1, 0))


class _Capsule:
    """A bare capsule dressed in the __dlpack__ protocol, for NumPy's importer (which takes only such objects)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (DLDeviceType.kDLCPU, 0)


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor over the memory of `ext_tensor` (an object with __dlpack__, or a DLPack capsule); copy=True copies.

    device, when given, must be the CPU."""
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ != "PyCapsule":
            raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed "
                               "only once, so you might have already constructed a tensor from it once.")
        ext_tensor = _Capsule(ext_tensor)
    kind, _ = ext_tensor.__dlpack_device__()
    if kind != DLDeviceType.kDLCPU or (device is not None and str(device) != "cpu"):
        raise RuntimeError(f"lantern.utils.dlpack.from_dlpack: only CPU memory can be shared, got DLPack device "
                           f"{DLDeviceType(kind).name} (device={device})")
    try:
        array = np.from_dlpack(ext_tensor, copy=copy)
    except (BufferError, TypeError) as error:
        raise RuntimeError(f"Unsupported dtype in DLTensor. ({error})") from None
    return _wrap_ndarray(array)   # no read-only warning: DLPack memory is shared for writing, as in torch
