"""torch.storage: TypedStorage, an UntypedStorage's bytes read as elements of one dtype (what `tensor.storage()`
returns), and the legacy typed-storage classes (`torch.FloatStorage`, `LongStorage`, ...).

torch deprecates TypedStorage (it warns once per process) but keeps it working: a TypedStorage shares its bytes
with the tensors over them, so writing an element changes them. A legacy class makes TypedStorages of its dtype:
`torch.FloatStorage(3)` is a TypedStorage of 3 float32 elements, and `isinstance(s, torch.FloatStorage)` holds for
every float32 TypedStorage.

>>> import warnings, lantern as torch
>>> x = torch.tensor([1.0, 2.0])
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     s = x.storage()
...     s[0] = 9
...     x.tolist(), s.dtype, isinstance(s, torch.FloatStorage), torch.LongStorage([1, 2]).tolist()
([9.0, 2.0], lantern.float32, True, [1, 2])
"""
import numpy as np

from .core import dtype as dt
from .core.device import CPU, device as _device
from .core.storage import UntypedStorage
from .core.tensor_impl import TensorImpl, make_tensor
from .core.warn_always import warn_once
from ._construct import tensor
from .ops.dispatcher import backend_for_device

__all__ = ["TypedStorage", "UntypedStorage"]

_DEPRECATED = ("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
               "storage class. This should only matter to you if you are using storages directly.  To access "
               "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()")


def _warn_typed_storage_removal():
    warn_once(_DEPRECATED, stacklevel=4)


def _invalid_arguments(owner, reason):
    return RuntimeError(f"{owner}.__init__ received an invalid combination of arguments. Expected one of:\n"
                        " * (*, torch.device device, torch.dtype dtype)\n"
                        " * (int size, *, torch.device device, torch.dtype dtype)\n"
                        " * (Sequence data, *, torch.device device, torch.dtype dtype)\n"
                        " * (*, UntypedStorage wrap_storage, torch.dtype dtype)\n" + reason)


class TypedStorage:
    """`size()` elements of `dtype` over an UntypedStorage (`untyped()`), shared with the tensors that use it."""

    is_sparse = False

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        if not _internal:
            _warn_typed_storage_removal()
        if wrap_storage is not None:
            if args or device is not None:
                raise _invalid_arguments("TypedStorage", "No positional arguments or device should be given with "
                                         "wrap_storage")
            if dtype is None:
                raise _invalid_arguments("TypedStorage", "Argument 'dtype' must be specified")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"expected a UntypedStorage for wrap_storage, got {type(wrap_storage).__name__}")
            self._untyped_storage, self.dtype = wrap_storage, dtype
            return
        self.dtype = dtype or dt.get_default_dtype()
        place = CPU if device is None else _device(device)
        if not args:
            self._untyped_storage = UntypedStorage(0, device=place)
        elif len(args) == 1 and _is_size(args[0]):
            if args[0] < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {args[0]}: [{args[0]}]")
            self._untyped_storage = UntypedStorage(args[0] * self.dtype.itemsize, device=place)
        elif len(args) == 1:
            self._untyped_storage = _elements(args[0], self.dtype, place).untyped_storage()
        else:
            raise _invalid_arguments("TypedStorage", "Too many positional arguments")

    # ---- what it is ------------------------------------------------------------------------------------------------
    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def size(self):
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def __len__(self):
        return self.size()

    def nbytes(self):
        return self.size() * self.dtype.itemsize

    def element_size(self):
        return self.dtype.itemsize

    def data_ptr(self):
        return self._untyped_storage.data_ptr()

    def untyped(self):
        """The bytes underneath (the same UntypedStorage the tensors over them hold)."""
        return self._untyped_storage

    def type(self, dtype=None, non_blocking=False):
        """The legacy class name ('torch.FloatStorage'). Converting by type name fails in torch 2.13 (a RuntimeError
        from a size check); use float(), long(), ... instead."""
        if dtype is not None:
            raise RuntimeError("TypedStorage.type(dtype) does not convert (torch 2.13's fails too): use the "
                               "conversion methods, such as .double() or .long()")
        return f"torch.{self.dtype.legacy}Storage"

    def is_shared(self):
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        self._untyped_storage.share_memory_()
        return self

    def is_pinned(self, device="cuda"):
        return False

    # ---- elements ----------------------------------------------------------------------------------------------
    def _flat(self):
        """A 1-D tensor over all the elements (no copy)."""
        return make_tensor(self._untyped_storage, (self.size(),), (1,), 0, self.dtype,
                           backend_for_device(self.device))

    def __getitem__(self, index):
        if isinstance(index, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._flat()[self._checked(index)].item()

    def __setitem__(self, index, value):
        if not isinstance(index, slice):
            index = self._checked(index)
        self._flat()[index] = value

    def _checked(self, index):
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"can't index a {type(self).__name__} with {type(index).__name__}")
        n = self.size()
        if not -n <= index < n:
            raise IndexError(f"index {index} out of range for storage of size {n}")
        return int(index)

    def tolist(self):
        return self._flat().tolist()

    def __iter__(self):
        return iter(self.tolist())

    def fill_(self, value):
        self._flat().fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        """Copy another storage's elements (or bytes, from an UntypedStorage) into this one."""
        if isinstance(source, TypedStorage):
            self._flat().copy_(source._flat())
        else:
            self._untyped_storage.copy_(source)
        return self

    def clone(self):
        return TypedStorage(wrap_storage=_copy(self._untyped_storage), dtype=self.dtype, _internal=True)

    def cpu(self):
        """On the CPU: this storage's bytes (a new TypedStorage object over them) or a copy from another device."""
        if self.device.type == "cpu":
            return TypedStorage(wrap_storage=self._untyped_storage, dtype=self.dtype, _internal=True)
        return TypedStorage(self.tolist(), dtype=self.dtype, _internal=True)

    def resize_(self, size):
        self._untyped_storage.resize_(size * self.dtype.itemsize)

    def _to(self, dtype):
        """A copy of the elements as a TypedStorage of `dtype` (a copy even when the dtype is the same, as torch's)."""
        return TypedStorage(wrap_storage=self._flat().to(dtype, copy=True).untyped_storage(), dtype=dtype,
                            _internal=True)

    def double(self):
        return self._to(dt.float64)

    def float(self):
        return self._to(dt.float32)

    def half(self):
        return self._to(dt.float16)

    def bfloat16(self):
        return self._to(dt.bfloat16)

    def long(self):
        return self._to(dt.int64)

    def int(self):
        return self._to(dt.int32)

    def short(self):
        return self._to(dt.int16)

    def char(self):
        return self._to(dt.int8)

    def byte(self):
        return self._to(dt.uint8)

    def bool(self):
        return self._to(dt.bool)

    def complex_float(self):
        return self._to(dt.complex64)

    def complex_double(self):
        return self._to(dt.complex128)

    @classmethod
    def from_buffer(cls, buffer, byte_order="native", count=-1, offset=0, dtype=None):
        """A TypedStorage holding a copy of `buffer`'s bytes read as `dtype` (a legacy class gives its own)."""
        dtype = getattr(cls, "dtype", None) if cls is not TypedStorage else dtype
        if dtype is None:
            raise RuntimeError("from_buffer: a dtype must be given (or call it on a legacy class: "
                               "torch.FloatStorage.from_buffer)")
        order = {"native": "=", "little": "<", "big": ">"}[byte_order]
        values = np.frombuffer(buffer, dtype=np.dtype(dtype.np).newbyteorder(order), count=count, offset=offset)
        return TypedStorage(values.astype(dtype.np).tolist(), dtype=dtype, _internal=True)

    def __repr__(self):
        body = "".join(f" {value}\n" for value in self.tolist()) if self.device.type != "meta" else ""
        return f"{body}[lantern.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size {self.size()}]"


def _is_size(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _elements(data, dtype, place):
    """A tensor holding `data`'s values in `dtype` (torch's sequence constructor: a copy)."""
    if isinstance(data, str):
        raise TypeError("new(): invalid data type 'str'")
    if isinstance(data, TensorImpl):
        data = data.tolist()
    return tensor(data, dtype=dtype, device=place).reshape(-1)


def _copy(untyped):
    fresh = UntypedStorage(untyped.nbytes(), device=untyped.device)
    fresh.copy_(untyped)
    return fresh


class _LegacyStorageMeta(type):
    """A legacy class's isinstance: every TypedStorage of its dtype is one of its instances."""

    def __instancecheck__(cls, instance):
        return isinstance(instance, TypedStorage) and instance.dtype is cls.dtype


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    """`torch.FloatStorage(...)`: a TypedStorage of the class's dtype (no dtype argument)."""

    def __new__(cls, *args, wrap_storage=None, device=None, **kwargs):
        if kwargs:
            raise RuntimeError(f"{cls.__name__}.__new__ received an invalid combination of arguments: keyword "
                               f"argument{'s' if len(kwargs) > 1 else ''} {', '.join(kwargs)} cannot be specified")
        if len(args) > 1:
            raise RuntimeError(f"{cls.__name__}.__new__ received an invalid combination of arguments: too many "
                               "positional arguments")
        if wrap_storage is not None:
            return TypedStorage(wrap_storage=wrap_storage, dtype=cls.dtype)
        return TypedStorage(*args, dtype=cls.dtype, device=device)


def _legacy_class(d):
    return _LegacyStorageMeta(f"{d.legacy}Storage", (_LegacyStorage,), {"dtype": d, "__module__": "lantern"})


_LEGACY_NAMES = {f"{d.legacy}Storage": _legacy_class(d) for d in dt.ALL}
globals().update(_LEGACY_NAMES)
LEGACY_STORAGE_CLASSES = tuple(_LEGACY_NAMES.values())


def legacy_storage_class(dtype):
    """The legacy storage class of a dtype: FloatStorage for float32."""
    return _LEGACY_NAMES[f"{dtype.legacy}Storage"]
