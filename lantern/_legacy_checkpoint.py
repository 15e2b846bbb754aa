"""Legacy checkpoints: what `torch.save(obj, f, _use_new_zipfile_serialization=False)` writes (and torch < 1.6 did).

The file is five pickles in a row, then the storages' bytes:
  MAGIC_NUMBER, PROTOCOL_VERSION (1001), a sys_info dict,
  the object (each storage a persistent id ('storage', <torch.FloatStorage>, key, location, numel, view)),
  the sorted list of storage keys,
  then per key: the element count as a little-endian int64 and that many elements, little-endian.
Every pickle goes through the unpickler `lantern.load` chose (the weights-only one by default), storages are
allocated only after their size is checked against what is left of the file, and every storage must be filled from
the file before the object is returned. The older tar layout (PyTorch < 0.4) is refused, and a callable
map_location is not called (each storage loads where it was saved, or on the CPU).

>>> import io, pickle
>>> buf = io.BytesIO()
>>> for part in (MAGIC_NUMBER, PROTOCOL_VERSION, {"little_endian": True}, {"answer": 42}, []):
...     pickle.dump(part, buf, protocol=2)
>>> _ = buf.seek(0)
>>> lantern.load(buf)
{'answer': 42}
"""
import os
import pickle
import struct
import sys

import numpy as np

from . import serialization as ser
from ._weights_only_unpickler import _ascii
from .core.device import device as _device
from .core.storage import UntypedStorage

__all__ = ["load_legacy", "save_legacy", "MAGIC_NUMBER", "PROTOCOL_VERSION"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_SYS_INFO = {"protocol_version": PROTOCOL_VERSION, "little_endian": True,
             "type_sizes": {"short": 2, "int": 4, "long": 4}}  # what torch records (its C type sizes)


class _LegacyPickler(ser._TorchPickler):
    """lantern.save's pickler with the legacy persistent id: one more field, the (always empty) view record."""

    def persistent_id(self, obj):
        pid = super().persistent_id(obj)
        return None if pid is None else pid + (None,)


def save_legacy(obj, fh, protocol):
    """Write `obj` to the binary file `fh` in the legacy layout, as torch.save(..., _use_new_zipfile_serialization=
    False) does: the pickles, then each storage's element count and little-endian bytes, keys in sorted order."""
    for part in (MAGIC_NUMBER, PROTOCOL_VERSION, _SYS_INFO):
        pickle.dump(part, fh, protocol=protocol)
    pickler = _LegacyPickler(fh, protocol)
    pickler.dump(obj)
    keys = sorted(pickler.storages)
    pickle.dump(keys, fh, protocol=protocol)
    for key in keys:
        storage = pickler.storages[key]
        dtype = pickler._dtypes[id(storage)]
        data = ser._storage_bytes(storage)
        if sys.byteorder != "little" and dtype.itemsize > 1:
            data = np.frombuffer(data, dtype.np).byteswap().tobytes()
        fh.write(struct.pack("<q", storage.nbytes() // dtype.itemsize))
        fh.write(data)


def load_legacy(fh, new_unpickler, map_location):
    """Read a legacy checkpoint from `fh` (positioned at its start). new_unpickler(file, persistent_load) makes the
    unpickler for one of its pickles."""
    start = fh.tell()
    fh.seek(0, os.SEEK_END)
    end = fh.tell()
    fh.seek(start)
    head = fh.read(262)
    fh.seek(start)
    if head[257:262] == b"ustar":
        raise RuntimeError("this is a legacy checkpoint in the tar layout of PyTorch < 0.4, which lantern does not "
                           "read; load it with torch and re-save it with torch.save")
    if new_unpickler(fh, None).load() != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol = new_unpickler(fh, None).load()
    if protocol != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {protocol}")
    new_unpickler(fh, None).load()  # sys_info: the writer's byte order and C type sizes; the data is little-endian
    storages = _LegacyStorages(fh, end, map_location)
    result = new_unpickler(fh, storages.persistent_load).load()
    keys = new_unpickler(fh, None).load()
    if type(keys) is not list or not all(type(k) is str for k in keys):
        raise RuntimeError("invalid legacy checkpoint: the storage key list is not a list of strings")
    storages.fill(keys)
    return result


class _LegacyStorages:
    """The storages the object's persistent ids name: made when first named (size checked against the bytes left in
    the file), filled in key order once the object is unpickled."""

    def __init__(self, fh, end, map_location):
        self.fh, self.end = fh, end
        self.restore = ser._restorer(map_location)
        self.map_location = map_location
        self.records = {}   # key -> (storage, dtype); storage None for a meta target (no data is kept)
        self.reserved = 0   # bytes the records named so far need from the rest of the file

    def persistent_load(self, pid):
        if type(pid) is tuple and len(pid) == 4 and _ascii(pid[0]) == "module":
            return pid[1]  # a whole module's class (weights_only=False only: the weights-only unpickler refuses it)
        storage_type, key, location, numel, (view,) = ser._storage_record(pid, 6)
        if view is not None:
            raise RuntimeError("this legacy checkpoint stores views of storages (written by PyTorch < 1.x), which "
                               "lantern does not read")
        dtype = storage_type.dtype
        if key not in self.records:
            self.records[key] = (self._new(key, location, numel * dtype.itemsize), dtype)
        storage, _ = self.records[key]
        return storage if storage_type is ser._UNTYPED_STORAGE else ser._TypedStorage(storage, dtype)

    def _new(self, key, location, nbytes):
        target = self.restore(location)
        if target is None:  # a callable map_location: torch hands it the (not yet filled) storage too
            target = _device(location)
        if target.type == "meta":
            return UntypedStorage(nbytes, device="meta")
        if target.type != "cpu":
            ser._check_reachable(target)
            raise RuntimeError(f"lantern reads legacy checkpoints onto the CPU (this one asks for {target}): load "
                               "with map_location='cpu', then move the tensors")
        self.reserved += nbytes + 8
        if self.reserved > self.end - self.fh.tell():
            raise RuntimeError(f"invalid legacy checkpoint: storage {key} needs {nbytes} bytes, more than the file "
                               "holds")
        return ser._allocate(nbytes)

    def fill(self, keys):
        if set(keys) != set(self.records) or len(keys) != len(set(keys)):
            raise RuntimeError("invalid legacy checkpoint: the storage key list does not match the storages the "
                               "object uses")
        for key in keys:
            storage, dtype = self.records[key]
            count = self.fh.read(8)
            if len(count) != 8:
                raise RuntimeError(f"unexpected EOF, expected {8 - len(count)} more bytes. The file might be "
                                   "corrupted.")
            numel = struct.unpack("<q", count)[0]
            if numel * dtype.itemsize != storage.nbytes():
                raise RuntimeError(f"storage has wrong byte size: expected {storage.nbytes()} got "
                                   f"{numel * dtype.itemsize}")
            if storage.device.type == "meta":
                self.fh.seek(storage.nbytes(), os.SEEK_CUR)
                continue
            try:
                ser._fill(storage, storage.nbytes(), self.fh.readinto, f"storage {key}")
            except RuntimeError:
                raise RuntimeError(f"unexpected EOF: the data of storage {key} is cut short. The file might be "
                                   "corrupted.") from None
            if sys.byteorder != "little" and dtype.itemsize > 1:
                storage._data[:storage.nbytes()].view(dtype.np).byteswap(inplace=True)
