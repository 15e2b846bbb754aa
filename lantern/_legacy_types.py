"""The legacy tensor types: `lantern.FloatTensor`, `LongTensor`, ... and their `lantern.cuda` twins.

Before dtypes, PyTorch named a tensor's element type and device by a class; programs still write
`torch.LongTensor(ndarray)`, `isinstance(t, torch.FloatTensor)` and `t.type() == 'torch.FloatTensor'`. Each such
class is a `tensortype`: calling it builds a tensor of its dtype on the CPU (the rules of `lantern.Tensor(...)`),
and isinstance asks "a tensor of this dtype on this device?". Tensors stay plain `lantern.Tensor`s.

>>> lantern.FloatTensor(2, 3).shape, lantern.LongTensor([1.7, 2]).tolist()
(lantern.Size([2, 3]), [1, 2])
>>> isinstance(lantern.ones(2), lantern.FloatTensor), isinstance(lantern.ones(2), lantern.DoubleTensor)
(True, False)
>>> lantern.ones(2).type(), lantern.ones(2).type(lantern.ByteTensor).type()
('torch.FloatTensor', 'torch.ByteTensor')
"""

from ._construct import legacy_new
from .core import dtype as dt
from .core.layout import strided
from .core.quantized_dtypes import QuantizedDtype
from .core.tensor_impl import TensorImpl
from .core import user_warnings

# The dtypes PyTorch has a legacy tensor type for (no complex ones).
LEGACY_DTYPES = (dt.bfloat16, dt.bool, dt.uint8, dt.int8, dt.float64, dt.float32, dt.float16, dt.int32, dt.int64,
                 dt.int16)


class tensortype(type):
    """The metaclass of the legacy types: its classes know a dtype and a device type."""

    dtype = None
    layout = strided
    is_sparse = False

    @property
    def is_cuda(cls):
        return cls.device_type == "cuda"

    def __instancecheck__(cls, obj):
        return isinstance(obj, TensorImpl) and obj.dtype is cls.dtype and obj.device.type == cls.device_type

    def __call__(cls, *args, **kwargs):
        if cls.device_type != "cpu":
            raise TypeError(f"type {type_string(cls.dtype, cls.device_type)} not available. Torch not compiled with "
                            f"{cls.device_type.upper()} enabled.")
        return legacy_new(cls.dtype, args, kwargs)

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def type_string(dtype, device_type="cpu"):
    """The legacy type name of a dtype on a device: 'torch.FloatTensor', 'torch.cuda.LongTensor',
    'torch.quantized.QUInt8Tensor'."""
    if isinstance(dtype, QuantizedDtype):
        return f"torch.quantized.{dtype.legacy}Tensor"
    prefix = "torch." if device_type == "cpu" else f"torch.{device_type}."
    return f"{prefix}{dtype.legacy}Tensor"


def make_types(device_type, module):
    """{'FloatTensor': class, ...} for one device type, the classes' __module__ being `module`."""
    return {f"{d.legacy}Tensor": tensortype(f"{d.legacy}Tensor", (),
                                            {"dtype": d, "device_type": device_type, "__module__": module})
            for d in LEGACY_DTYPES}


CPU_TYPES = make_types("cpu", "lantern")


def resolve_type(spec):
    """(dtype, device type) named by a dtype, a legacy class or a legacy name ('torch.cuda.FloatTensor');
    ValueError for anything else, as Tensor.type() raises."""
    if isinstance(spec, dt.dtype):
        return spec, None
    if isinstance(spec, tensortype):
        return spec.dtype, spec.device_type
    if isinstance(spec, str):
        head, _, name = spec.rpartition(".")
        device_type = "cpu" if head == "torch" else head.partition(".")[2]
        if head.startswith("torch") and device_type and name.endswith("Tensor"):
            for d in dt.ALL:
                if f"{d.legacy}Tensor" == name:
                    return d, device_type
    raise ValueError(f"invalid type: '{spec if isinstance(spec, str) else type(spec).__name__}'")


def convert_type(tensor, spec):
    """Tensor.type(spec): `tensor` as the dtype (and device) that `spec` names."""
    dtype, device_type = resolve_type(spec)
    if device_type not in (None, "cpu", tensor.device.type):  # PyTorch's CPU build fails loading its CUDA library
        raise RuntimeError(f"Cannot initialize {device_type.upper()} without ATen_{device_type} library: Torch not "
                           f"compiled with {device_type.upper()} enabled")
    return tensor.to(dtype)


def set_default_tensor_type(t):
    """Deprecated spelling of set_default_dtype: 'torch.DoubleTensor' (or the class) makes float64 the default."""
    user_warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    if isinstance(t, dt.dtype):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    try:
        dtype, device_type = resolve_type(t)
    except ValueError:
        raise TypeError(f"invalid type object: {t!r}") from None
    if device_type != "cpu":
        raise TypeError(f"type {type_string(dtype, device_type)} not available. Torch not compiled with "
                        f"{device_type.upper()} enabled.")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dt.set_default_dtype(dtype)
