"""device: where a tensor's memory lives ('cpu', 'cuda:0', 'meta'), and the default device factories use.

lantern runs as PyTorch's CPU build does: every device type torch names is a valid `device`, but only 'cpu' and
'meta' hold tensors; asking for memory on another raises the error PyTorch's CPU build raises.

>>> lantern.device('cuda:1')
device(type='cuda', index=1)
>>> str(lantern.device('cpu'))
'cpu'
>>> with lantern.device('meta'):              # a device is also a context: factories inside default to it
...     lantern.zeros(2).device
device(type='meta')
"""
from .cuda_as_cpu import SWITCH as CUDA_AS_CPU
from .state import tls

# Every device type PyTorch's device parser knows, in the order its error message lists them.
KNOWN_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
               "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_privateuse1 = ["privateuseone", False]  # the PrivateUse1 device's name, and whether it was set
_on_rename = []                          # what to call with (old, new) when it is renamed


class device:
    """A device type plus an optional index; equal devices compare equal and hash alike.

    Used as a context manager it sets the default device of factory functions until the block ends."""

    __slots__ = ("type", "index")

    def __new__(cls, type_or_str=None, index=None, *, type=None):
        if type is not None:
            type_or_str = type
        if isinstance(type_or_str, device):
            return type_or_str
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type_or_str, str):
            raise TypeError("device() received an invalid combination of arguments - got "
                            f"({_type_name(type_or_str)})")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not {_type_name(index)}")
        kind = type_or_str
        if ":" in type_or_str:
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was passed explicitly: "
                                   f"{type_or_str}")
            kind, _, idx = type_or_str.partition(":")
            if not idx.isdigit() or (len(idx) > 1 and idx[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type_or_str}'")
            index = int(idx)
        if kind == "privateuseone" or kind == _privateuse1[0]:
            kind = _privateuse1[0]  # the PrivateUse1 device answers to its own name and to its new one
        elif kind not in KNOWN_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(KNOWN_TYPES)} device type at start of device string: "
                               f"{type_or_str}")
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        if kind == "cuda" and CUDA_AS_CPU.on:  # see lantern.core.cuda_as_cpu
            return CPU
        self = object.__new__(cls)
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "index", index)
        return self

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute '{name}' of 'torch.device' objects is not writable")

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        tls.outer_default_devices += (tls.default_device,)
        tls.default_device = self
        return self

    def __exit__(self, *exc):
        tls.default_device = tls.outer_default_devices[-1]
        tls.outer_default_devices = tls.outer_default_devices[:-1]


def _type_name(value):
    return type(value).__name__


CPU = device("cpu")
META = device("meta")


def privateuse1_name():
    """The name of the device from outside lantern (the PrivateUse1 key): 'privateuseone' until renamed."""
    return _privateuse1[0]


def on_privateuse1_rename(call):
    """Have call(old_name, new_name) run when the PrivateUse1 device is renamed (a registered device re-files)."""
    _on_rename.append(call)


def rename_privateuse1(name):
    """Give the PrivateUse1 device its name, once per process (again with the same name is allowed, as in torch)."""
    if _privateuse1[1]:
        if name != _privateuse1[0]:
            raise RuntimeError("torch.register_privateuse1_backend() has already been set! Current backend: "
                               f"{_privateuse1[0]}")
        return
    if name in KNOWN_TYPES and name != "privateuseone":
        raise RuntimeError(f"Cannot register privateuse1 backend with in-tree device name: {name}")
    old = _privateuse1[0]
    _privateuse1[:] = [name, True]
    for call in _on_rename:
        call(old, name)


def set_default_device(dev):
    """The device factory functions (zeros, arange, tensor, ...) use when given none; None means CPU again.

    >>> lantern.set_default_device('meta'); lantern.ones(2).device
    device(type='meta')
    >>> lantern.set_default_device(None); lantern.ones(2).device
    device(type='cpu')
    """
    tls.default_device = None if dev is None else device(dev)


def get_default_device():
    """The default device of factories (CPU unless set_default_device or `with device(...)` said otherwise).

    Like PyTorch's CPU build, a CUDA default without an index is reported only if a CUDA device can be resolved,
    which is never here: that raises the CUDA error."""
    dev = tls.default_device
    if dev is None:
        return CPU
    if dev.type in ("cuda", "xpu") and dev.index is None:
        raise device_unavailable_error(dev.type)
    return dev


def _cupy_status():
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'lantern[cuda]')"
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return "CuPy found no CUDA GPU"
    except Exception as e:  # CuPy raises its own runtime errors when there is no driver
        return f"CuPy could not reach a CUDA GPU ({e})"
    return "lantern's CUDA kernels are not implemented yet"


def not_compiled_error(name):
    """PyTorch's CPU-build error for a CUDA or XPU request: AssertionError 'Torch not compiled with CUDA enabled'."""
    return AssertionError(f"Torch not compiled with {name} enabled")


def device_unavailable_error(device_type):
    """The error PyTorch's CPU build raises when memory is asked for on `device_type` (anything but cpu/meta);
    for CUDA it also says why lantern has none."""
    if device_type == "cuda":
        return AssertionError(f"Torch not compiled with CUDA enabled (lantern: {_cupy_status()}; use device='cpu', "
                              "or 'meta' for shapes only)")
    if device_type in ("xpu", "mtia"):
        return not_compiled_error(device_type.upper())
    if device_type == "lazy":  # torch registers the lazy device but has no kernels for it
        return NotImplementedError("Could not run 'aten::empty.memory_format' with arguments from the 'Lazy' "
                                   "backend: lantern, like PyTorch's CPU build, has no lazy tensor kernels")
    return RuntimeError(f"PyTorch is not linked with support for {device_type} devices")
