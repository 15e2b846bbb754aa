"""Quantized dtypes and quantization schemes: an element is a small integer q that stands for (q - zero_point) * scale.

quint8, qint8 and qint32 keep one integer per element (uint8, int8, int32); quint4x2 and quint2x4 pack two 4-bit or
four 2-bit unsigned integers into each byte, lowest bits first. A quantized dtype is a lantern.dtype (itemsize,
is_floating_point and repr work as for any other), but kept out of dtype.ALL: no op promotes or casts to it.
How a tensor's integers map to real values is its quantizer's business (lantern.backends.quantized), named by a
`qscheme`: per_tensor_affine (one scale and zero point), per_channel_affine (one pair per slice along an axis), ...

>>> import lantern
>>> lantern.quint8, lantern.quint8.itemsize, lantern.quint8.is_floating_point, lantern.quint4x2.bits
(lantern.quint8, 1, False, 4)
>>> lantern.per_tensor_affine, lantern.qint8.qmin, lantern.qint8.qmax
(lantern.per_tensor_affine, -128, 127)
"""
from . import dtype as dt
from .shown_name import qualified


class QuantizedDtype(dt.dtype):
    """A quantized element type: `int_dtype` holds its integers (uint8 for the packed types), `bits` per element,
    and the integer range [qmin, qmax]."""

    __slots__ = ("int_dtype", "bits", "qmin", "qmax")

    def __init__(self, name, int_dtype, bits, legacy):
        signed = int_dtype.is_signed
        fields = {"name": name, "np": int_dtype.np, "itemsize": int_dtype.itemsize, "category": dt.INTEGRAL,
                  "legacy": legacy, "is_floating_point": False, "is_complex": False, "int_dtype": int_dtype,
                  "bits": bits, "qmin": -(1 << (bits - 1)) if signed else 0,
                  "qmax": (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1}
        for field, value in fields.items():
            # dtype's slot descriptors, called directly: dtype.__setattr__ refuses writes, and `is_signed` is a
            # property here
            _slot(field).__set__(self, value)

    @property
    def is_signed(self):
        raise RuntimeError("isSignedType not supported for quantized types")

    @property
    def elements_per_byte(self):
        """2 for quint4x2, 4 for quint2x4, 1 for the others."""
        return max(1, 8 // self.bits)

    def storage_bytes(self, numel):
        """Bytes that hold `numel` elements: packed types round up to whole bytes."""
        per = self.elements_per_byte
        return (numel + per - 1) // per * self.itemsize if per > 1 else numel * self.itemsize

    def __reduce__(self):
        return self.name  # pickled as the module global of that name


def _slot(field):
    """The slot descriptor that stores `field` (QuantizedDtype's own, or dtype's)."""
    return (QuantizedDtype if field in QuantizedDtype.__slots__ else dt.dtype).__dict__[field]


quint8 = QuantizedDtype("quint8", dt.uint8, 8, "QUInt8")
qint8 = QuantizedDtype("qint8", dt.int8, 8, "QInt8")
qint32 = QuantizedDtype("qint32", dt.int32, 32, "QInt32")
quint4x2 = QuantizedDtype("quint4x2", dt.uint8, 4, "QUInt4x2")
quint2x4 = QuantizedDtype("quint2x4", dt.uint8, 2, "QUInt2x4")

QUANTIZED = (quint8, qint8, qint32, quint4x2, quint2x4)



class qscheme:
    """How a quantized tensor's integers map to values (torch.qscheme): the five schemes below are its only
    instances."""

    __slots__ = ("name",)

    def __init__(self, name):
        object.__setattr__(self, "name", name)

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute '{name}' of 'lantern.qscheme' objects is not writable")

    def __repr__(self):
        return qualified(self.name)

    def __reduce__(self):
        return self.name


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")

QSCHEMES = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric, per_channel_symmetric,
                                per_channel_affine_float_qparams)}



def refuse_quantized_dtype(dtype):
    """Factories and casts cannot make a quantized tensor (it needs a quantizer): torch's error, and the way."""
    if isinstance(dtype, QuantizedDtype):
        raise RuntimeError("empty_strided not supported on quantized tensors yet see "
                           f"https://github.com/pytorch/pytorch/issues/74540 (a {dtype.name} tensor is made by "
                           "lantern.quantize_per_tensor or lantern.quantize_per_channel)")
