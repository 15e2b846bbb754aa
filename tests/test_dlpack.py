"""torch.utils.dlpack against torch: NumPy <-> tensor round trips share memory as torch's do, capsules from
to_dlpack, strides kept, dtypes, the device enum and the export errors."""
import numpy as np
import pytest
import torch
import torch.utils.dlpack

import lantern
import lantern.utils.dlpack
from nn_oracle import same_error


def _round_trips(lib):
    """Writes through each pair of objects that should share memory, and what each side then reads."""
    array = np.arange(12.0).reshape(3, 4)[:, ::2]            # non-contiguous
    t = lib.from_dlpack(array)
    t[0, 0] = 100
    back = np.from_dlpack(t)
    back[1, 1] = 200
    via_capsule = lib.utils.dlpack.from_dlpack(lib.utils.dlpack.to_dlpack(t))
    via_capsule[2, 0] = 300
    from_tensor = lib.from_dlpack(t)
    from_tensor[2, 1] = 400
    copied = lib.from_dlpack(array, copy=True)
    copied[0, 1] = -1
    return [array.tolist(), t.tolist(), t.stride(), str(t.dtype).split(".")[1], back.tolist(), copied.tolist(),
            tuple(t.__dlpack_device__())]


def test_round_trips_share_memory_as_torch():
    assert _round_trips(lantern) == _round_trips(torch)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                                   "float64", "complex64", "complex128"])
def test_dtypes(dtype):
    array = np.ones((2, 3), dtype=dtype)
    theirs, ours = torch.from_dlpack(array), lantern.from_dlpack(array)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert np.from_dlpack(ours).dtype == np.from_dlpack(theirs).dtype


def test_device_enum_matches_torch():
    assert {e.name: e.value for e in lantern.utils.dlpack.DLDeviceType} == \
        {e.name: e.value for e in torch.utils.dlpack.DLDeviceType}
    assert lantern.utils.dlpack.__all__ == torch.utils.dlpack.__all__


ERRORS = {
    "requires grad": lambda lib: lib.ones(3, requires_grad=True).__dlpack__(),
    "conjugate": lambda lib: lib.ones(2, dtype=lib.complex64).conj().__dlpack__(),
    "not a capsule": lambda lib: lib.from_dlpack(object()),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    same_error(ERRORS[name])


def test_to_dlpack_detaches():
    capsule = lantern.utils.dlpack.to_dlpack(lantern.ones(2, requires_grad=True))
    assert lantern.from_dlpack(capsule).tolist() == [1.0, 1.0]


def test_capsules_of_torch_and_read_only_arrays_import_without_warning(recwarn):
    """torch's to_dlpack makes an unversioned capsule, which NumPy imports read-only; torch warns of neither."""
    shared = torch.arange(3.0)
    ours = lantern.from_dlpack(torch.utils.dlpack.to_dlpack(shared))
    ours[0] = 5
    read_only = np.arange(2.0)
    read_only.flags.writeable = False
    assert shared.tolist() == [5.0, 1.0, 2.0] and lantern.from_dlpack(read_only).tolist() == [0.0, 1.0]
    assert not [w for w in recwarn.list if "writable" in str(w.message)]
