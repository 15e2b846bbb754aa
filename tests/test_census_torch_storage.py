"""TypedStorage and the legacy storage classes (torch.FloatStorage, ...), Tensor.storage() and storage_type(),
compared with torch: what each holds, sharing with tensors, conversions, errors. The legacy class list comes from
torch's namespace."""
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import check, raises_like

warnings.filterwarnings("ignore", message="TypedStorage is deprecated")


def _torch_legacy_storages():
    return sorted(n for n in dir(torch) if n.endswith("Storage") and isinstance(getattr(torch, n), type)
                  and n not in ("Storage", "TypedStorage", "UntypedStorage") and not n.startswith("_")
                  and getattr(getattr(torch, n), "dtype", None) is not None
                  and str(getattr(torch, n).dtype).replace("torch.", "") in
                  {d.name for d in lantern.core.dtype.ALL})


def _parts(s):
    """What a storage is, comparable across the libraries."""
    return (type(s).__name__, s.dtype, s.size(), len(s), s.nbytes(), s.element_size(), s.tolist(), s.type())


def test_every_legacy_storage_of_a_lantern_dtype_is_here():
    names = _torch_legacy_storages()
    assert {"FloatStorage", "DoubleStorage", "LongStorage", "BoolStorage"} <= set(names)
    assert [n for n in names if not hasattr(lantern, n)] == []


@pytest.mark.parametrize("name", _torch_legacy_storages())
def test_legacy_storage_classes(name):
    def run(lib):
        cls = getattr(lib, name)
        made = [cls(), cls(3), cls([1, 0, 1]), cls(wrap_storage=lib.ones(2, dtype=cls.dtype).untyped_storage())]
        return [(_parts(s) if i != 1 else s.size()) for i, s in enumerate(made)], cls.dtype, \
            [isinstance(s, cls) for s in made], isinstance(made[0], lib.TypedStorage)
    check(run)


def test_tensor_storage_shares_memory():
    def run(lib, x):
        view = x[:, 1:]
        s = view.storage()
        s[0] = 9
        s[-1] = 7
        return (_parts(s), x, s.untyped() is x.untyped_storage(), s.data_ptr() == x.untyped_storage().data_ptr(),
                view.storage_type().__name__, lib.is_storage(s), s[1], list(s))
    check(run, np.arange(6.0).reshape(2, 3))


def test_typed_storage_constructor():
    def run(lib):
        made = [lib.TypedStorage([1, 2], dtype=lib.int32), lib.TypedStorage(), lib.TypedStorage(4, dtype=lib.int16),
                lib.TypedStorage(wrap_storage=lib.UntypedStorage(7), dtype=lib.int32)]
        return [(s.dtype, s.size()) for s in made], _parts(made[0])
    check(run)
    raises_like(lambda lib: lib.TypedStorage(wrap_storage=lib.UntypedStorage(8)))
    raises_like(lambda lib: lib.FloatStorage([1, 2], dtype=lib.int64))
    raises_like(lambda lib: lib.FloatStorage(2, 3))
    raises_like(lambda lib: lib.FloatStorage("ab"))


def test_element_access_and_writes():
    def run(lib):
        s = lib.FloatStorage([1, 2, 3])
        s[0:2] = 5
        filled = lib.DoubleStorage(2).fill_(7)
        copied = lib.FloatStorage(3).copy_(s)
        clone = s.clone()
        clone[0] = -1
        s.resize_(5)
        return s.size(), s.tolist()[:3], _parts(filled), _parts(copied), _parts(clone), s.is_shared(), s.is_cuda
    check(run)
    raises_like(lambda lib: lib.FloatStorage([1, 2])[0:1])
    raises_like(lambda lib: lib.FloatStorage([1, 2])[2])
    raises_like(lambda lib: lib.FloatStorage([1, 2])[-3])


def test_conversions():
    def run(lib):
        s = lib.FloatStorage([1.5, -2.0, 0.0])
        converted = [s.double(), s.float(), s.half(), s.long(), s.int(), s.short(), s.char(), s.byte(), s.bool(),
                     s.complex_float(), s.complex_double(), s.bfloat16(), s.cpu()]
        return [_parts(c) for c in converted], s.float().data_ptr() == s.data_ptr(), s.cpu().data_ptr() == s.data_ptr()
    check(run)
    raises_like(lambda lib: lib.FloatStorage([1.0]).type("torch.DoubleStorage"))


def test_from_buffer_and_set():
    check(lambda lib: (lib.FloatStorage.from_buffer(b"\x00\x00\x80\x3f", "native").tolist(),
                       lib.IntStorage.from_buffer(b"\x00\x00\x00\x02", "big").tolist(),
                       lib.tensor([], dtype=lib.float32).set_(lib.FloatStorage([1, 2]))))
