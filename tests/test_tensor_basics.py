"""Tensor basics against torch: scalar conversion (item, bool, int, float, index), tolist, len, iteration,
sizes (numel, element_size, nbytes, itemsize, storage bytes), size/stride/dim accessors, Size, dtype objects,
finfo/iinfo, and the legacy type strings (spec rows 12-14).
"""
import operator

import numpy as np
import pytest
import torch

import lantern
from oracle import DTYPE_PAIRS, check, noncontig, raises_like

NAMES = [str(t).replace("torch.", "") for t, _ in DTYPE_PAIRS]


def sample(name, shape=(2, 3)):
    n = int(np.prod(shape))
    vals = np.arange(n) % 2 == 0 if name == "bool" else np.arange(n) % 5 + 1
    if name.startswith("complex"):
        vals = vals + 0.5j
    return noncontig(np.asarray(vals).astype("float32" if name == "bfloat16" else name).reshape(shape))


def as_(m, x, name):
    return x.to(getattr(m, name)) if name == "bfloat16" else x


# ---- scalar conversion (row 13) ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NAMES)
def test_item_and_conversions(dtype):
    def fn(m, x):
        s = as_(m, x, dtype).select(0, 1).select(0, 2)
        out = [s.item(), type(s.item()).__name__, bool(s), complex(s)]
        if not dtype.startswith("complex"):
            out += [float(s), int(s)]
        return out
    check(fn, sample(dtype))


@pytest.mark.parametrize("dtype", NAMES)
def test_tolist(dtype):
    check(lambda m, x: as_(m, x, dtype).tolist(), sample(dtype))
    check(lambda m, x: as_(m, x, dtype).t().tolist(), sample(dtype))
    check(lambda m, x: as_(m, x, dtype).sum().tolist() if dtype != "bool" else x.any().tolist(), sample(dtype))
    check(lambda m, x: as_(m, x, dtype).narrow(0, 0, 0).tolist(), sample(dtype))


def test_row_13_messages():
    _, msg = raises_like(lambda m: m.ones(2).item())
    assert "a Tensor with 2 elements cannot be converted to Scalar" in msg
    _, msg = raises_like(lambda m: bool(m.ones(2)))
    assert "Boolean value of Tensor with more than one value is ambiguous" in msg
    raises_like(lambda m: bool(m.ones(0)))
    raises_like(lambda m: m.ones(0).item())
    raises_like(lambda m: float(m.ones(2)))
    raises_like(lambda m: int(m.ones(3)))
    raises_like(lambda m: complex(m.ones(2)))
    check(lambda m: (bool(m.ones(1, 1)), float(m.ones(1, 1, 1)), int(m.tensor([[7]])), m.ones(1).item()))
    check(lambda m: (bool(m.tensor(0.0)), bool(m.tensor(float("nan"))), bool(m.tensor(-1))))


def test_index_conversion():
    check(lambda m: [operator.index(m.tensor(3)), operator.index(m.tensor([4])), list(range(10))[m.tensor(2)]])
    raises_like(lambda m: operator.index(m.tensor(3.0)))
    raises_like(lambda m: operator.index(m.tensor([1, 2])))
    raises_like(lambda m: list(range(10))[m.tensor(2.5)])
    check(lambda m: operator.index(m.tensor(True)))
    check(lambda m: hex(m.tensor(255)))


def test_len_and_iter():
    def fn(m, x):
        return len(x), [r for r in x], list(x.t()), len(x.t()), [tuple(r.shape) for r in x]
    check(fn, sample("float32"))
    raises_like(lambda m: len(m.tensor(3.0)))
    raises_like(lambda m: iter(m.tensor(3.0)))
    check(lambda m: (len(m.ones(0, 3)), list(m.ones(0, 3))))


def test_iter_yields_views():
    def fn(m, x):
        x = x.clone()
        rows = list(x)
        rows[1].fill_(0)
        return x, rows[0]._base is x, x._version
    check(fn, sample("float32"))


@pytest.mark.parametrize("dtype", NAMES)
def test_sizes_row_12(dtype):
    def fn(m, x):
        x = as_(m, x, dtype)
        v = x.t().narrow(0, 1, 2)
        return (x.numel(), x.nelement(), x.element_size(), x.nbytes, x.itemsize, v.numel(), v.nbytes,
                x.dtype.itemsize, x.untyped_storage().nbytes() if dtype == "bfloat16" else None)
    check(fn, sample(dtype))


def test_untyped_storage_nbytes():
    def fn(m):
        x = m.arange(48)
        v = x.view(6, 8).narrow(0, 2, 1).select(1, 3)
        return (x.untyped_storage().nbytes(), v.untyped_storage().nbytes(), m.ones(3, dtype=m.int16).untyped_storage()
                .nbytes(), m.zeros(2, 2).untyped_storage().nbytes(), x.untyped_storage().data_ptr() ==
                v.untyped_storage().data_ptr(), m.ones(0).untyped_storage().nbytes())
    check(fn)


def test_accessors():
    def fn(m, x):
        return (x.size(), x.shape, x.size(0), x.size(-1), x.stride(), x.stride(1), x.stride(-2), x.dim(),
                x.ndim, x.ndimension(), x.storage_offset(), x.is_contiguous(), x.shape[1:], x.size()[0],
                type(x.shape[1:]).__name__, x.is_floating_point(), x.is_complex(), x.is_signed(), x.is_cpu,
                x.is_cuda, x.is_meta, str(x.device), x.get_device(), str(x.layout).split(".")[1], m.is_tensor(x),
                m.is_floating_point(x), m.numel(x))
    check(fn, sample("float32"))
    raises_like(lambda m: m.ones(2, 3).size(2))
    raises_like(lambda m: m.ones(2, 3).stride(-3))


def test_size_object():
    def fn(m):
        s = m.ones(2, 3, 4).shape
        return (s, s.numel(), s[1], s[-1], s[1:], s + (5,), (1,) + s, s == (2, 3, 4), len(s), list(s),
                m.Size([2, 3]), m.Size([2, 3]).numel(), m.Size([]).numel(), isinstance(s, tuple),
                type(s + (5,)).__name__, type((1,) + s).__name__, hash(m.Size([1])) == hash((1,)))
    check(fn)
    assert repr(lantern.Size([2, 3])) == "lantern.Size([2, 3])"
    assert repr(lantern.Size([])) == "lantern.Size([])"


# ---- dtype objects -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes(name):
    t, ln = getattr(torch, name), getattr(lantern, name)
    assert (ln.is_floating_point, ln.is_complex, ln.is_signed, ln.itemsize) == \
        (t.is_floating_point, t.is_complex, t.is_signed, t.itemsize)
    assert repr(ln) == "lantern." + name
    assert ln.to_real().name == str(t.to_real())[6:]
    if name not in ("bool",) and not name.startswith(("int", "uint")):
        assert ln.to_complex().name == str(t.to_complex())[6:] or name in ("float16", "bfloat16")


def test_dtype_aliases():
    for alias in ("half", "float", "double", "short", "int", "long", "cfloat", "cdouble"):
        assert getattr(lantern, alias).name == str(getattr(torch, alias))[6:]
    assert lantern.float is lantern.float32 and lantern.long is lantern.int64


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_finfo(name):
    t, ln = torch.finfo(getattr(torch, name)), lantern.finfo(getattr(lantern, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ln, attr) == getattr(t, attr), attr
    assert ln.dtype == t.dtype


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64", "bool"])
def test_iinfo(name):
    if name == "bool":
        with pytest.raises(TypeError):
            torch.iinfo(torch.bool)
        with pytest.raises(TypeError):
            lantern.iinfo(lantern.bool)
        return
    t, ln = torch.iinfo(getattr(torch, name)), lantern.iinfo(getattr(lantern, name))
    assert (ln.bits, ln.min, ln.max, ln.dtype) == (t.bits, t.min, t.max, t.dtype)


def test_finfo_iinfo_errors():
    with pytest.raises(TypeError):
        lantern.finfo(lantern.int32)
    with pytest.raises(TypeError):
        lantern.iinfo(lantern.float32)
    assert lantern.finfo().eps == torch.finfo().eps


def test_default_dtype():
    assert lantern.get_default_dtype() is lantern.float32
    with pytest.raises(TypeError):
        lantern.set_default_dtype(lantern.int64)
    lantern.set_default_dtype(lantern.float64)
    try:
        assert lantern.tensor([1.5]).dtype is lantern.float64 and (lantern.tensor([1]) / 2).dtype is lantern.float64
        assert (lantern.tensor([1]) * 1j).dtype is lantern.complex128
    finally:
        lantern.set_default_dtype(lantern.float32)


def test_dtype_pickle_and_identity():
    import copy
    import pickle
    for d in (lantern.float32, lantern.bfloat16, lantern.bool):
        assert pickle.loads(pickle.dumps(d)) is d and copy.deepcopy(d) is d


# ---- legacy type strings -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_type_string(name):
    check(lambda m: m.ones(2, dtype=getattr(m, name)).type())


def test_promote_types_and_result_type_functions():
    check(lambda m: (m.promote_types(m.uint8, m.int8), m.promote_types(m.bfloat16, m.float16),
                     m.result_type(m.ones(2, dtype=m.int32), 2.5), m.result_type(2, 3.0), m.result_type(True, 2),
                     m.result_type(m.tensor(1.0, dtype=m.float64), m.ones(2, dtype=m.float16)),
                     m.can_cast(m.float32, m.int32), m.can_cast(m.int32, m.float16)))


def test_conjugates_and_adjoints():
    """conj() of a real tensor is the tensor itself; of a complex one, a lazy conjugate view (its memory and
    strides: tests/test_conj_views.py tests the views)."""
    z = np.array([[1 + 2j, 3 - 1j, 0.5j], [2, -1j, 1 + 1j]], np.complex64)
    check(lambda m, x: (x.conj(), x.mH, x.adjoint(), x.H), noncontig(z))
    check(lambda m, x: (x.conj() is x, x.mH, x.adjoint()), noncontig(np.ones((2, 3), np.float32)))
    raises_like(lambda m, x: x.H, np.ones((2, 2, 2), np.float32))


def test_comparison_with_none_follows_python():
    """An operand no overload takes makes the comparison NotImplemented: == is False, != True, < a TypeError."""
    check(lambda m: (m.ones(1) == None, m.ones(2) != None, m.ones(1) == "a", m.ones(1) in [None]))  # noqa: E711
    t_msg, l_msg = raises_like(lambda m: m.ones(1) < None)
    assert l_msg == t_msg
