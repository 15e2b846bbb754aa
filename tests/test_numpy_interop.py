"""NumPy interop and tensor(): from_numpy shares memory, tensor() copies, as_tensor/asarray share when they can,
numpy() and __array__ share back, dtype inference for nested data, and NumPy scalars as operands."""
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import check, raises_like


# ---- the spec's cases (rows 64-66, test cases 4-6) --------------------------------------------------------------

def test_perone_zero_copy():
    arr = np.ones((2, 2))
    t = lantern.from_numpy(arr)
    t.add_(1.0)
    assert (arr == 2.0).all() and t.dtype is lantern.float64
    arr2 = np.ones((2, 2))
    lantern.tensor(arr2).add_(1)
    assert (arr2 == 1.0).all()
    arr3 = np.ones((2, 2))
    t3 = lantern.from_numpy(arr3)
    arr3 = arr3 + 1                      # rebinds the name: the tensor still sees the old array
    assert t3.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    arr4 = np.ones(2)
    t4 = lantern.from_numpy(arr4)
    arr4 += 1                            # in place: the tensor sees it
    assert t4.tolist() == [2.0, 2.0]


def test_numpy_sharing_and_errors():
    t = lantern.zeros(3)
    t.numpy()[0] = 5
    assert t[0] == 5
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        lantern.ones(2, requires_grad=True).numpy()
    with pytest.raises(ValueError, match="At least one stride in the given numpy array is negative"):
        lantern.from_numpy(np.arange(5)[::-1])


def test_perone_storage_sharing():
    x = lantern.ones((2, 2))
    xv = x.view(4)
    assert x.data_ptr() == xv.data_ptr()
    assert x.untyped_storage().data_ptr() == xv.untyped_storage().data_ptr()


# ---- from_numpy ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("arr", [
    np.ones((3, 4))[:, ::2],
    np.ones((3, 4), order="F"),
    np.ones((2, 3, 4), np.float32).transpose(2, 0, 1),
    np.ones(4, np.float32)[1:],
    np.lib.stride_tricks.as_strided(np.ones(4), (2, 3), (8, 0)),
    np.zeros((0, 3)),
    np.array(3.5),
    np.ones(3, np.int8), np.ones(3, np.uint8), np.ones(3, np.int16), np.ones(3, np.int32),
    np.ones(3, np.float16), np.ones(3, np.complex64), np.ones(3, np.complex128), np.ones(3, np.bool_),
], ids=lambda a: f"{a.dtype}{a.shape}{a.strides}")
def test_from_numpy_keeps_dtype_shape_and_strides(arr):
    t, expected = lantern.from_numpy(arr), torch.from_numpy(arr)
    assert t.dtype.name == str(expected.dtype)[6:]
    assert (tuple(t.shape), t.stride(), t.storage_offset()) == (tuple(expected.shape), expected.stride(),
                                                                 expected.storage_offset())
    if arr.size:
        assert t.data_ptr() == arr.ctypes.data


def test_from_numpy_shares_both_ways():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1::2]
    t = lantern.from_numpy(arr)
    t.mul_(10)
    assert arr.tolist() == [[10, 30], [50, 70], [90, 110]]
    arr[0, 0] = -1
    assert t[0, 0].item() == -1


@pytest.mark.parametrize("fn", [
    lambda m: m.from_numpy(np.arange(5)[::-1]),
    lambda m: m.from_numpy(np.array([1, 2], dtype=object)),
    lambda m: m.from_numpy(np.array(["ab"])),
    lambda m: m.from_numpy(np.ones(3, dtype=">f4")),
    lambda m: m.from_numpy(np.float64(3.5)),
    lambda m: m.from_numpy([1, 2]),
    lambda m: m.as_tensor(np.arange(5)[::-1]),
    lambda m: m.as_tensor(np.ones(3, dtype=">f4")),
    lambda m: m.as_tensor(np.array([1, 2], dtype=object)),
    lambda m: m.tensor(np.arange(5)[::-1]),
    lambda m: m.tensor(np.ones(3, dtype=">f4")),
])
def test_from_numpy_errors_match_torch(fn):
    raises_like(fn)


def test_from_numpy_messages():
    torch_msg, msg = raises_like(lambda m: m.from_numpy(np.arange(5)[::-1]))
    assert msg == torch_msg
    _, msg = raises_like(lambda m: m.from_numpy(np.float64(3.5)))
    assert msg == "expected np.ndarray (got numpy.float64)"


def test_unsupported_numpy_dtypes_are_type_errors():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        lantern.from_numpy(np.zeros(2, dtype=object))


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
def test_wide_unsigned_arrays_convert_as_torch_converts_them(dtype):
    array = np.array([1, 2, 40000], dtype=dtype)
    check(lambda m: (m.from_numpy(array.copy()), m.tensor(array), m.as_tensor(array)))


def test_read_only_array_warns():
    arr = np.ones(3)
    arr.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        lantern.from_numpy(arr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lantern.tensor(arr)


# ---- numpy() and __array__ -------------------------------------------------------------------------------------------

def test_numpy_and_array_share_memory():
    t = lantern.arange(6.).view(2, 3).t()
    a = t.numpy()
    assert a.strides == (8 // 2, 12) and a.dtype == np.float32
    a[0, 1] = 100
    assert t[0, 1].item() == 100
    b = np.asarray(t)
    assert b.ctypes.data == t.data_ptr()
    assert np.asarray(lantern.ones(2), dtype=np.float64).dtype == np.float64
    assert lantern.tensor(3.5).numpy().shape == ()


@pytest.mark.parametrize("fn", [
    lambda m: m.ones(2, requires_grad=True).numpy(),
    lambda m: np.asarray(m.ones(2, requires_grad=True)),
    lambda m: m.ones(2, device="meta").numpy(),
])
def test_numpy_errors_match_torch(fn):
    raises_like(fn)


def test_numpy_of_detached_and_forced():
    x = lantern.ones(2, requires_grad=True)
    assert x.detach().numpy().tolist() == [1.0, 1.0]
    assert x.numpy(force=True).dtype == np.float32


# ---- tensor(): copies, dtype inference, ragged data ------------------------------------------------------------------

DATA = [
    [1, 2], [1., 2], [1, 2.5, True], [True, False], [True, 1], [1, 1j], [1.5, 1j], [[1, 2], [3, 4.]],
    [], [[]], [[], []], [[[]]], (), 3, 3.5, True, 1j, (1, 2.), [(1, 2), [3, 4]], range(3), [range(2), range(2)],
    np.float32(2.5), np.float64(2.5), np.float16(2.5), np.int32(3), np.int8(3), np.uint8(3), np.bool_(True),
    np.complex64(1j), [np.float32(1), np.float32(2)], [np.float64(1), np.float64(2)], [np.int32(1), np.int32(2)],
    [np.int32(1), 2.5], [np.float64(1.5), 2], [np.uint8(1), np.int8(2)], [np.complex128(1), 1.],
    [[np.float32(1), np.int64(2)]], [np.bool_(True), np.bool_(False)],
    [np.array([1, 2]), np.array([3, 4])], [np.array([1., 2]), [3, 4]],
    [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
    [np.array([1, 2], dtype=np.float32), np.array([3, 4], dtype=np.float64)],
    np.array([1, 2], dtype=np.int32), np.array(3.5), np.array([True, False]), np.array([1.5], dtype=np.float16),
    np.arange(6).reshape(2, 3)[:, ::2], np.arange(6).reshape(2, 3).T, np.ones((4, 6)).T[::2],
    np.ones((4, 6))[::2].T, np.ones((2, 3), order="F"), memoryview(b"ab"), bytearray(b"ab"), [2**63 - 1, 1],
]


@pytest.mark.parametrize("data", DATA, ids=range(len(DATA)))
def test_tensor_infers_like_torch(data):
    check(lambda m: (lambda t: (t, t.shape, t.stride()))(m.tensor(data)))


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1, 2], dtype=m.float64),
    lambda m: m.tensor([1.7, -2.7], dtype=m.int32),
    lambda m: m.tensor([1.5, 0.0], dtype=m.bool),
    lambda m: m.tensor([-1], dtype=m.uint8),
    lambda m: m.tensor([1e39]),
    lambda m: m.tensor([1e39], dtype=m.float16),
    lambda m: m.tensor([2**63], dtype=m.float64),
    lambda m: m.tensor([np.float64(1.5)], dtype=m.int32),
    lambda m: m.tensor([[1, 2]] * 3, dtype=m.float16),
    lambda m: m.tensor([1.1, 2.2], dtype=m.bfloat16),
    lambda m: m.tensor([[1, 2]], dtype=m.complex64),
    lambda m: m.tensor(np.array([1.5, 2.5]), dtype=m.int32),
    lambda m: m.tensor(np.array([-1.5]), dtype=m.uint8),
    lambda m: m.tensor(np.ones((2, 3)).T, dtype=m.float32).stride(),
    lambda m: m.tensor([m.tensor(1), m.tensor(2)]),
    lambda m: m.tensor([m.tensor(1.), m.tensor(2)]),
    lambda m: m.tensor([m.tensor([1.]), m.tensor([2.])]),
    lambda m: m.tensor([m.tensor(1, dtype=m.int32), np.int16(3)]),
    lambda m: m.tensor([[m.tensor(1.), 2], [3, 4]]),
    lambda m: m.tensor([m.tensor(1, dtype=m.float64), 2]),
    lambda m: m.tensor(m.ones(2, 3).t()).stride(),
    lambda m: m.tensor(m.ones(2, 3), dtype=m.int64),
    lambda m: m.tensor(m.ones(2, requires_grad=True)).requires_grad,
    lambda m: m.tensor([1., 2], requires_grad=True).requires_grad,
    lambda m: m.tensor([1, 2], dtype=m.float32, requires_grad=True).is_leaf,
    lambda m: m.tensor([[1, 2], [3, 4]], device="meta").shape,
    lambda m: m.tensor(np.ones((2, 3)), device="meta").shape,
    lambda m: m.tensor([1, 2])._version,
])
def test_tensor_options_like_torch(fn):
    check(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([[1, 2], [3]]),
    lambda m: m.tensor([[1], [2, 3]]),
    lambda m: m.tensor([[1, 2], [3, 4, 5]]),
    lambda m: m.tensor([[[1, 2]], [[3]]]),
    lambda m: m.tensor([[1, 2], 3]),
    lambda m: m.tensor([[[1], [2]], [[3], 4]]),
    lambda m: m.tensor([1, [2, 3]]),
    lambda m: m.tensor("abc"),
    lambda m: m.tensor(b"ab"),
    lambda m: m.tensor(["a"]),
    lambda m: m.tensor([1, "a"]),
    lambda m: m.tensor([b"ab"]),
    lambda m: m.tensor(None),
    lambda m: m.tensor([None]),
    lambda m: m.tensor([1, None]),
    lambda m: m.tensor([[1, 2], None]),
    lambda m: m.tensor({1: 2}),
    lambda m: m.tensor(x for x in [1, 2]),
    lambda m: m.tensor([m.tensor([1, 2]), m.tensor([3, 4])]),
    lambda m: m.tensor([300], dtype=m.uint8),
    lambda m: m.tensor([-256], dtype=m.uint8),
    lambda m: m.tensor([-1.0], dtype=m.uint8),
    lambda m: m.tensor([float("inf")], dtype=m.int32),
    lambda m: m.tensor(float("nan"), dtype=m.int64),
    lambda m: m.tensor([1 + 2j], dtype=m.float32),
    lambda m: m.tensor([1 + 0j], dtype=m.float32),
    lambda m: m.tensor(2**63),
    lambda m: m.tensor(2**64),
    lambda m: m.tensor([1, 2], requires_grad=True),
    lambda m: m.tensor([1, 2], dtype="float32"),
])
def test_tensor_errors_match_torch(fn):
    raises_like(fn)


def test_ragged_message():
    torch_msg, msg = raises_like(lambda m: m.tensor([[1, 2], [3, 4, 5]]))
    assert msg == torch_msg == "expected sequence of length 2 at dim 1 (got 3)"


def test_tensor_follows_the_default_dtype():
    old = lantern.get_default_dtype()
    lantern.set_default_dtype(lantern.float64)
    try:
        assert lantern.tensor([1.5]).dtype is lantern.float64
        assert lantern.tensor([1j]).dtype is lantern.complex128
        assert lantern.tensor([np.float32(1.5)]).dtype is lantern.float32
        assert lantern.Tensor([1]).dtype is lantern.float64
    finally:
        lantern.set_default_dtype(old)


def test_tensor_copies_a_tensor_with_a_warning():
    x = lantern.ones(2)
    with pytest.warns(UserWarning, match="detach\\(\\).clone\\(\\)"):
        y = lantern.tensor(x)
    assert y.data_ptr() != x.data_ptr()


# ---- as_tensor / asarray -------------------------------------------------------------------------------------------

def test_as_tensor_shares_when_it_can():
    arr = np.ones(3)
    t = lantern.as_tensor(arr)
    t[0] = 5
    assert arr[0] == 5
    assert lantern.as_tensor(arr, dtype=lantern.float32).data_ptr() != arr.ctypes.data
    x = lantern.ones(2)
    assert lantern.as_tensor(x) is x and lantern.as_tensor(x, dtype=lantern.float32) is x
    assert lantern.as_tensor(x, dtype=lantern.float64).dtype is lantern.float64


@pytest.mark.parametrize("fn", [
    lambda m: m.as_tensor([1, 2]),
    lambda m: m.as_tensor([1, 2.]),
    lambda m: m.as_tensor(3),
    lambda m: m.as_tensor(np.float32(2)),
    lambda m: m.as_tensor(np.array([1, 2], dtype=np.int32)),
    lambda m: m.as_tensor(np.array([1, 2], dtype=np.int32), dtype=m.float32),
    lambda m: m.as_tensor([m.tensor(1.), m.tensor(2.)]),
    lambda m: m.as_tensor(np.ones((2, 3)).T).stride(),
    lambda m: m.as_tensor(np.array([1, 2]), device="meta").shape,
    lambda m: m.asarray([1, 2]),
    lambda m: m.asarray(np.array([1, 2]), dtype=m.float32),
    lambda m: m.asarray(3.5),
    lambda m: m.asarray(np.float64(3.5)),
    lambda m: m.asarray(np.ones(3), copy=True),
    lambda m: m.asarray(m.ones(2), copy=False),
    lambda m: m.asarray([1., 2], requires_grad=True).requires_grad,
    lambda m: m.asarray(memoryview(np.ones(2, dtype=np.float32))),
    lambda m: m.asarray(m.ones(3), device="meta").shape,
])
def test_as_tensor_and_asarray_like_torch(fn):
    check(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.asarray(np.arange(5)[::-1]),
    lambda m: m.asarray([1, 2], copy=False),
    lambda m: m.asarray(np.ones(3, dtype=np.int32), dtype=m.float32, copy=False),
    lambda m: m.asarray(m.ones(3), device="meta", copy=False),
    lambda m: m.asarray(bytearray(b"ab")),
    lambda m: m.asarray([1, 2], requires_grad=True),
])
def test_asarray_errors_match_torch(fn):
    raises_like(fn)


def test_asarray_copy_semantics():
    arr = np.ones(3)
    lantern.asarray(arr)[0] = 5
    assert arr[0] == 5
    lantern.asarray(arr, copy=True)[0] = 7
    assert arr[0] == 5
    x = lantern.ones(2, requires_grad=True)
    assert lantern.asarray(x) is x
    assert lantern.asarray(x, requires_grad=False).requires_grad is False


# ---- the legacy constructor ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda m: m.Tensor(2, 3).shape,
    lambda m: m.Tensor(2, 3).dtype,
    lambda m: m.Tensor([1, 2]),
    lambda m: m.Tensor([[1, 2]]),
    lambda m: m.Tensor().shape,
    lambda m: m.Tensor(()).shape,
    lambda m: m.Tensor(np.array([1, 2])),
    lambda m: m.Tensor(np.array([1.5, 2])),
    lambda m: m.Tensor((2, 3)),
    lambda m: m.Tensor(m.Size([2, 3])).shape,
    lambda m: m.Tensor(np.int64(3)).shape,
    lambda m: m.Tensor(range(3)),
    lambda m: m.Tensor(m.tensor([1, 2])).dtype,
])
def test_legacy_constructor_like_torch(fn):
    check(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.Tensor(2.5),
    lambda m: m.Tensor(-1),
    lambda m: m.Tensor(2, -1),
    lambda m: m.Tensor(2, 3, device="meta"),
    lambda m: m.Tensor(2, 3, dtype=m.float64),
])
def test_legacy_constructor_errors_like_torch(fn):
    raises_like(fn)


# ---- NumPy scalars as operands ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda m: m.ones(2) * np.float32(2),
    lambda m: m.ones(2) * np.float64(2),
    lambda m: m.ones(2) + np.int64(2),
    lambda m: m.ones(2, dtype=m.int32) + np.int64(2),
    lambda m: m.ones(2, dtype=m.int32) * np.float64(2.5),
    lambda m: m.ones(2, dtype=m.float16) * np.float64(2.5),
    lambda m: m.ones(2, dtype=m.int8) + np.int64(1000),
    lambda m: m.ones(2) / np.int64(2),
    lambda m: m.ones(2) - np.float32(1),
    lambda m: m.ones(2) ** np.float32(2),
    lambda m: m.ones(2) < np.float32(2),
    lambda m: m.ones(2).add(np.float32(1), alpha=np.float32(2)),
    lambda m: m.full((2,), np.float32(3)),
    lambda m: m.ones(2).fill_(np.float64(3)),
    lambda m: m.ones(np.int64(2), np.int32(3)),
    lambda m: m.ones(2, 3).view(np.int64(3), np.int64(2)).shape,
])
def test_numpy_scalars_as_operands(fn):
    check(fn)


@pytest.mark.parametrize("fn", [
    lambda m: np.float32(2) * m.ones(2),
    lambda m: np.int64(2) + m.ones(2, dtype=m.int32),
    lambda m: np.float64(1) - m.ones(2),
])
def test_numpy_scalar_on_the_left(fn):
    check(fn)
