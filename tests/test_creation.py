"""Factories (empty, zeros, ones, full, arange, linspace, logspace, eye, empty_strided) and the *_like functions,
checked against torch: values, dtypes, shapes, strides and exception classes."""
import numpy as np
import pytest

import lantern
from oracle import check, noncontig, raises_like

FACTORIES = [
    lambda m: m.zeros(2, 3),
    lambda m: m.zeros((2, 3)),
    lambda m: m.zeros([2, 3]),
    lambda m: m.zeros([]),
    lambda m: m.zeros(()),
    lambda m: (m.zeros(0, 3).shape, m.zeros(0, 3).stride()),
    lambda m: m.zeros(m.Size([2, 3])),
    lambda m: m.zeros(np.int64(2), 3),
    lambda m: m.ones(2, 3, dtype=m.int32),
    lambda m: m.ones(2, dtype=m.bool),
    lambda m: m.ones(2, dtype=m.complex64),
    lambda m: m.ones(2, dtype=m.bfloat16),
    lambda m: m.full((2,), 7),
    lambda m: m.full((2,), 7.5),
    lambda m: m.full((2,), True),
    lambda m: m.full((2,), 1j),
    lambda m: m.full((2,), np.int32(3)),
    lambda m: m.full((2,), np.float64(1.5)),
    lambda m: m.full((2,), m.tensor(3)),
    lambda m: m.full((2,), m.tensor(3.5, dtype=m.float64)),
    lambda m: m.full((), 7),
    lambda m: m.full((2,), 1.5, dtype=m.int64),
    lambda m: m.full((2,), -1, dtype=m.uint8),
    lambda m: m.full((2,), float('inf'), dtype=m.float16),
    lambda m: m.full((2,), 70000, dtype=m.bfloat16),
    lambda m: m.empty(2, 3).shape,
    lambda m: m.empty(2, 3, 4, 5, memory_format=m.channels_last).stride(),
    lambda m: m.empty(2, 1, 3, 1, memory_format=m.channels_last).stride(),
    lambda m: m.empty(1, 2, 3, 4, 5, memory_format=m.channels_last_3d).stride(),
    lambda m: m.empty_strided((2, 3), (1, 2)).stride(),
    lambda m: m.eye(3),
    lambda m: m.eye(2, 3),
    lambda m: m.eye(3, 2, dtype=m.int64),
    lambda m: m.eye(3, dtype=m.bool),
    lambda m: m.eye(0).shape,
    lambda m: m.eye(m.tensor(2)),
]

RANGES = [
    lambda m: m.arange(5),
    lambda m: m.arange(5.),
    lambda m: m.arange(1, 4),
    lambda m: m.arange(0, 1, 0.1),
    lambda m: m.arange(0, 1, 0.3),
    lambda m: m.arange(1, 2.5, 0.5),
    lambda m: m.arange(1, 1.3, 0.1),
    lambda m: m.arange(5, 0, -1),
    lambda m: m.arange(10, 0, -3),
    lambda m: m.arange(5, 0, -1.5),
    lambda m: m.arange(-3, 3, 0.7, dtype=m.float64),
    lambda m: m.arange(0, 0),
    lambda m: m.arange(True),
    lambda m: m.arange(np.int32(3)),
    lambda m: m.arange(np.float32(3)),
    lambda m: m.arange(m.tensor(3)),
    lambda m: m.arange(m.tensor(3.)),
    lambda m: m.arange(0, 5, 2, dtype=m.float32),
    lambda m: m.arange(0, 10, 3, dtype=m.float16),
    lambda m: m.arange(10, dtype=m.uint8),
    lambda m: m.arange(0.5, 3, dtype=m.int64),
    lambda m: m.arange(0, 5, 1.5, dtype=m.int64),
    lambda m: m.arange(0, 5, 1.5, dtype=m.int32),
    lambda m: m.arange(-2.5, 3, 1, dtype=m.int32),
    lambda m: m.linspace(0, 1, 5),
    lambda m: m.linspace(3, 1, 3),
    lambda m: m.linspace(1, 1, 3),
    lambda m: m.linspace(0, 1, 1),
    lambda m: m.linspace(0, 1, 0),
    lambda m: m.linspace(0, 1, steps=3, dtype=m.float64),
    lambda m: m.linspace(0, 1, 5, dtype=m.float16),
    lambda m: m.linspace(0, 10, 5, dtype=m.int64),
    lambda m: m.linspace(0, 10, 4, dtype=m.int64),
    lambda m: m.linspace(-5, 5, 4, dtype=m.int32),
    lambda m: m.linspace(0, 9, 4, dtype=m.uint8),
    lambda m: m.linspace(0, 5, 3, dtype=m.complex64),
    lambda m: m.linspace(1j, 2j, 3),
    lambda m: m.linspace(m.tensor(0), m.tensor(4), 3),
    lambda m: m.logspace(0, 2, 3),
    lambda m: m.logspace(-1, 1, 3),
    lambda m: m.logspace(0, 2, 3, base=2),
    lambda m: m.logspace(0, 3, 4, 2),
    lambda m: m.logspace(0, 1, 3, base=2.5),
    lambda m: m.logspace(0, 3, 4, base=-2),
    lambda m: m.logspace(0, 2, 3, dtype=m.float64),
    lambda m: m.logspace(0, 10, 3, dtype=m.int64),
    lambda m: m.logspace(0, 3, 4, base=2, dtype=m.int32),
    lambda m: m.logspace(1j, 2, 3),
]

ERRORS = [
    lambda m: m.zeros(-1),
    lambda m: m.ones(2, -3),
    lambda m: m.full((-1,), 2),
    lambda m: m.empty(2, -1, device="meta"),
    lambda m: m.empty_strided((-1,), (1,)),
    lambda m: m.empty_strided((2, 3), (1, 2, 3)),
    lambda m: m.zeros(2.0),
    lambda m: m.zeros((2, 2.0)),
    lambda m: m.zeros(2, 3, dtype=m.int32, requires_grad=True),
    lambda m: m.full((2,), 1, requires_grad=True),
    lambda m: m.arange(5, requires_grad=True),
    lambda m: m.eye(2, dtype=m.int64, requires_grad=True),
    lambda m: m.ones(2, pin_memory=True),
    lambda m: m.full((2,), 300, dtype=m.uint8),
    lambda m: m.full((2,), -256, dtype=m.uint8),
    lambda m: m.full((2,), -1.0, dtype=m.uint8),
    lambda m: m.full((2,), float("nan"), dtype=m.int32),
    lambda m: m.full((2,), 2**31, dtype=m.int32),
    lambda m: m.full((2,), 1e39, dtype=m.float32),
    lambda m: m.full((2,), 70000, dtype=m.float16),
    lambda m: m.full((2,), 1 + 2j, dtype=m.float32),
    lambda m: m.full((2,), 2**64),
    lambda m: m.full(2, 7),
    lambda m: m.empty((2, 3), memory_format=m.channels_last),
    lambda m: m.empty(1, 2, 3, 4, memory_format=m.channels_last_3d),
    lambda m: m.empty(2, 3, memory_format=m.preserve_format),
    lambda m: m.arange(0, 1, 0),
    lambda m: m.arange(0, 5, 0.5, dtype=m.int64),
    lambda m: m.arange(0, 5, -1),
    lambda m: m.arange(5, 0, 1),
    lambda m: m.arange(0, float("inf")),
    lambda m: m.arange(0, float("nan")),
    lambda m: m.arange(1j),
    lambda m: m.arange(0, 10, 3, dtype=m.bool),
    lambda m: m.arange(5, dtype=m.complex64),
    lambda m: m.linspace(0, 1, -1),
    lambda m: m.linspace(0, 1, 2.0),
    lambda m: m.linspace(0, 1, 3, dtype=m.bool),
    lambda m: m.logspace(0, 1, -2),
    lambda m: m.eye(-1),
    lambda m: m.eye(2, -1),
    lambda m: m.eye(2.0),
    lambda m: m.tril(m.ones(3)),
]


@pytest.mark.parametrize("fn", FACTORIES + RANGES)
def test_factories_match_torch(fn):
    check(fn)


@pytest.mark.parametrize("fn", ERRORS)
def test_factory_errors_match_torch(fn):
    raises_like(fn)


def test_error_messages():
    _, msg = raises_like(lambda m: m.zeros(2, 3, dtype=m.int32, requires_grad=True))
    assert msg == "Only Tensors of floating point and complex dtype can require gradients"
    _, msg = raises_like(lambda m: m.ones(2, -3))
    assert msg == "Trying to create tensor with negative dimension -3: [2, -3]"
    torch_msg, msg = raises_like(lambda m: m.arange(0, 5, -1))
    assert msg == torch_msg
    torch_msg, msg = raises_like(lambda m: m.eye(2, -1))
    assert msg == torch_msg


@pytest.mark.parametrize("fn", [
    lambda m: m.ones(2, requires_grad=True).requires_grad,
    lambda m: m.ones(2, dtype=m.complex64, requires_grad=True).requires_grad,
    lambda m: m.full((2,), 1., requires_grad=True).is_leaf,
    lambda m: m.arange(5., requires_grad=True).requires_grad,
    lambda m: m.linspace(0, 1, 4, requires_grad=True).requires_grad,
    lambda m: m.eye(2, requires_grad=True).is_leaf,
])
def test_requires_grad_on_floating_factories(fn):
    check(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.zeros(2)._version,
    lambda m: m.full((2,), 3)._version,
    lambda m: m.arange(3)._version,
    lambda m: m.zeros_like(m.ones(2, 3).t())._version,
    lambda m: m.full_like(m.ones(2), 2)._version,
])
def test_new_tensors_start_at_version_zero(fn):
    check(fn)


def test_sizes_storage_and_device():
    check(lambda m: [m.zeros(1, dtype=d).element_size() for d in (m.float32, m.float64, m.int16)])
    check(lambda m: m.arange(48).view(6, 8)[1:5:2].untyped_storage().nbytes())
    check(lambda m: (repr(m.zeros(2).device), repr(m.zeros(2, device=m.device("meta")).device)))
    check(lambda m: m.zeros(2, device=m.device("cpu")).layout is m.strided)


def test_meta_device_makes_shapes_only():
    z = lantern.zeros(2, 3, device="meta")
    assert z.device == lantern.device("meta") and z.shape == (2, 3) and z.stride() == (3, 1)
    assert lantern.arange(5, device="meta").shape == (5,)
    assert lantern.eye(2, 3, device="meta").stride() == (3, 1)
    assert lantern.full((2,), 3, device="meta").dtype is lantern.int64
    assert lantern.linspace(0, 1, 5, device="meta").shape == (5,)
    assert lantern.empty(2, 3, 4, 5, device="meta", memory_format=lantern.channels_last).stride() == (60, 1, 15, 3)
    with pytest.raises(NotImplementedError):
        z.tolist()


# ---- *_like ------------------------------------------------------------------------------------------------------

LIKE_INPUTS = [
    np.ones((2, 3), np.float32),
    np.ones((2, 3), np.float32).T,                       # dense, permuted: strides kept
    noncontig(np.ones((2, 3), np.float32)),             # not dense: contiguous strides
    np.ones((4, 6), np.float32)[::2].T,                 # not dense, permuted: the stride order kept
    np.ones((2, 3, 4), np.float32).transpose(2, 0, 1),
    np.ones((2, 3, 4, 5), np.float32).transpose(0, 2, 3, 1),
    np.array(1.5, np.float32),
    np.ones((2, 3), np.int32),
]


@pytest.mark.parametrize("arr", LIKE_INPUTS, ids=range(len(LIKE_INPUTS)))
@pytest.mark.parametrize("fn", [
    lambda m, x: m.zeros_like(x),
    lambda m, x: m.ones_like(x),
    lambda m, x: m.full_like(x, 7),
    lambda m, x: m.full_like(x, 2.5),
    lambda m, x: m.empty_like(x).stride(),
    lambda m, x: m.zeros_like(x, dtype=m.float64),
    lambda m, x: m.ones_like(x, memory_format=m.contiguous_format),
], ids=["zeros", "ones", "full_int", "full_float", "empty", "dtype", "contiguous"])
def test_like_matches_torch(fn, arr):
    check(fn, arr)


def test_like_of_expanded_and_channels_last():
    check(lambda m: m.zeros_like(m.ones(3).expand(2, 3)))
    check(lambda m: m.zeros_like(m.ones(2, 3, 4, 5), memory_format=m.channels_last))
    check(lambda m: m.zeros_like(m.ones(2, 3, 4, 5).permute(0, 2, 3, 1)[:, ::2]))
    check(lambda m: m.zeros_like(m.ones(0, 3).t()).stride())


@pytest.mark.parametrize("fn", [
    lambda m: m.full_like(m.ones(2, dtype=m.int64), 7.9),
    lambda m: m.full_like(m.ones(2, dtype=m.int64), 7.9, dtype=m.float64),
    lambda m: m.full_like(m.ones(2, dtype=m.uint8), -1),
    lambda m: m.full_like(m.ones(2, dtype=m.bool), 5),
    lambda m: m.full_like(m.ones(2), True),
    lambda m: m.full_like(m.ones(2, dtype=m.complex64), 1 + 1j),
    lambda m: m.full_like(m.ones(2), m.tensor(3.)),
    lambda m: m.full_like(input=m.ones(2), fill_value=2),
    lambda m: m.zeros_like(input=m.ones(2)),
    lambda m: m.ones_like(m.ones(2), dtype=m.complex64),
    lambda m: m.zeros_like(m.ones(2, 3, dtype=m.int32), dtype=m.float64, requires_grad=True).requires_grad,
    lambda m: m.zeros_like(m.ones(2, 3, requires_grad=True)).requires_grad,
    lambda m: m.full_like(m.ones(2), 2.5, requires_grad=True).is_leaf,
])
def test_like_options(fn):
    check(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.zeros_like(m.ones(2, 3, dtype=m.int32), requires_grad=True),
    lambda m: m.zeros_like(m.ones(2, 3), memory_format=m.channels_last),
    lambda m: m.full_like(m.ones(2), 1 + 1j),
    lambda m: m.full_like(m.ones(2, dtype=m.uint8), 300),
    lambda m: m.zeros_like(3),
    lambda m: m.zeros_like([1, 2]),
    lambda m: m.zeros_like(m.ones(2), m.int64),
])
def test_like_errors(fn):
    raises_like(fn)


def test_like_across_devices():
    cpu = lantern.ones(2, 3).t()
    meta = lantern.zeros_like(cpu, device="meta")
    assert meta.device.type == "meta" and meta.stride() == (1, 3)
    assert lantern.rand_like(lantern.ones(2, device="meta")).device.type == "meta"
    back = lantern.ones_like(lantern.ones(2, 3, device="meta"), device="cpu")
    assert back.device.type == "cpu" and back.tolist() == [[1.0] * 3] * 2


def test_tril_triu():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    check(lambda m, x: (m.tril(x), m.triu(x, 1), m.tril(x, -1), m.triu(x, -1)), a)
