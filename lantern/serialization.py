"""Checkpoints in PyTorch's zip format: `lantern.save` writes files `torch.load` reads, `lantern.load` reads both.

A checkpoint is a zip archive (every record under one folder, `archive/` for file objects):
  data.pkl                 the pickled object; each storage appears as a persistent id
                           ('storage', <torch.FloatStorage>, key, location, numel) instead of its bytes
  data/<key>               one record of raw little-endian bytes per storage, aligned to 64 bytes in the file
  version, .format_version, .storage_alignment, byteorder, .data/serialization_id   as torch writes them
Tensors pickle as `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`, so views
of one storage share one record. The names in data.pkl are torch's (`torch.FloatStorage`, `torch.float32`); on
load they map back to lantern's objects.

`load(..., weights_only=True)` (the default) runs no code from the file: only tensors, storages, the rebuild
functions, OrderedDict, primitive containers and the classes allowed with `add_safe_globals` may appear.

>>> import io, collections
>>> buf = io.BytesIO()
>>> x = lantern.arange(6.)
>>> lantern.save(collections.OrderedDict(x=x, view=x[1::2]), buf)
>>> _ = buf.seek(0)
>>> sd = lantern.load(buf)
>>> sd["view"], sd["view"].untyped_storage().data_ptr() == sd["x"].untyped_storage().data_ptr()
(tensor([1., 3., 5.]), True)
"""
import _compat_pickle
import codecs
import collections
import contextlib
import io
import math
import os
import pathlib
import pickle
import random
import struct
import sys
import types
import zipfile

import numpy as np

from ._tensor import Tensor
from ._weights_only_unpickler import Unpickler, _ascii
from .core import dtype as dt
from .core.device import device as _device
from .core.layout import layout, sparse_coo, sparse_csr, strided
from .core.quantized_dtypes import QSCHEMES, QUANTIZED, QuantizedDtype, qscheme
from .core.size import Size
from .core.storage import UntypedStorage
from .core.tensor_impl import TensorImpl, contiguous_strides, make_tensor
from .core.math_bits import set_tensor_metadata, tensor_metadata
from .backends.quantized_checkpoint import quantizer_params, rebuild_qtensor
from .nn.parameter import Parameter
from .ops.dispatcher import backend_for_device
from .sparse._checkpoint import rebuild_sparse_tensor, reduce_sparse_tensor
from .torch_version import TorchVersion
from .core import user_warnings

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals"]

_ALIGNMENT = 64
_FORMAT_VERSION = "3"  # archive/version: the serialization version torch 2.x writes


# ---- the objects data.pkl names, and their torch spellings ---------------------------------------------------------

class StorageType:
    """What `torch.FloatStorage` (a legacy typed-storage class) stands for in a checkpoint: a dtype. Immutable: the
    same object answers for every load, so nothing may rewrite its dtype."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        object.__setattr__(self, "dtype", dtype)

    def __setattr__(self, name, value):
        raise AttributeError(f"StorageType is immutable (cannot set {name!r})")

    def __delattr__(self, name):
        raise AttributeError(f"StorageType is immutable (cannot delete {name!r})")

    def __repr__(self):
        return f"StorageType(dtype={self.dtype})"


class _TypedStorage:
    """A storage as data.pkl's rebuild functions receive it: untyped bytes plus the dtype it was saved with."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype):
        self.storage, self.dtype = storage, dtype


_STORAGE_TYPES = {d: StorageType(d) for d in (*dt.ALL, *QUANTIZED)}
_UNTYPED_STORAGE = StorageType(dt.uint8)


def _tensor_from(storage, offset, size, stride, dtype, requires_grad):
    size, stride, offset = _ints(size, "size"), _ints(stride, "stride"), _ints((offset,), "storage offset")[0]
    if type(dtype) is not dt.dtype:
        raise RuntimeError(f"invalid tensor in checkpoint: {dtype!r:.40} is not a dtype")
    _check_bounds(storage, offset, size, stride, dtype)
    t = make_tensor(storage, size, stride, offset, dtype, backend_for_device(storage.device))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _ints(values, what):
    """A checkpoint's size/stride/offset as a tuple of ints (bools and other types are refused, not coerced)."""
    if not isinstance(values, (tuple, list)) or any(type(v) is not int for v in values):
        raise RuntimeError(f"invalid tensor {what} in checkpoint: {values!r:.60}")
    return tuple(values)


def _check_bounds(storage, offset, size, stride, dtype):
    """A checkpoint must not make a tensor that reaches outside its storage (as torch's set_ checks)."""
    if len(size) != len(stride) or min(size, default=0) < 0 or min(stride, default=0) < 0 or offset < 0:
        raise RuntimeError(f"invalid tensor geometry in checkpoint: size {list(size)}, stride {list(stride)}, "
                           f"storage offset {offset}")
    if storage.device.type == "meta" or 0 in size:
        return
    needed = (offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1) * dtype.itemsize
    if needed > storage.nbytes():
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {dtype.itemsize} requiring a storage size of {needed} are out of bounds for "
                           f"storage of size {storage.nbytes()}")


def _typed(storage):
    if type(storage) is not _TypedStorage:
        raise RuntimeError(f"invalid tensor in checkpoint: {type(storage).__name__} is not a loaded storage")
    return storage


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    """torch._utils._rebuild_tensor_v2: a tensor over a loaded storage, with the conjugate/negative bits `metadata`
    records (hooks are not restored)."""
    storage = _typed(storage)
    t = _tensor_from(storage.storage, storage_offset, size, stride, storage.dtype, requires_grad)
    if metadata:
        set_tensor_metadata(t, metadata)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    storage = _typed(storage)
    return _tensor_from(storage.storage, storage_offset, size, stride, storage.dtype, False)


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    storage = UntypedStorage(0, device="meta")
    return _tensor_from(storage, 0, size, stride, dtype, requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    if not isinstance(data, TensorImpl):
        raise RuntimeError(f"invalid Parameter in checkpoint: its data is a {type(data).__name__}, not a tensor")
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    """torch._tensor._rebuild_from_type_v2: rebuild with `func`, then restore the attributes a user set."""
    ret = func(*args)
    if new_type is not None and not isinstance(new_type, type):
        raise RuntimeError(f"invalid tensor type in checkpoint: {new_type!r:.60}")
    if new_type is not None and type(ret) is not new_type and issubclass(new_type, TensorImpl):
        ret.__class__ = new_type
    return _set_state(ret, state)


def _set_state(obj, state):
    if state:
        obj.__setstate__(state)  # Tensor.__setstate__ restores user attributes only
    return obj


def _get_layout(name):
    """torch.serialization._get_layout: the layout a checkpoint names ('torch.sparse_coo')."""
    found = _LAYOUTS.get(name)
    if found is None:
        raise RuntimeError(f"lantern supports the strided, sparse_coo and sparse_csr layouts; this checkpoint has a "
                           f"{name} tensor")
    return found


_LAYOUTS = {f"torch.{kind.name}": kind for kind in (strided, sparse_coo, sparse_csr)}


def _torch_names():
    """(module, name) -> the lantern object, for every torch global a weights-only checkpoint may contain."""
    names = {
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
        ("torch._utils", "_rebuild_meta_tensor_no_storage"): _rebuild_meta_tensor_no_storage,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch.serialization", "_get_layout"): _get_layout,
        ("torch._utils", "_rebuild_sparse_tensor"): rebuild_sparse_tensor,
        ("torch", "Tensor"): Tensor,
        ("torch.nn.parameter", "Parameter"): Parameter,
        ("torch", "Size"): Size,
        ("torch", "device"): _device,
        ("torch", "UntypedStorage"): _UNTYPED_STORAGE,
        ("torch.storage", "UntypedStorage"): _UNTYPED_STORAGE,  # listed last: the spelling lantern.save writes
    }
    for d in (*dt.ALL, *QUANTIZED):
        names[("torch", d.name)] = d
        names[("torch", d.legacy + "Storage")] = _STORAGE_TYPES[d]
    names.update({("torch", scheme.name): scheme for scheme in QSCHEMES.values()})
    names[("torch._utils", "_rebuild_qtensor")] = _rebuild_qtensor
    return names


def _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad, backward_hooks):
    """torch._utils._rebuild_qtensor: a quantized tensor over a loaded storage (lantern.backends.quantized_checkpoint)."""
    return rebuild_qtensor(_typed(storage), storage_offset, size, stride, quantizer_params, requires_grad,
                           backward_hooks, _checked_quantized_geometry)


def _checked_quantized_geometry(storage, offset, size, stride, dtype):
    size, stride, offset = _ints(size, "size"), _ints(stride, "stride"), _ints((offset,), "storage offset")[0]
    packed = dtype.elements_per_byte > 1
    if packed and (offset or stride != contiguous_strides(size)):
        raise RuntimeError(f"invalid {dtype.name} tensor in checkpoint: packed elements must be contiguous")
    _check_bounds(storage, offset, (dtype.storage_bytes(math.prod(size)),) if packed else size, (1,) if packed else stride,
                  dtype)
    return size, stride, offset


_NAMES = {}     # (module, name) -> object, filled on first use (Parameter lives in lantern.nn, imported later)
_SPELLING = {}  # id(object) -> (module, name): how lantern.save writes it


def _names():
    if not _NAMES:
        _NAMES.update(_torch_names())
        _SPELLING.update({id(obj): key for key, obj in _NAMES.items()})
        # written as torch writes it (a checkpoint holding torch.__version__ loads in torch), but not allowed in a
        # weights-only load, where torch also refuses it unless the user allows it
        _SPELLING[id(TorchVersion)] = ("torch.torch_version", "TorchVersion")
    return _NAMES


def _bytearray(source=b"", encoding=None):
    """builtins.bytearray as a checkpoint may call it (from bytes, or a str and its encoding, as pickle writes it):
    never from a count, which would let a few bytes of file allocate any amount of memory."""
    if not isinstance(source, (bytes, str)):
        raise pickle.UnpicklingError(f"bytearray in a checkpoint must be built from bytes, got {type(source)}")
    return bytearray(source, encoding) if encoding is not None else bytearray(source)


_SAFE_BUILTINS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,
    ("_codecs", "encode"): codecs.encode,  # protocol 2 writes bytes as _codecs.encode(str, 'latin1')
    ("builtins", "bytearray"): _bytearray,
    ("builtins", "set"): set,
    ("builtins", "complex"): complex,
}


# ---- user-allowed globals -------------------------------------------------------------------------------------------

_safe_globals = []


def add_safe_globals(safe_globals):
    """Allow these classes/functions (or (obj, "module.name") pairs) in weights_only loads, for this process."""
    _safe_globals.extend(safe_globals)


def get_safe_globals():
    return list(_safe_globals)


def clear_safe_globals():
    _safe_globals.clear()


class safe_globals:
    """Allow these globals in weights_only loads inside the `with` block only (a class, as torch's is)."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._before = len(_safe_globals)
        _safe_globals.extend(self.safe_globals)

    def __exit__(self, *exc):
        del _safe_globals[self._before:]


def _user_globals():
    """(module, name) -> object for the user's safe globals; a lantern class is also allowed under torch's spelling
    of its path (lantern.nn.modules.linear.Linear answers for torch.nn.modules.linear.Linear)."""
    allowed = {}
    for entry in _safe_globals:
        if isinstance(entry, tuple):
            obj, name = entry
            allowed[tuple(name.rsplit(".", 1))] = obj
            continue
        module = entry.__module__
        allowed[(module, entry.__qualname__)] = entry
        if module == "lantern" or module.startswith("lantern."):
            allowed[("torch" + module[len("lantern"):], entry.__qualname__)] = entry
    return allowed


# ---- save -----------------------------------------------------------------------------------------------------------

class _TorchPickler(pickle._Pickler):
    """A pickler that writes tensors, storages, dtypes and devices under torch's names.

    The pure-Python pickler is used because the C one insists that a global's module be importable and hold the
    very object pickled, while data.pkl must name `torch._utils` and lantern never imports torch."""

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        _names()
        self._parameter = Parameter
        self.storages = {}       # key -> storage, in the order data/<key> records are written
        self._keys = {}          # id(storage) -> key
        self._dtypes = {}        # id(storage) -> dtype it is saved as

    def persistent_id(self, obj):
        cls = type(obj)
        if cls is _TypedStorage:
            storage, dtype, storage_type = obj.storage, obj.dtype, _STORAGE_TYPES[obj.dtype]
        elif cls is UntypedStorage:
            storage, dtype, storage_type = obj, dt.uint8, _UNTYPED_STORAGE
        else:
            return None
        sid = id(storage)
        seen = self._dtypes.setdefault(sid, dtype)
        if seen is not dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types")
        key = self._keys.get(sid)
        if key is None:
            key = self._keys[sid] = str(len(self._keys))
            self.storages[key] = storage
        return ("storage", storage_type, key, _location(storage.device), storage.nbytes() // dtype.itemsize)

    def reducer_override(self, obj):
        cls = type(obj)
        if cls is dt.dtype or cls is QuantizedDtype or cls is qscheme:
            return obj.name
        if cls is StorageType:
            return _SPELLING[id(obj)][1]
        if cls is _device:
            return (_device, (str(obj),))
        if cls is layout:
            return (_get_layout, (f"torch.{obj.name}",))
        if isinstance(obj, TensorImpl):
            return self._reduce_tensor(obj)
        return NotImplemented

    def _reduce_tensor(self, t):
        if t.layout is not strided:
            return reduce_sparse_tensor(t)
        if t.is_quantized:
            args = (_TypedStorage(t._storage, t.dtype), t._offset, tuple(t._size), tuple(t._stride),
                    quantizer_params(t), False, collections.OrderedDict())
            return (_rebuild_qtensor, args)
        if getattr(t._storage, "holds_tensors", False):   # made of other tensors (a MaskedTensor): they pickle
            return t.__reduce_ex__(2)
        state = {k: v for k, v in t.__dict__.items() if k not in TensorImpl.__dict__}
        if isinstance(t, self._parameter):
            state.pop("_is_param", None)
            data = make_tensor(t._storage, t._size, t._stride, t._offset, t.dtype, t._backend)
            if state:
                return (_rebuild_parameter_with_state, (data, t.requires_grad, collections.OrderedDict(), state))
            return (_rebuild_parameter, (data, t.requires_grad, collections.OrderedDict()))
        if t.device.type == "meta":
            args = (t.dtype, tuple(t._size), tuple(t._stride), t.requires_grad)
            return (_rebuild_meta_tensor_no_storage, args)
        args = (_TypedStorage(t._storage, t.dtype), t._offset, tuple(t._size), tuple(t._stride), t.requires_grad,
                collections.OrderedDict())
        metadata = tensor_metadata(t)
        if metadata:  # a conjugate or negative view: its memory as stored, and the bits to read it through
            args += (metadata,)
        if state or type(t) is not Tensor:  # a subclass pickles by reference to its class, as in torch
            return (_rebuild_from_type_v2, (_rebuild_tensor_v2, type(t), args, state))
        return (_rebuild_tensor_v2, args)

    dispatch = dict(pickle._Pickler.dispatch)
    dispatch[types.FunctionType] = lambda self, obj: self.save_global(obj)  # the base table bypasses overrides

    def save_global(self, obj, name=None):
        spelled = _SPELLING.get(id(obj))
        if spelled is None:
            return super().save_global(obj, name)
        module, name = spelled
        self.write(pickle.GLOBAL + module.encode() + b"\n" + name.encode() + b"\n")
        self.memoize(obj)


def _location(dev):
    if dev.type == "cuda":
        return f"cuda:{dev.index or 0}"
    return dev.type


def _storage_bytes(storage):
    data = storage._data
    if data is None:
        return memoryview(b"")
    if not isinstance(data, np.ndarray):
        data = data.get()  # a CuPy buffer: copy to the host
    return memoryview(data[:storage.nbytes()])


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Write `obj` to `f` (a path or a writable binary file) in PyTorch's zip checkpoint format (the legacy format
    with _use_new_zipfile_serialization=False)."""
    if pickle_module is not pickle:
        raise NotImplementedError("lantern.save pickles with the standard pickle module only (it must spell "
                                  "torch's names in data.pkl)")
    if pickle_protocol < 2:
        raise ValueError(f"lantern.save needs pickle protocol >= 2, got {pickle_protocol}")
    if not _use_new_zipfile_serialization:
        from ._legacy_checkpoint import save_legacy  # cycle: _legacy_checkpoint imports serialization
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as fh:
                return save_legacy(obj, fh, pickle_protocol)
        return save_legacy(obj, f, pickle_protocol)
    data = io.BytesIO()
    pickler = _TorchPickler(data, pickle_protocol)
    pickler.dump(obj)
    if isinstance(f, (str, os.PathLike)):
        prefix = pathlib.Path(f).stem or "archive"
        with open(f, "wb") as fh:
            _write_archive(fh, prefix, data.getvalue(), pickler.storages, _disable_byteorder_record)
    else:
        _write_archive(f, "archive", data.getvalue(), pickler.storages, _disable_byteorder_record)


def _write_archive(fh, prefix, pkl, storages, no_byteorder):
    records = [("data.pkl", pkl), (".format_version", b"1"), (".storage_alignment", str(_ALIGNMENT).encode())]
    if not no_byteorder:
        records.append(("byteorder", sys.byteorder.encode()))
    records += [(f"data/{key}", _storage_bytes(s)) for key, s in storages.items()]
    records += [("version", f"{_FORMAT_VERSION}\n".encode()),
                (".data/serialization_id", "".join(random.choices("0123456789", k=40)).encode())]
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        for name, payload in records:
            _write_record(zf, f"{prefix}/{name}", payload)


def _write_record(zf, name, payload):
    """One stored record whose payload starts at a multiple of 64 bytes (padding in an 'FB' extra field)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    size = len(payload)
    info.file_size = size
    zip64 = size * 1.05 > zipfile.ZIP64_LIMIT  # zipfile adds a 20-byte zip64 field to the header in this case
    start = zf.fp.tell() + 30 + len(name.encode()) + (20 if zip64 else 0) + 4
    pad = -start % _ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    with zf.open(info, "w") as out:
        out.write(payload)


# ---- load -----------------------------------------------------------------------------------------------------------

def _resolve_global(module, name, extra_globals=None):
    """The object a weights-only checkpoint may name as `module.name`: torch's names of lantern objects, the safe
    builtins, the user's safe globals (`extra_globals(module, name)` first: lantern.jit.load's `__torch__` classes);
    anything else raises the UnpicklingError that torch.load's message is built around."""
    key = (module, name)
    obj = extra_globals(module, name) if extra_globals is not None else None
    if obj is None:
        obj = _names().get(key)
    if obj is None:
        obj = _SAFE_BUILTINS.get(key)
    if obj is None:
        obj = _user_globals().get(key)
    if obj is not None:
        return obj
    if module == "torch" or module.startswith("torch."):
        raise pickle.UnpicklingError(f"this checkpoint uses {module}.{name}, which lantern does not implement "
                                     "(lantern loads dense strided tensors and parameters)")
    shown = name if module == "builtins" else f"{module}.{name}"
    raise pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
        f"`torch.serialization.add_safe_globals([{shown}])` or the `torch.serialization.safe_globals([{shown}])` "
        "context manager to allowlist this global if you trust this class/function.")


def _weights_only_message(message):
    """torch.load's wrapping of a weights-only refusal (torch.serialization's _get_wo_message, same gist)."""
    if "was not an allowed global by default" in message:
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, \033[1mdo "
                f"those steps only if you trust the source of the checkpoint\033[0m. \n\t(1) {_UNSAFE_MESSAGE}\n\t(2) "
                "Alternatively, to load with `weights_only=True` please check the recommended steps in the following "
                f"error message.\n\tWeightsUnpickler error: {message}{_DOCS_MESSAGE}")
    text = f"Weights only load failed. {_UNSAFE_MESSAGE}\n"
    if "is blocked" not in message:
        text += ("Please file an issue with the following so that we can make `weights_only=True` compatible with "
                 "your use case: WeightsUnpickler error: ")
    return f"{text}\n\n{message}{_DOCS_MESSAGE}"


_UNSAFE_MESSAGE = ("In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from "
                   "`False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
                   "but it can result in arbitrary code execution. Do it only if you got the file from a trusted "
                   "source.")
_DOCS_MESSAGE = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
                 "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


class _FullUnpickler(pickle.Unpickler):
    """weights_only=False: Python's unpickler (it runs whatever the file names, as torch's does), with torch's names
    mapped onto lantern's."""

    def __init__(self, file, persistent_load, **kwargs):
        super().__init__(file, **kwargs)
        self._persistent = persistent_load

    def find_class(self, module, name):
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        obj = _names().get((module, name))
        if obj is not None:
            return obj
        if module == "torch" or module.startswith("torch."):
            lantern_module = "lantern" + module[len("torch"):]
            try:
                return super().find_class(lantern_module, name)
            except (ImportError, AttributeError):
                raise ModuleNotFoundError(f"this checkpoint needs {module}.{name}, which lantern does not "
                                          f"implement (looked for {lantern_module}.{name})") from None
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if self._persistent is None:
            raise pickle.UnpicklingError("unsupported persistent id encountered")
        return self._persistent(pid)


def _unpickler(file, weights_only, persistent_load, pickle_load_args=None, extra_globals=None):
    """The unpickler for one pickle of a checkpoint: the weights-only one (lantern._weights_only_unpickler) or, with
    weights_only=False, Python's. persistent_load(pid) gets each ('storage', ...) persistent id."""
    args = dict(pickle_load_args or {})
    if not weights_only:
        return _FullUnpickler(file, persistent_load, **args)
    return Unpickler(file, lambda module, name: _resolve_global(module, name, extra_globals), persistent_load,
                     encoding=args.get("encoding", "utf-8"))


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Read a checkpoint written by `torch.save` or `lantern.save` (zip or legacy format) from a path or binary file.

    map_location: None (where each storage was saved), a device or string, a dict {saved location: new}, or a
    callable(storage, location) returning a storage (or None for the default). What a load guarantees about
    hostile and damaged files is written up in docs/checkpoints.md."""
    weights_only = _weights_only_from_environment(weights_only, pickle_module)
    if pickle_module is not None and weights_only:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_file(fh, os.fspath(f) if mmap else None, map_location, weights_only, pickle_load_args)
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    return _load_file(f, None, map_location, weights_only, pickle_load_args)


def _weights_only_from_environment(weights_only, pickle_module):
    """load's weights_only: the caller's; when not given, the safe default unless the caller brings their own pickle
    module. TORCH_FORCE_WEIGHTS_ONLY_LOAD=1 forces it on; TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 turns it off where the
    caller did not pass it (with torch's warning), as torch's load does."""
    true_values = ("1", "y", "yes", "true")
    force_on = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    force_off = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    if force_on and force_off:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should "
                           "be set, but both were set.")
    if force_on:
        return True
    if weights_only is not None:
        return weights_only
    if force_off:
        user_warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `torch.load`, forcing weights_only=False.", UserWarning,
                      stacklevel=3)
        return False
    return pickle_module is None


def _load_file(fh, mmap_path, map_location, weights_only, pickle_load_args):
    start = fh.tell()
    magic = fh.read(4)
    fh.seek(start)
    try:
        if magic == b"PK\x03\x04":
            with _open_zip(fh) as zf:
                return _load_zip(zf, fh, mmap_path, map_location, weights_only, pickle_load_args)
        if mmap_path:
            raise RuntimeError("mmap can only be used with files saved with `torch.save(_use_new_zipfile_"
                               "serialization=True), please torch.save your checkpoint with this option in order to "
                               "use mmap.")
        from ._legacy_checkpoint import load_legacy  # cycle: _legacy_checkpoint imports serialization
        return load_legacy(fh, lambda f, persistent: _unpickler(f, weights_only, persistent, pickle_load_args),
                           map_location)
    except pickle.UnpicklingError as e:
        if not weights_only:
            raise
        raise pickle.UnpicklingError(_weights_only_message(str(e))) from None


@contextlib.contextmanager
def _open_zip(fh):
    """zipfile.ZipFile over `fh`; a damaged archive raises RuntimeError (torch's PytorchStreamReader errors)."""
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, struct.error, OverflowError) as e:
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: failed finding central directory "
                           f"({e}); the file is damaged or truncated") from None
    with zf:
        yield zf


class _Archive:
    """The records of a checkpoint's zip, found under its one top folder ('archive/', or the saved file's stem)."""

    def __init__(self, zf, fh):
        self.zf, self.fh = zf, fh
        self.infos = {i.filename: i for i in zf.infolist()}
        if not self.infos:
            raise RuntimeError("[enforce fail at inline_container.cc] archive does not contain any files")
        first = next(iter(self.infos))
        if "/" not in first:
            raise RuntimeError(f"file in archive is not in a subdirectory: {first}")
        self.prefix = first.split("/", 1)[0] + "/"
        self.data_end = zf.start_dir  # records lie before the central directory

    def has(self, name):
        return self.prefix + name in self.infos

    def info(self, name):
        info = self.infos.get(self.prefix + name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found")
        return info

    def read(self, name):
        info = self.info(name)
        try:
            return self.zf.read(info)
        except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError, struct.error, OSError) as e:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: {e}") from None

    def payload_start(self, name, info):
        """Where a stored record's bytes begin in the file, after checking its local header and that the bytes
        are all there."""
        self.fh.seek(info.header_offset)
        header = self.fh.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: invalid header or archive is "
                               "corrupted")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        begin = info.header_offset + 30 + name_len + extra_len
        if begin + info.file_size > self.data_end:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: the record reaches past the end of "
                               "the data (into the central directory or beyond the file: truncated or damaged)")
        return begin


def _load_zip(zf, fh, mmap_path, map_location, weights_only, pickle_load_args):
    archive = _Archive(zf, fh)
    if archive.has("constants.pkl"):
        raise RuntimeError(f"{getattr(fh, 'name', 'this file')} is a TorchScript archive (did you mean to use "
                           "torch.jit.load()?); lantern.load reads torch.save checkpoints")
    byteorder = archive.read("byteorder") if archive.has("byteorder") else b"little"
    if byteorder not in (b"little", b"big"):
        raise ValueError("Unknown endianness type: " + byteorder.decode("utf-8", "replace"))
    pkl = archive.read("data.pkl")
    whole = np.memmap(mmap_path, dtype=np.uint8, mode="c") if mmap_path else None
    reader = _StorageReader(archive, "data/", map_location, byteorder.decode(), whole)
    data = _unpickler(io.BytesIO(pkl), weights_only, reader.persistent_load, pickle_load_args)
    return reader.finish(data.load)


def _allocate(nbytes):
    try:
        return UntypedStorage(nbytes)
    except MemoryError:
        raise RuntimeError(f"DefaultCPUAllocator: not enough memory: you tried to allocate {nbytes} bytes.") from None


def _storage_record(pid, fields):
    """(dtype, key, location, numel, extra) of a ('storage', storage_type, key, location, numel, ...) persistent id,
    every field checked: `fields` is how many the format has (5 in zip checkpoints, 6 in legacy ones)."""
    if type(pid) is not tuple or not pid or _ascii(pid[0]) != "storage":
        raise RuntimeError(f"Unknown typename for persistent_load, expected 'storage' but got {pid!r:.60}")
    if len(pid) != fields:
        raise RuntimeError(f"invalid storage record in checkpoint: expected {fields} fields, got {len(pid)}")
    storage_type, key, location, numel = pid[1:5]
    if type(storage_type) is not StorageType or _SPELLING.get(id(storage_type)) is None:
        raise RuntimeError(f"invalid storage record in checkpoint: {storage_type!r:.60} is not a storage type")
    key, location = _ascii(key), _ascii(location)
    if type(key) is not str or type(location) is not str:
        raise RuntimeError("invalid storage record in checkpoint: the key and location must be strings")
    if type(numel) is not int or numel < 0:
        raise RuntimeError(f"invalid storage record in checkpoint: element count {numel!r:.40}")
    return storage_type, key, location, numel, pid[5:]


class _StorageReader:
    """Gives data.pkl (or lantern.jit's constants.pkl) its storages: each record under `folder` read once, its size
    checked against the persistent id before any memory is allocated, filled completely from the file (never
    handed out partly uninitialised), byte-swapped if the archive says so, placed as map_location says."""

    def __init__(self, archive, folder, map_location, byteorder="little", whole=None):
        self.archive, self.folder, self.byteorder, self.whole = archive, folder, byteorder, whole
        self.map_location = map_location
        self.restore = _restorer(map_location)
        self.loaded = {}

    def persistent_load(self, pid):
        storage_type, key, location, numel, _ = _storage_record(pid, 5)
        dtype = storage_type.dtype
        storage = self.loaded.get(key)
        if storage is None:
            storage = self.loaded[key] = self._load(key, location, numel, dtype)
        return storage if storage_type is _UNTYPED_STORAGE else _TypedStorage(storage, dtype)

    def _load(self, key, location, numel, dtype):
        name = self.folder + key
        info = self.archive.info(name)
        nbytes = numel * dtype.itemsize
        if info.file_size != nbytes:
            raise RuntimeError(f"record size ({info.file_size} bytes) does not match expected size ({nbytes} bytes = "
                               f"{numel} elements * {dtype.itemsize} bytes/element) for dtype {dtype}")
        target = self.restore(location)
        if target is not None and target.type == "meta":
            return UntypedStorage(nbytes, device="meta")
        storage = self._read(name, info, nbytes)
        if self.byteorder != sys.byteorder and dtype.itemsize > 1:
            storage._data[:nbytes].view(dtype.np).byteswap(inplace=True)
        try:
            return _place(storage, location, target, self.map_location)
        except RuntimeError as e:  # e.g. no CUDA: say which storage and how to load it elsewhere
            raise _PlacementError(e, location) from None

    def _read(self, name, info, nbytes):
        """A CPU storage holding the record's bytes: a window on the mmap, read straight from the file into the new
        storage (a stored record), or through zipfile (decompressing, or for a file object without readinto)."""
        archive = self.archive
        if info.compress_type == zipfile.ZIP_STORED:
            begin = archive.payload_start(name, info)
            if self.whole is not None:
                return UntypedStorage._wrap(self.whole[begin:begin + nbytes], _device("cpu"))
            if hasattr(archive.fh, "readinto"):
                storage = _allocate(nbytes)
                archive.fh.seek(begin)
                _fill(storage, nbytes, archive.fh.readinto, name)
                return storage
        elif nbytes > info.compress_size * 1100 + 1024:  # deflate expands at most ~1032x: the size is a lie
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: its size {nbytes} cannot come "
                               f"from {info.compress_size} compressed bytes")
        storage = _allocate(nbytes)
        try:
            with archive.zf.open(info) as src:
                _fill(storage, nbytes, src.readinto, name)
        except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError, struct.error, OSError) as e:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: {e}") from None
        return storage

    def finish(self, load):
        """Run the unpickler's `load`, turning a placement failure into torch's error that names the location."""
        try:
            return load()
        except _PlacementError as e:
            raise RuntimeError(f"{e.error} (while loading a storage saved on '{e.location}'; pass "
                               "map_location='cpu' to lantern.load to load it on the CPU)") from None


def _fill(storage, nbytes, readinto, name):
    """Read exactly nbytes into the storage, or raise: memory that the file did not fill is never handed out."""
    buf = memoryview(storage._data[:nbytes]) if nbytes else memoryview(b"")
    done = 0
    while done < nbytes:
        n = readinto(buf[done:])
        if not n:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: unexpected end of data "
                               f"({nbytes - done} of {nbytes} bytes missing); the file is damaged or truncated")
        done += n


class _PlacementError(Exception):
    def __init__(self, error, location):
        super().__init__(str(error))
        self.error, self.location = error, location


def _restorer(map_location):
    """location string -> the device it should be loaded on (None: run a callable map_location)."""
    if map_location is None:
        return _device
    if isinstance(map_location, (str, _device)):
        target = _device(map_location)
        return lambda location: target
    if isinstance(map_location, dict):
        return lambda location: _device(map_location.get(location, location))
    if callable(map_location):
        return lambda location: None
    raise ValueError(f"map_location should be a str, a device, a dict or a callable, got {type(map_location)}")


def _place(storage, location, target, map_location):
    """Move a freshly read CPU storage to the device it belongs on."""
    if target is None:  # a callable map_location
        result = map_location(storage, location)
        if result is not None:
            return result if isinstance(result, UntypedStorage) else result.untyped_storage()
        target = _device(location)
    if target.type == "cpu":
        return storage
    _check_reachable(target)
    flat = make_tensor(storage, (storage.nbytes(),), (1,), 0, dt.uint8, backend_for_device(storage.device))
    return flat.to(target)._storage


def _check_reachable(target):
    """torch's error when a checkpoint asks for a device this process cannot use."""
    try:
        backend_for_device(target)
    except Exception:
        raise RuntimeError(f"Attempting to deserialize object on a {target.type.upper()} device but "
                           f"torch.{target.type}.is_available() is False. If you are running on a CPU-only machine, "
                           "please use torch.load with map_location=torch.device('cpu') to map your storages to the "
                           "CPU.") from None
