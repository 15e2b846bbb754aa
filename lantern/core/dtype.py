"""dtypes: PyTorch's element types, each backed by a NumPy dtype.

>>> import lantern
>>> lantern.float32.itemsize, lantern.float.is_floating_point, lantern.int64.is_signed
(4, True, True)
"""
import enum
import threading

import ml_dtypes
import numpy as np

from .shown_name import qualified


class Category(enum.IntEnum):
    """A dtype's promotion category, lowest first as PyTorch orders them: bool < integral < floating < complex.

    >>> import lantern
    >>> lantern.int32.category, lantern.float16.category < lantern.complex64.category
    (<Category.INTEGRAL: 1>, True)
    """

    BOOL = 0
    INTEGRAL = 1
    FLOATING = 2
    COMPLEX = 3


BOOL, INTEGRAL, FLOATING, COMPLEX = Category


def is_differentiable(d):
    """Floating or complex: the dtypes whose tensors can require gradients.

    >>> import lantern
    >>> is_differentiable(lantern.float16), is_differentiable(lantern.complex64), is_differentiable(lantern.int64)
    (True, True, False)
    """
    return d.category >= FLOATING


class dtype:
    """One element type: its name, NumPy dtype, size and promotion category. Immutable, as torch's: every tensor
    shares these objects."""

    __slots__ = ("name", "np", "itemsize", "category", "is_signed", "legacy", "is_floating_point", "is_complex",
                 "__weakref__")

    def __init__(self, name, np_dtype, category, is_signed, legacy):
        np_dtype = np.dtype(np_dtype)
        fields = {"name": name, "np": np_dtype, "itemsize": np_dtype.itemsize, "category": category,
                  "is_signed": is_signed,
                  "legacy": legacy,  # the old tensor-type name: 'Float' for torch.FloatTensor
                  "is_floating_point": category == FLOATING,  # plain attributes: hot paths read them
                  "is_complex": category == COMPLEX}
        for field, value in fields.items():
            object.__setattr__(self, field, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute '{name}' of 'lantern.dtype' objects is not writable")

    def __delattr__(self, name):
        raise AttributeError(f"attribute '{name}' of 'lantern.dtype' objects is not writable")

    def to_real(self):
        """complex64 -> float32; real types map to themselves."""
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self):
        """float32 -> complex64, float64 -> complex128 (half types -> complex64)."""
        if self.category == COMPLEX:
            return self
        return complex128 if self is float64 else complex64

    def __repr__(self):
        return qualified(self.name)

    def __reduce__(self):
        return (_by_name, (self.name,))


bool = dtype("bool", np.bool_, BOOL, False, "Bool")
uint8 = dtype("uint8", np.uint8, INTEGRAL, False, "Byte")
int8 = dtype("int8", np.int8, INTEGRAL, True, "Char")
int16 = dtype("int16", np.int16, INTEGRAL, True, "Short")
int32 = dtype("int32", np.int32, INTEGRAL, True, "Int")
int64 = dtype("int64", np.int64, INTEGRAL, True, "Long")
float16 = dtype("float16", np.float16, FLOATING, True, "Half")
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, FLOATING, True, "BFloat16")
float32 = dtype("float32", np.float32, FLOATING, True, "Float")
float64 = dtype("float64", np.float64, FLOATING, True, "Double")
complex32 = dtype("complex32", ml_dtypes.complex32, COMPLEX, True, "ComplexHalf")  # two float16s: ml_dtypes' type
complex64 = dtype("complex64", np.complex64, COMPLEX, True, "ComplexFloat")
complex128 = dtype("complex128", np.complex128, COMPLEX, True, "ComplexDouble")

ALL = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex32, complex64, complex128)

# PyTorch's "shell" unsigned types: tensors of them exist (hash_tensor returns uint64, from_numpy takes them), but
# no type promotion involves them, so few ops accept them; kept out of ALL, which the promotion table spans.
uint16 = dtype("uint16", np.uint16, INTEGRAL, False, "UInt16")
uint32 = dtype("uint32", np.uint32, INTEGRAL, False, "UInt32")
uint64 = dtype("uint64", np.uint64, INTEGRAL, False, "UInt64")
LIMITED_UNSIGNED = (uint16, uint32, uint64)

# PyTorch's aliases: torch.float is float32, torch.long is int64, ...
ALIASES = {
    "half": float16, "float": float32, "double": float64, "short": int16, "int": int32,
    "long": int64, "chalf": complex32, "cfloat": complex64, "cdouble": complex128,
}

_COMPLEX_TO_REAL = {complex32: float16, complex64: float32, complex128: float64}


def holds_complex(np_dtype):
    """Whether arrays of this NumPy dtype hold complex numbers: NumPy's complex kinds, and complex32 (ml_dtypes'
    type, whose kind is 'V' and whose .real is not its real part)."""
    return np_dtype.kind == "c" or np_dtype == complex32.np
_BY_NP = {d.np: d for d in ALL + LIMITED_UNSIGNED}
_BY_NAME = {d.name: d for d in ALL + LIMITED_UNSIGNED}


def _by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype):
    """The lantern dtype for a NumPy dtype; TypeError for types lantern lacks (object, datetime64...)."""
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, "
            "uint16, uint8, and bool."
        ) from None


class _DefaultDtype(threading.local):
    value = float32


_default = _DefaultDtype()


def get_default_dtype():
    """The dtype Python floats and float factories use (float32 unless changed).

    >>> lantern.get_default_dtype()
    lantern.float32
    """
    return _default.value


def set_default_dtype(d):
    """Set the default floating dtype (only float32/float64/float16/bfloat16 are allowed, as in PyTorch)."""
    if not isinstance(d, dtype) or d.category != FLOATING:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default.value = d


def default_complex_dtype():
    return complex128 if _default.value is float64 else complex64


class finfo:
    """Machine limits of a floating dtype, as torch.finfo.

    >>> lantern.finfo(lantern.float16).max
    65504.0
    """

    def __init__(self, type=None):
        type = get_default_dtype() if type is None else type
        if type.category not in (FLOATING, COMPLEX):
            raise TypeError(f"torch.finfo() requires a floating point input type. Use torch.iinfo to handle '{type}'")
        info = ml_dtypes.finfo(type.to_real().np)
        self.dtype = type.to_real().name
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = 10.0 ** -info.precision  # PyTorch's: a power of ten, not NumPy's rounded value

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as torch.iinfo.

    >>> lantern.iinfo(lantern.int8).min
    -128
    """

    def __init__(self, type):
        if type.category == BOOL:
            raise TypeError(f"{type} is not supported by torch.iinfo")
        if type.category != INTEGRAL:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo to handle '{type}'")
        info = np.iinfo(type.np)
        self.dtype = type.name
        self.bits = type.itemsize * 8
        self.min = int(info.min)
        self.max = int(info.max)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
