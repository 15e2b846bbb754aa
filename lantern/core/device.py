"""device: where a tensor's memory lives ('cpu', 'cuda:0', 'meta').

>>> lantern.device('cuda:1')
device(type='cuda', index=1)
>>> str(lantern.device('cpu'))
'cpu'
"""

KNOWN_TYPES = ("cpu", "cuda", "meta")


class device:
    """A device type plus an optional index; equal devices compare equal and hash alike."""

    __slots__ = ("type", "index")

    def __new__(cls, type_or_str, index=None):
        if isinstance(type_or_str, device):
            return type_or_str
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            type_or_str, index = "cuda", type_or_str
        if not isinstance(type_or_str, str):
            raise TypeError("device() received an invalid combination of arguments - got "
                            f"({type(type_or_str).__name__})")
        kind = type_or_str
        if ":" in type_or_str:
            if index is not None:
                raise ValueError("type (string) must not include an index because index was passed explicitly: "
                                 f"{type_or_str}")
            kind, _, idx = type_or_str.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type_or_str}'")
            index = int(idx)
        if kind not in KNOWN_TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type_or_str}")
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self = object.__new__(cls)
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "index", index)
        return self

    def __setattr__(self, name, value):
        raise AttributeError("device objects are immutable")

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


CPU = device("cpu")
META = device("meta")


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


def cuda_unavailable_error():
    """The error for any CUDA request when lantern cannot run CUDA kernels, saying why."""
    return RuntimeError(f"lantern was asked for a CUDA tensor, but CUDA is not available: {_cupy_status()}. "
                        "Use device='cpu' (or 'meta' for shapes only).")
