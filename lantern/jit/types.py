"""jit.types: the static types of IR values, printed as TorchScript prints them.

>>> from lantern.jit.types import TensorType, IntType, ListType, OptionalType, TupleType, type_of
>>> import lantern
>>> str(TensorType.get()), str(ListType(IntType.get())), str(OptionalType(TensorType.get()))
('Tensor', 'int[]', 'Tensor?')
>>> str(type_of(lantern.ones(2, 3)))
'Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)'
>>> str(TupleType([IntType.get(), TensorType.get()])), type_of([1, 2]).is_subtype_of(ListType(IntType.get()))
('(int, Tensor)', True)
"""
from .._tensor import Tensor
from ..core import dtype as _dtypes, layout
from ..core.device import device as _device

__all__ = [
    "Type", "TensorType", "IntType", "FloatType", "BoolType", "StrType", "NoneType", "DeviceType", "DtypeType",
    "NumberType", "ListType", "TupleType", "OptionalType", "DictType", "ClassType", "FunctionType", "AnyType",
    "type_of", "scalar_type_index", "dtype_from_index", "dtype_from_legacy_name", "memory_format_index",
    "memory_format_from_index",
]

# c10::ScalarType numbering: TorchScript stores a dtype constant as this int.
_SCALAR_TYPE_INDEX = {
    "uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6, "float64": 7,
    "complex64": 9, "complex128": 10, "bool": 11, "bfloat16": 15,
}
_INDEX_TO_NAME = {i: n for n, i in _SCALAR_TYPE_INDEX.items()}


def scalar_type_index(dt):
    """The int TorchScript uses for a dtype (float32 -> 6)."""
    return _SCALAR_TYPE_INDEX[dt.name]


def dtype_from_index(i):
    """The dtype for a ScalarType int (6 -> lantern.float32)."""
    try:
        return getattr(_dtypes, _INDEX_TO_NAME[int(i)])
    except KeyError:
        raise RuntimeError(f"unsupported ScalarType index {i}") from None


_MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")


def memory_format_index(memory_format):
    """The int TorchScript uses for a memory format (contiguous_format -> 0), as for a dtype."""
    return _MEMORY_FORMATS.index(memory_format.name)


def memory_format_from_index(i):
    """The memory format for its TorchScript int (2 -> lantern.channels_last)."""
    return getattr(layout, _MEMORY_FORMATS[i])


def with_memory_formats(schema, args):
    """`args` for an op with `schema`, the TorchScript ints at MemoryFormat parameters turned back into memory
    formats (the IR keeps them as ints, as torch's does)."""
    return tuple(memory_format_from_index(a) if type(a) is int and i < len(schema.args)
                 and schema.args[i].type == "MemoryFormat" else a for i, a in enumerate(args))


def dtype_from_legacy_name(name):
    """'Float' -> float32, as in the printed type 'Float(2, 3)'; None if the name is not a dtype."""
    for d in _dtypes.ALL:
        if d.legacy == name:
            return d
    return None


class Type:
    """A TorchScript type. Types compare structurally; leaf types are singletons reached with `.get()`."""

    _instance = None
    _name = "?"

    @classmethod
    def get(cls):
        if cls.__dict__.get("_instance") is None:
            cls._instance = cls()
        return cls._instance

    def kind(self):
        return type(self).__name__

    def _key(self):
        return ()

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__, self._key()))

    def __str__(self):
        return self._name

    def __repr__(self):
        return str(self)

    def annotation_str(self):
        """The type as written in TorchScript source (`List[int]`, `Optional[Tensor]`)."""
        return str(self)

    def contained_types(self):
        return ()

    def is_subtype_of(self, other):
        """True if a value of this type may be used where `other` is expected (torch's isSubtypeOf)."""
        if isinstance(other, AnyType) or self == other:
            return True
        if isinstance(other, OptionalType):
            return isinstance(self, NoneType) or self.is_subtype_of(other.elem) or (
                isinstance(self, OptionalType) and self.elem.is_subtype_of(other.elem))
        if isinstance(other, NumberType):
            return isinstance(self, (IntType, FloatType, NumberType))
        return self._is_subtype_of(other)

    def _is_subtype_of(self, other):
        return False


class _Leaf(Type):
    pass


class IntType(_Leaf):
    """int (64-bit)."""
    _name = "int"


class FloatType(_Leaf):
    """float (double)."""
    _name = "float"


class BoolType(_Leaf):
    """bool."""
    _name = "bool"


class StrType(_Leaf):
    """str."""
    _name = "str"


class NoneType(_Leaf):
    """The type of None."""
    _name = "NoneType"


class DeviceType(_Leaf):
    """torch.device: printed `Device`."""
    _name = "Device"


class DtypeType(_Leaf):
    """A dtype (ScalarType). TorchScript prints it as `int`: the constant holds the ScalarType number."""
    _name = "int"

    def annotation_str(self):
        return "dtype"

    def _is_subtype_of(self, other):
        return isinstance(other, IntType)


class NumberType(_Leaf):
    """Scalar: int or float."""
    _name = "Scalar"


class AnyType(_Leaf):
    """Any: every type is a subtype of it."""
    _name = "Any"


class TensorType(Type):
    """Tensor, optionally refined with dtype, sizes (None entries unknown), strides, requires_grad and device.

    `TensorType.get()` is the unrefined `Tensor`; a refined type prints as torch does:
    `Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)`.
    """

    def __init__(self, dtype=None, sizes=None, requires_grad=None, strides=None, device=None):
        self.dtype = dtype
        self.sizes = None if sizes is None else tuple(sizes)
        self.strides = None if strides is None else tuple(strides)
        self.requires_grad = requires_grad
        self.device = device

    @classmethod
    def get(cls):
        if cls.__dict__.get("_instance") is None:
            cls._instance = cls()
        return cls._instance

    @classmethod
    def create_from_tensor(cls, t):
        """The complete type of a tensor (what tracing records)."""
        return cls(t.dtype, tuple(t.shape), bool(t.requires_grad), tuple(t.stride()), str(t.device))

    def dim(self):
        return None if self.sizes is None else len(self.sizes)

    def is_refined(self):
        return any(x is not None for x in (self.dtype, self.sizes, self.strides, self.requires_grad, self.device))

    def with_dtype(self, dtype):
        return TensorType(dtype, self.sizes, self.requires_grad, self.strides, self.device)

    def with_sizes(self, sizes):
        return TensorType(self.dtype, sizes, self.requires_grad, None, self.device)

    def with_requires_grad(self, requires_grad):
        return TensorType(self.dtype, self.sizes, requires_grad, self.strides, self.device)

    def unrefined(self):
        return TensorType.get()

    def _key(self):
        return (self.dtype and self.dtype.name, self.sizes, self.strides, self.requires_grad,
                None if self.device is None else str(self.device))

    def __str__(self):
        if self.dtype is None:
            head = "Tensor"
        else:
            head = self.dtype.legacy + ("Tensor" if self.sizes is None else "")
        parts = []
        if self.sizes is not None:
            parts += ["*" if s is None else str(s) for s in self.sizes]
            if self.strides is not None and self.sizes:
                parts.append("strides=[" + ", ".join("*" if s is None else str(s) for s in self.strides) + "]")
        if self.requires_grad is not None:
            parts.append(f"requires_grad={int(self.requires_grad)}")
        if self.device is not None:
            parts.append(f"device={self.device}")
        if self.sizes is None and not parts:
            return head
        return head + "(" + ", ".join(parts) + ")"

    def annotation_str(self):
        return "Tensor"

    def _is_subtype_of(self, other):
        if not isinstance(other, TensorType):
            return False
        for mine, theirs in ((self.dtype, other.dtype), (self.requires_grad, other.requires_grad),
                             (self.device and str(self.device), other.device and str(other.device))):
            if theirs is not None and mine != theirs:
                return False
        if other.sizes is not None:
            if self.sizes is None or len(self.sizes) != len(other.sizes):
                return False
            if any(b is not None and a != b for a, b in zip(self.sizes, other.sizes)):
                return False
        if other.strides is not None and self.strides != other.strides:
            return False
        return True


class ListType(Type):
    """List[elem]: printed `int[]`."""

    def __init__(self, elem):
        self.elem = elem

    @classmethod
    def ofInts(cls):
        return cls(IntType.get())

    @classmethod
    def ofTensors(cls):
        return cls(TensorType.get())

    def getElementType(self):
        return self.elem

    def _key(self):
        return (self.elem,)

    def contained_types(self):
        return (self.elem,)

    def __str__(self):
        return f"{self.elem}[]"

    def annotation_str(self):
        return f"List[{self.elem.annotation_str()}]"


class TupleType(Type):
    """Tuple[elems...]: printed `(int, Tensor)`."""

    def __init__(self, elems):
        self.elems = tuple(elems)

    def elements(self):
        return self.elems

    def _key(self):
        return self.elems

    def contained_types(self):
        return self.elems

    def __str__(self):
        return "(" + ", ".join(str(e) for e in self.elems) + ")"

    def annotation_str(self):
        return "Tuple[" + (", ".join(e.annotation_str() for e in self.elems) or "()") + "]"

    def _is_subtype_of(self, other):
        return isinstance(other, TupleType) and len(self.elems) == len(other.elems) and \
            all(a.is_subtype_of(b) for a, b in zip(self.elems, other.elems))


class OptionalType(Type):
    """Optional[elem]: printed `Tensor?`."""

    def __init__(self, elem):
        self.elem = elem.elem if isinstance(elem, OptionalType) else elem

    @classmethod
    def ofTensor(cls):
        return cls(TensorType.get())

    def getElementType(self):
        return self.elem

    def _key(self):
        return (self.elem,)

    def contained_types(self):
        return (self.elem,)

    def __str__(self):
        return f"{self.elem}?"

    def annotation_str(self):
        return f"Optional[{self.elem.annotation_str()}]"


class DictType(Type):
    """Dict[key, value]: printed `Dict(str, Tensor)`."""

    def __init__(self, key, value):
        self.key, self.value = key, value

    def getKeyType(self):
        return self.key

    def getValueType(self):
        return self.value

    def _key(self):
        return (self.key, self.value)

    def contained_types(self):
        return (self.key, self.value)

    def __str__(self):
        return f"Dict({self.key}, {self.value})"

    def annotation_str(self):
        return f"Dict[{self.key.annotation_str()}, {self.value.annotation_str()}]"


class ClassType(Type):
    """A script class or module type (a module method's `self`): printed by its qualified name."""

    def __init__(self, name):
        self.name = name

    def _key(self):
        return (self.name,)

    def __str__(self):
        return self.name


class FunctionType(Type):
    """A script function referenced by prim::Constant in prim::CallFunction: printed `Function`."""

    def __init__(self, name=None):
        self.name = name

    def _key(self):
        return (self.name,)

    def __str__(self):
        return "Function"


def _unify(types):
    """The common type of container elements, or None when they differ (int and float do not unify)."""
    first = types[0]
    if all(t == first for t in types):
        return first
    if all(isinstance(t, TensorType) for t in types):
        return TensorType.get()
    return None


def type_of(value):
    """The TorchScript type of a Python value (tensors get their complete refined type)."""
    if isinstance(value, Tensor):
        return TensorType.create_from_tensor(value)
    if value is None:
        return NoneType.get()
    if isinstance(value, bool):
        return BoolType.get()
    if isinstance(value, int):
        return IntType.get()
    if isinstance(value, float):
        return FloatType.get()
    if isinstance(value, str):
        return StrType.get()
    if isinstance(value, _dtypes.dtype):
        return DtypeType.get()
    if isinstance(value, _device):
        return DeviceType.get()
    if isinstance(value, tuple):
        return TupleType([type_of(v) for v in value])
    if isinstance(value, list):
        if not value:
            raise RuntimeError("List trace inputs must have elements")
        elems = [type_of(v) for v in value]
        if all(isinstance(e, TensorType) for e in elems):
            return ListType(TensorType.get())
        common = _unify(elems)
        if common is None:
            raise RuntimeError("List inputs to traced functions must have consistent element type")
        return ListType(common)
    if isinstance(value, dict):
        if not value:
            raise RuntimeError("Dictionary inputs must have entries")
        keys = [type_of(k) for k in value]
        vals = [type_of(v) for v in value.values()]
        k, v = _unify(keys), _unify(vals)
        if k is None or v is None:
            raise RuntimeError(f"cannot infer a TorchScript dict type for {value!r}: mixed types")
        if isinstance(v, TensorType):
            v = TensorType.get()
        return DictType(k, v)
    raise RuntimeError(f"cannot infer a TorchScript type for a value of type {type(value).__name__}")
