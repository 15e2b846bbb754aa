"""Tensors from Python data and NumPy arrays: tensor() copies, from_numpy() shares, as_tensor() and asarray() share
when they can, and the legacy `lantern.Tensor(...)` constructor.

>>> import numpy as np
>>> a = np.ones((2, 2)); t = lantern.from_numpy(a); _ = t.add_(1.0); a[0, 0]     # one memory, two views
np.float64(2.0)
>>> lantern.tensor([[1, 2.5], [True, 4]]).dtype      # the highest kind present wins: bool < int < float < complex
lantern.float32
"""
import copyreg
from collections.abc import Sequence
from multiprocessing.reduction import DupFd, ForkingPickler

import numpy as np

from .core import dtype as dt
from .core.quantized_dtypes import QuantizedDtype
from .core.device import CPU, device as _device
from .core.layout import preserve_format
from .core.promotion import promote_types
from .core.size import Size
from .core.state import tls
from .core.storage import SharedMapping, UntypedStorage, wrap_numpy_memory
from .core import tensor_impl
from .core.tensor_impl import TensorImpl, make_tensor
from .ops.dispatcher import backend_for_device, call
from .ops.factory import finish, like_strides
from .ops.registry import get
from .core import user_warnings

_PYTHON_NUMBERS = {bool, int, float, complex}
_WIDE = {dt.BOOL: np.bool_, dt.INTEGRAL: np.int64, dt.FLOATING: np.float64, dt.COMPLEX: np.complex128}


# ---- NumPy arrays: shared memory -------------------------------------------------------------------------------

def _type_name(x):
    module = type(x).__module__
    return type(x).__name__ if module == "builtins" else f"{module}.{type(x).__name__}"


def _wrap_ndarray(arr):
    """A CPU tensor over `arr`'s memory, with PyTorch's errors for arrays a tensor cannot describe."""
    if not arr.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    dtype = dt.from_numpy_dtype(arr.dtype)
    if any(s < 0 for s in arr.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative strides are not "
            "currently supported. (You can probably work around this by making a copy of your array  with "
            "array.copy().) ")
    itemsize = arr.itemsize
    if any(s % itemsize for s in arr.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy array "
                         "to reallocate the memory.")
    return make_tensor(wrap_numpy_memory(arr), tuple(arr.shape), tuple(s // itemsize for s in arr.strides), 0,
                       dtype, backend_for_device(CPU))


def _warn_if_read_only(arr):
    if not arr.flags.writeable:
        user_warnings.warn("The given NumPy array is not writable, and lantern does not support non-writable tensors: "
                      "writing to this tensor would write to the array. Copy the array, or make it writable, "
                      "before converting it to a tensor.", UserWarning, stacklevel=3)


def from_numpy(ndarray):
    """A tensor over the same memory as `ndarray`: dtype and strides (in elements) kept, nothing copied.

    >>> import numpy as np
    >>> lantern.from_numpy(np.ones((3, 4))[:, ::2]).stride()
    (4, 2)
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {_type_name(ndarray)})")
    _warn_if_read_only(ndarray)
    return _wrap_ndarray(ndarray)


def _copy_of_ndarray(arr, dtype, device):
    """A copy of `arr` as PyTorch makes it: a dense array's strides kept, a sparse one's stride order kept."""
    src = _wrap_ndarray(arr)
    backend = backend_for_device(device)
    out = backend.empty_strided(src._size, like_strides(src, preserve_format), dtype or src.dtype)
    if backend.xp is not None:
        backend.array(out)[...] = arr if backend.device.type == "cpu" else backend.from_host(arr)
    return out


# ---- nested Python data: inferred dtype, checked shape ----------------------------------------------------------

def _is_sequence(x):
    """What PyTorch descends into as one more dimension (a string is refused, not descended into)."""
    if isinstance(x, (list, tuple)):  # the common case, before the slower abstract-base-class check
        return True
    if isinstance(x, np.ndarray):
        return x.ndim > 0
    return isinstance(x, (Sequence, bytearray, memoryview)) and not isinstance(x, (str, bytes))


def _leaf_dtype(x):
    """The dtype PyTorch infers for one scalar of nested data (a NumPy scalar keeps its own dtype)."""
    if isinstance(x, (TensorImpl, np.generic, np.ndarray)):
        return x.dtype if isinstance(x, TensorImpl) else dt.from_numpy_dtype(x.dtype)
    if isinstance(x, bool):
        return dt.bool
    if isinstance(x, int):
        return dt.int64
    if isinstance(x, float):
        return dt.get_default_dtype()
    if isinstance(x, complex):
        return dt.default_complex_dtype()
    if isinstance(x, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if _is_sequence(x):
        raise TypeError(f"'{type(x).__name__}' object cannot be interpreted as a number: the nested data is "
                        "deeper here than where its first elements end (ragged nesting)")
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _nested_shape(data):
    """The shape read down the first elements, as PyTorch reads it."""
    shape = []
    while _is_sequence(data):
        if isinstance(data, np.ndarray):
            shape.extend(data.shape)
            break
        shape.append(len(data))
        if not shape[-1]:
            break
        data = data[0]
    if isinstance(data, str):
        raise ValueError(f"too many dimensions '{type(data).__name__}'")
    return tuple(shape)


def _check_nesting(data, shape):
    """Check that `data` has `shape` all the way down; returns (leaf dtypes, whether any leaf is a tensor)."""
    dtypes, has_tensors = set(), [False]

    def visit(seq, dim):
        if isinstance(seq, np.ndarray) and seq.ndim:
            if seq.shape != shape[dim:]:
                raise ValueError(f"expected an array of shape {list(shape[dim:])} at dim {dim} (got "
                                 f"{list(seq.shape)})")
            dtypes.add(dt.from_numpy_dtype(seq.dtype))
            return
        if not _is_sequence(seq):
            _leaf_dtype(seq)  # PyTorch infers every dtype first: a None here is "Could not infer dtype"
            raise TypeError(f"not a sequence: expected a sequence of length {shape[dim]} at dim {dim}, got "
                            f"{type(seq).__name__}")
        if len(seq) != shape[dim]:
            raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(seq)})")
        if dim + 1 < len(shape):
            for item in seq:
                visit(item, dim + 1)
        else:
            types = set(map(type, seq))
            if types <= _PYTHON_NUMBERS:
                dtypes.update(_leaf_dtype(number_type()) for number_type in types)
            else:
                dtypes.update(map(_leaf_dtype, seq))
                has_tensors[0] = has_tensors[0] or any(isinstance(x, TensorImpl) for x in seq)

    if shape:
        visit(data, 0)
    else:
        dtypes.add(_leaf_dtype(data))
        has_tensors[0] = isinstance(data, TensorImpl)
    return dtypes, has_tensors[0]


def _promoted(dtypes):
    if not dtypes:
        return dt.get_default_dtype()
    out = None
    for d in dtypes:
        out = d if out is None else promote_types(out, d)
    return out


def _tensor_leaves_as_numbers(data, target):
    """Nested data with each tensor leaf replaced by its one value (PyTorch's errors for several)."""
    if isinstance(data, TensorImpl):
        if data.numel() != 1:
            error = TypeError if target.category <= dt.INTEGRAL else ValueError
            raise error(f"only one element tensors can be converted to Python scalars (got a tensor of shape "
                        f"{list(data.shape)} inside the data; use lantern.stack to join tensors)")
        return data.item()
    if isinstance(data, (list, tuple)):
        return [_tensor_leaves_as_numbers(x, target) for x in data]
    return data


def _checked_cast(values, target):
    """`values` (bool/int64/float64/complex128) converted to `target` as PyTorch stores each Python number: an
    integer target refuses non-finite or out-of-range values (ints wrap into uint8 from as low as -255); a float
    target takes anything real, rounding overflow to inf."""
    if target is dt.bool:
        return values != 0
    if target.category == dt.INTEGRAL and values.dtype.kind != "b":
        info = np.iinfo(target.np)
        low = -int(info.max) if target is dt.uint8 and values.dtype.kind == "i" else info.min
        if values.size and not (np.isfinite(values).all() and low <= values.min() and values.max() <= info.max):
            raise RuntimeError(f"value cannot be converted to type {target.name} without overflow")
    return values.astype(target.np)


def _nested_to_numpy(data, dtype):
    """(array, dtype) for nested Python data: shape checked, dtype inferred unless given, values converted."""
    shape = _nested_shape(data)
    dtypes, has_tensors = _check_nesting(data, shape)
    source = _promoted(dtypes)
    target = dtype or source
    if source.category == dt.COMPLEX and target.category in (dt.INTEGRAL, dt.FLOATING):
        raise TypeError(f"must be real number, not complex (the data holds complex numbers; {target} is real)")
    if has_tensors:
        data = _tensor_leaves_as_numbers(data, target)
    wide = _WIDE[source.category if target is dt.bool else max(source.category, target.category)]
    try:
        values = np.array(data, dtype=wide)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    return _checked_cast(values, target), target


def _from_array_copy(arr, dtype, device):
    backend = backend_for_device(device)
    t = backend.empty(arr.shape, dtype)
    if backend.xp is not None:
        backend.array(t)[...] = arr if backend.device.type == "cpu" else backend.from_host(arr)
    return t


def _check_dtype_arg(dtype):
    if dtype is not None and not isinstance(dtype, dt.dtype):
        raise TypeError(f"tensor(): argument 'dtype' must be lantern.dtype, not {type(dtype).__name__}")
    if isinstance(dtype, QuantizedDtype):
        raise RuntimeError(f"store_scalar: invalid type (lantern.tensor cannot hold {dtype.name}: quantize a float "
                           "tensor with lantern.quantize_per_tensor)")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data`: nested sequences of numbers, NumPy arrays and scalars, or tensors.

    >>> lantern.tensor([1, 2]).dtype, lantern.tensor([1., 2]).dtype, lantern.tensor(True).dtype
    (lantern.int64, lantern.float32, lantern.bool)
    >>> lantern.tensor([]).shape
    lantern.Size([0])
    """
    _check_dtype_arg(dtype)
    device = (tls.default_device or CPU) if device is None else _device(device)
    if isinstance(data, TensorImpl):
        user_warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than lantern.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        out = data.detach().to(dtype=dtype or data.dtype, device=device, copy=True)
    elif isinstance(data, np.ndarray):
        out = _copy_of_ndarray(data, dtype, device)
    elif isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    else:
        arr, target = _nested_to_numpy(data, dtype)
        out = _from_array_copy(arr, target, device)
    return finish(out, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """`data` itself when it is a tensor of that dtype and device, a tensor over a NumPy array's memory, or else
    a converted copy (through .to(), so a tensor's autograd history is kept)."""
    if isinstance(data, TensorImpl):
        return data.to(dtype=dtype, device=device)
    if isinstance(data, np.ndarray):
        _warn_if_read_only(data)
        return _wrap_ndarray(data).to(dtype=dtype, device=device)
    return tensor(data, dtype=dtype, device=device)


def _shared(obj, dtype):
    """A tensor over obj's memory (a tensor, NumPy array or buffer), or None when obj has no memory to share."""
    if isinstance(obj, TensorImpl):
        return obj
    if isinstance(obj, np.ndarray):
        _warn_if_read_only(obj)
        return _wrap_ndarray(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return _wrap_ndarray(np.frombuffer(obj, dtype=(dtype or dt.get_default_dtype()).np))
    return None


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """Like as_tensor, with NumPy's copy= (True: always copy; False: share or raise ValueError; None: share when
    possible). requires_grad=None keeps a tensor's own autograd status; False gives a result outside autograd."""
    shared = _shared(obj, dtype)
    if shared is None:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        result = tensor(obj, dtype=dtype, device=device)
    else:
        if copy is False:
            if dtype is not None and dtype is not shared.dtype:
                raise ValueError(f"can't alias tensor with dtype '{shared.dtype.legacy}' into dtype '{dtype.legacy}'.")
            if device is not None and _device(device) != shared.device:
                raise ValueError(f"can't alias tensor from device '{shared.device}' to '{_device(device)}'.")
        result = shared.to(dtype=dtype, device=device, copy=bool(copy))
    if requires_grad is False and result.requires_grad:
        return result.detach()
    return finish(result, requires_grad) if requires_grad else result


# ---- the legacy constructor: lantern.Tensor(...) ---------------------------------------------------------------

def legacy_tensor_new(cls, *args, **kwargs):
    """`lantern.Tensor(2, 3)` and `Tensor(Size([2, 3]))` (uninitialised, of sizes), `Tensor([1, 2])` (a float
    copy), `Tensor(t)` (t itself), `Tensor()` (empty). A subclass `S(...)` gives an S: a new one, or for `S(t)`
    t.as_subclass(S), as in torch."""
    result = legacy_new(dt.get_default_dtype(), args, kwargs, any_tensor=True)
    if cls is tensor_impl.tensor_class or type(result) is cls:
        return result
    if args and result is args[0]:
        return result.as_subclass(cls)
    result.__class__ = cls
    return result


def legacy_new(dtype, args, kwargs, any_tensor=False):
    """The legacy constructors' rules, for `lantern.Tensor` (the default dtype) and `lantern.FloatTensor` & co.:
    sizes give an uninitialised tensor, a sequence or array a converted copy, a tensor itself (for the typed
    constructors only a tensor of their dtype; `Tensor(t)` takes any)."""
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"new() received an invalid combination of arguments - got {list(kwargs)}")
    if device is not None and _device(device).type != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {_device(device).type} "
                           "was passed")
    if not args:
        return tensor([], dtype=dtype, device=CPU)
    if len(args) == 1 and not isinstance(args[0], (int, np.integer, Size)):
        data = args[0]
        if isinstance(data, TensorImpl):
            if data.dtype is not dtype and not any_tensor:
                raise TypeError(f"expected {dtype.legacy}Tensor data (got a tensor of dtype {data.dtype})")
            return data
        if isinstance(data, np.ndarray):
            return tensor(data, dtype=dtype, device=CPU)
        if isinstance(data, str):
            raise TypeError("new(): invalid data type 'str'")
        if not _is_sequence(data):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        return tensor(data, dtype=dtype, device=CPU)
    sizes = tuple(args[0]) if isinstance(args[0], Size) else args
    return call(get("empty"), (sizes, dtype, None, CPU, None, False, None))


# ---- pickling: tensors pickle as (storage, offset, size, stride), so views in one pickle keep sharing ---------------

def rebuild_tensor(storage, offset, size, stride, dtype, requires_grad, state, cls=None):
    """Unpickling: a tensor over an (already unpickled, possibly shared) storage, as Tensor.__reduce_ex__ saved it
    (cls: the Tensor subclass it was an instance of)."""
    t = make_tensor(storage, size, stride, offset, dtype, backend_for_device(storage.device))
    if cls is not None:
        if not (isinstance(cls, type) and issubclass(cls, TensorImpl)):
            raise RuntimeError(f"invalid tensor type in pickle: {cls!r:.60}")
        t.__class__ = cls
    if requires_grad:
        t.requires_grad_(True)
    if state:
        t.__dict__.update(state)
    return t


def rebuild_storage(payload, nbytes, device):
    """Unpickling: an UntypedStorage from its bytes (None on the meta device)."""
    dev = _device(device)
    if payload is None:
        return UntypedStorage(nbytes, device=dev)
    storage = UntypedStorage(nbytes)
    storage._data[:nbytes] = np.frombuffer(payload, np.uint8)
    if dev.type != "cpu":
        flat = make_tensor(storage, (nbytes,), (1,), 0, dt.uint8, backend_for_device(CPU))
        storage = flat.to(dev)._storage
    return storage


def _reduce_storage(storage):
    data = storage._data
    if data is None:
        return (rebuild_storage, (None, storage.nbytes(), str(storage.device)))
    if not isinstance(data, np.ndarray):
        data = data.get()  # CuPy memory: copy to the host
    return (rebuild_storage, (data[:storage.nbytes()].tobytes(), storage.nbytes(), str(storage.device)))


def rebuild_shared_storage(fd, nbytes):
    """Unpickling in another process: the sender's shared storage, mapped from the descriptor it sent."""
    return UntypedStorage._over_shared(SharedMapping.attach(fd.detach(), max(nbytes, 1)), nbytes)


def _reduce_storage_for_process(storage):
    """What multiprocessing sends to another process (its ForkingPickler: Process arguments under spawn, queues):
    a storage moved into shared memory by share_memory_() travels as its file descriptor, so both processes keep
    writing one memory (Hogwild! training); any other storage travels as its bytes. (torch moves every storage it
    sends into shared memory; lantern sends copies of the storages not shared by the program.)"""
    mapping = storage._shared_mapping()
    if mapping is None:
        return _reduce_storage(storage)
    return (rebuild_shared_storage, (DupFd(mapping.fd), storage.nbytes()))


copyreg.pickle(UntypedStorage, _reduce_storage)
ForkingPickler.register(UntypedStorage, _reduce_storage_for_process)
