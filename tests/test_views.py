"""View ops against torch: sizes, strides, storage_offset, data_ptr deltas, contiguity, `_base`, the shared
version counter, writes through views, and the errors (spec rows 3-5, 8, 9 and cases 1-3).
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import check, matches_torch, noncontig, raises_like
from device_generic import lantern_device  # noqa: F401  (the fixture: these tests run on cpu and openreg)

pytestmark = pytest.mark.usefixtures("lantern_device")


def arange(m, *shape, dtype=None):
    n = int(np.prod(shape))
    return m.arange(n, dtype=dtype).view(*shape) if shape else m.arange(1, dtype=dtype).view(())


def meta_of(x, y):
    """What a view must agree on besides its values: offset, pointer delta in bytes, contiguity, base, version."""
    delta = y.data_ptr() - x.data_ptr() if y.numel() else y.data_ptr()  # an empty tensor's data_ptr() is 0
    return (y.storage_offset(), delta, y.is_contiguous(), y._base is x,
            y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())


def view_check(f, shape=(3, 4, 5), dtype="float32", base=None):
    """f(m, x) -> view of x, on a contiguous and on a non-contiguous base; compares values, strides and meta_of."""
    def run(m, x):
        y = f(m, x)
        return y, meta_of(x, y)

    def noncontig_run(m, x):
        y = f(m, x)
        return y, meta_of(x, y)[1:] if x._base is None else (y.storage_offset(), y.is_contiguous())
    values = (np.arange(int(np.prod(shape))) + 1).reshape(shape).astype(dtype)
    check(run, values)
    check(noncontig_run, noncontig(values))


# ---- the spec's cases ---------------------------------------------------------------------------------------

def test_case_1_strided_slice():
    def fn(m):
        x = m.arange(48).view(6, 8)
        y = x.narrow(0, 1, 4).view(2, 2, 8).select(1, 0).narrow(1, 1, 3)  # x[1:5:2, 1:4]
        assert y.stride() == (16, 1) and y.storage_offset() == 9 and y.size() == (2, 3)
        assert not y.is_contiguous() and y.data_ptr() - x.data_ptr() == 9 * 8
        z = x.as_strided((2, 3), (16, 1), 9)
        assert z.equal(y) if hasattr(z, "equal") else (z == y).all()
        return y, z
    check(fn)


def test_case_2_row_and_column_views():
    def fn(m):
        x = m.tensor([[1, 2], [3, 4]], dtype=m.int32)
        r, c = x.select(0, 1), x.select(1, 0)
        assert (r.storage_offset(), r.stride(), c.storage_offset(), c.stride()) == (2, (1,), 0, (2,))
        r.select(0, 0).fill_(30)
        assert x.tolist() == [[1, 2], [30, 4]] and x._version == 1 and r._version == 1
        return x, r, c
    check(fn)


def test_case_3_layout_basics():
    def fn(m):
        x = m.ones(2, 5)
        t = x.t()
        c = t.contiguous()
        assert t.stride() == (1, 5) and c.stride() == (2, 1) and c.data_ptr() != x.data_ptr()
        assert c._base is None and t.contiguous() is not t and c.contiguous() is c
        e = m.tensor([1, 2, 3]).expand(2, 3)
        assert e.stride() == (0, 1) and not e.is_contiguous()
        return t, c, e, (m.ones(5, 1, 4, 1) + m.ones(3, 1, 1)).shape
    check(fn)
    _, msg = raises_like(lambda m: m.arange(6.).view(2, 3).t().view(6))
    assert "view size is not compatible with input tensor's size and stride (at least one dimension spans across " \
           "two contiguous subspaces). Use .reshape(...) instead." in msg
    check(lambda m: m.arange(6.).view(2, 3).t().reshape(6))
    _, msg = raises_like(lambda m: m.tensor([1, 2, 3]).expand(2, 3).add_(1))
    assert "unsupported operation: more than one element of the written-to tensor refers to a single memory " \
           "location. Please clone() the tensor before performing the operation." in msg


def test_row_3_contiguous_strides():
    def fn(m):
        x = m.arange(48).view(6, 8)
        assert x.stride() == (8, 1) and x.is_contiguous()
        assert x.t().stride() == (1, 8) and not x.t().is_contiguous()
        assert x.t().contiguous().stride() == (6, 1)
        return x.t().contiguous()
    check(fn)


def test_row_8_new_dim_strides():
    check(lambda m: (arange(m, 3, 4).unsqueeze(0).stride(), arange(m, 3, 4).unsqueeze(2).stride(),
                     arange(m, 3, 4).unsqueeze(1).stride(), arange(m, 3, 4).unsqueeze(-1).stride()))


def test_row_9_expand():
    _, msg = raises_like(lambda m: m.tensor([1, 2, 3]).expand(2, 4))
    assert "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  " \
           "Target sizes: [2, 4].  Tensor sizes: [3]" in msg
    raises_like(lambda m: m.ones(2, 3).expand(3))
    raises_like(lambda m: m.ones(3).expand(-1, 3))
    raises_like(lambda m: m.tensor([1, 2, 3]).expand(2, 3).mul_(2))
    # torch lets fill_(number) and zero_() write one place twice; lantern refuses every such in-place write
    # (a deliberate difference, see tests/test_shape_ops.py::test_inplace_into_expanded_always_refused)
    raises_like(lambda m: m.tensor([1, 2, 3]).expand(2, 3).fill_(m.tensor(2)))  # fill_(Tensor) may not
    raises_like(lambda m: m.tensor([1, 2, 3]).expand(2, 3).copy_(m.ones(2, 3, dtype=m.int64)))


# ---- every view op ------------------------------------------------------------------------------------------

VIEWS = {
    "t": lambda m, x: x.select(0, 1).t(),
    "transpose": lambda m, x: x.transpose(0, 2),
    "transpose_neg": lambda m, x: x.transpose(-1, 1),
    "swapaxes": lambda m, x: x.swapaxes(0, 1),
    "swapdims": lambda m, x: m.swapdims(x, 0, -1),
    "permute": lambda m, x: x.permute(2, 0, 1),
    "permute_tuple": lambda m, x: x.permute((1, -1, 0)),
    "movedim": lambda m, x: x.movedim(0, 2),
    "movedim_tuple": lambda m, x: m.movedim(x, (0, 1), (2, 0)),
    "moveaxis": lambda m, x: x.moveaxis(-1, 0),
    "expand": lambda m, x: x.select(1, 0).unsqueeze(1).expand(3, 4, 5),
    "expand_new_dims": lambda m, x: x.expand(2, 3, 4, 5),
    "expand_minus_one": lambda m, x: x.narrow(1, 0, 1).expand(-1, 6, -1),
    "expand_as": lambda m, x: x.narrow(0, 0, 1).expand_as(x),
    "squeeze_all": lambda m, x: x.narrow(1, 0, 1).squeeze(),
    "squeeze_dim": lambda m, x: x.narrow(1, 0, 1).squeeze(1),
    "squeeze_noop": lambda m, x: x.squeeze(0),
    "squeeze_tuple": lambda m, x: x.narrow(0, 0, 1).narrow(2, 1, 1).squeeze((0, 2)),
    "squeeze_neg": lambda m, x: x.narrow(2, 0, 1).squeeze(-1),
    "unsqueeze_0": lambda m, x: x.unsqueeze(0),
    "unsqueeze_mid": lambda m, x: x.unsqueeze(2),
    "unsqueeze_end": lambda m, x: x.unsqueeze(-1),
    "flatten": lambda m, x: x.flatten(),
    "flatten_partial": lambda m, x: x.flatten(1),
    "flatten_range": lambda m, x: m.flatten(x, 0, 1),
    "unflatten": lambda m, x: x.unflatten(2, (5, 1)),
    "unflatten_infer": lambda m, x: x.unflatten(1, (2, -1)),
    "narrow": lambda m, x: x.narrow(1, 1, 2),
    "narrow_neg": lambda m, x: x.narrow(-1, -3, 2),
    "select": lambda m, x: x.select(1, 2),
    "select_neg": lambda m, x: x.select(-1, -1),
    "diagonal": lambda m, x: x.diagonal(),
    "diagonal_offset": lambda m, x: x.diagonal(1, 1, 2),
    "diagonal_neg_offset": lambda m, x: x.diagonal(-1, -1, 0),
    "diagonal_out_of_range": lambda m, x: x.diagonal(7),
    "as_strided": lambda m, x: x.as_strided((2, 2), (1, 2), 3),
    "unfold": lambda m, x: x.unfold(2, 2, 1),
    "unfold_step": lambda m, x: x.unfold(1, 2, 2),
    "T_2d": lambda m, x: x.select(0, 0).T,
    "mT": lambda m, x: x.mT,
    "view": lambda m, x: x.select(0, 0).contiguous().view(5, 4),
    "view_minus_one": lambda m, x: x.view(-1, 5) if x.is_contiguous() else x.narrow(2, 0, 5).view(3, 4, 5),
    "reshape_view": lambda m, x: x.reshape(12, 5) if x.is_contiguous() else x.reshape(3, 4, 5, 1),
    "view_as": lambda m, x: x.view_as(x),
    "alias_chain": lambda m, x: x.transpose(0, 1).narrow(0, 1, 2).select(2, 3).unsqueeze(0),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_op(name):
    view_check(VIEWS[name])


def test_permute_3d_T():
    def fn(m, x):
        return x.permute(2, 1, 0), x.T if x.dim() == 2 else x.permute(2, 1, 0)
    check(fn, noncontig(np.arange(24.).reshape(2, 3, 4)))


@pytest.mark.parametrize("shape", [(), (3,), (0,), (1, 1), (2, 0, 3)])
def test_views_of_degenerate_shapes(shape):
    def fn(m, x):
        out = [x.unsqueeze(0).stride(), x.flatten().shape, x.squeeze().shape, x.reshape(-1).shape,
               x.view(*shape).stride() if shape else x.view(1).shape, x.expand(2, *shape).stride()]
        if x.dim():
            out += [x.transpose(0, -1).stride(), x.narrow(0, 0, 0).shape, x.unsqueeze(-1).stride()]
        return out
    check(fn, np.zeros(shape, np.float32))


@pytest.mark.parametrize("target", [(4, 3), (12,), (2, 6), (2, 2, 3), (-1,), (3, -1), (1, 12, 1)])
def test_view_shapes(target):
    check(lambda m, x: x.view(*target), np.arange(12.).reshape(3, 4))
    check(lambda m, x: x.view(target), np.arange(12.).reshape(3, 4))


@pytest.mark.parametrize("target", [(5,), (-1, -1), (-2, 6), (0, -1), (7, -1)])
def test_view_shape_errors(target):
    raises_like(lambda m, x: x.view(*target), np.arange(12.).reshape(3, 4))
    raises_like(lambda m, x: x.reshape(*target), np.arange(12.).reshape(3, 4))


@pytest.mark.parametrize("make,target", [
    (lambda x: x.t(), (12,)), (lambda x: x.t(), (2, 6)), (lambda x: x.t(), (4, 3)), (lambda x: x.t(), (4, 3, 1)),
    (lambda x: x.narrow(1, 0, 2), (6,)), (lambda x: x.narrow(1, 0, 2), (3, 2, 1)),
    (lambda x: x.narrow(0, 0, 2), (8,)), (lambda x: x.unsqueeze(1).expand(3, 2, 4), (6, 4)),
    (lambda x: x.unsqueeze(1).expand(3, 2, 4), (3, 8)), (lambda x: x.view(3, 2, 2).transpose(1, 2), (3, 4)),
])
def test_view_vs_reshape(make, target):
    """reshape gives a view when the strides allow it (same storage) and a contiguous copy otherwise."""
    def fn(m, x):
        src = make(x)
        try:
            v = src.view(target)
        except RuntimeError:
            v = None
        r = src.reshape(target)
        shares = r.data_ptr() == src.data_ptr() and r._base is not None
        return r, shares, v is not None, (v.stride() if v is not None else None)
    check(fn, np.arange(12.).reshape(3, 4))


def test_view_dtype():
    check(lambda m, x: x.view(m.int32), np.arange(6, dtype=np.float32).reshape(2, 3))
    check(lambda m, x: x.view(m.int16), np.arange(6, dtype=np.float32).reshape(2, 3))
    check(lambda m, x: x.view(m.float64), np.arange(8, dtype=np.float32).reshape(2, 4))
    check(lambda m, x: x.view(m.uint8).shape, np.arange(6, dtype=np.int64).reshape(2, 3))
    check(lambda m, x: x.t().view(m.int32), np.arange(6, dtype=np.float32).reshape(2, 3))
    check(lambda m, x: x.view(m.complex64), np.arange(8, dtype=np.float32).reshape(2, 4))
    raises_like(lambda m, x: x.view(m.float64), np.arange(6, dtype=np.float32).reshape(2, 3))
    raises_like(lambda m, x: x.t().view(m.float64), np.arange(8, dtype=np.float32).reshape(4, 2))
    raises_like(lambda m, x: x.view(m.int16), np.array(1, np.int32))

    def shares(m, x):
        y = x.view(m.int32)
        y.add_(1)
        return x._version, y._version, y.data_ptr() == x.data_ptr()
    check(shares, np.zeros(4, np.float32))


def test_real_imag():
    def fn(m, x):
        r, i = x.real, x.imag
        return r, i, r.stride(), i.stride(), r.storage_offset(), i.storage_offset(), r.dtype, i.dtype
    z = noncontig((np.arange(6) + 1j * np.arange(6, 12)).reshape(2, 3).astype(np.complex64))
    check(fn, z)
    check(lambda m, x: x.t().real, z)
    check(lambda m, x: x.real, np.arange(3.))
    raises_like(lambda m, x: x.imag, np.arange(3.))

    def write(m, x):
        x = x.clone()
        x.imag.fill_(7)
        return x, x._version
    check(write, z)


@pytest.mark.parametrize("dims", [0, 1, -1])
def test_unbind(dims):
    def fn(m, x):
        parts = x.unbind(dims)
        return list(parts), [meta_of(x, p) for p in parts]
    check(fn, np.arange(24.).reshape(2, 3, 4))
    check(lambda m, x: list(m.unbind(x, dims)), noncontig(np.arange(24.).reshape(2, 3, 4)))


@pytest.mark.parametrize("arg", [1, 2, 3, 5, (1, 2), (2, 1), (0, 3), (3, 0)])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_split(arg, dim):
    def fn(m, x):
        if isinstance(arg, tuple) and sum(arg) != x.shape[dim]:
            return x.split(list(arg), dim)
        parts = x.split(list(arg) if isinstance(arg, tuple) else arg, dim)
        return list(parts), [meta_of(x, p) for p in parts]
    check(fn, np.arange(27.).reshape(3, 3, 3))
    check(lambda m, x: list(m.split(x, arg if isinstance(arg, int) else list(arg), dim)) if not isinstance(arg, tuple)
          or sum(arg) == 3 else 0, noncontig(np.arange(27.).reshape(3, 3, 3)))


@pytest.mark.parametrize("chunks", [1, 2, 3, 4, 6, 7])
@pytest.mark.parametrize("n", [0, 1, 5, 6])
def test_chunk(chunks, n):
    check(lambda m, x: [tuple(p.shape) for p in x.chunk(chunks)], np.zeros((n, 2)))
    if n:
        check(lambda m, x: list(m.chunk(x, chunks, 0)), noncontig(np.arange(2. * n).reshape(n, 2)))
        check(lambda m, x: list(x.chunk(chunks, -1)), np.arange(2. * n).reshape(2, n))


@pytest.mark.parametrize("arg", [1, 2, 3, 4, 7, (1, 3), (2, 2), (4, 1), (0, 5), [1, 4], (-1,), (3, -12), (7, 3)])
def test_tensor_split(arg):
    check(lambda m, x: list(x.tensor_split(arg)), noncontig(np.arange(10.).reshape(5, 2)))
    check(lambda m, x: [tuple(p.shape) for p in m.tensor_split(x, arg, 1)], np.arange(10.).reshape(2, 5))


def test_split_chunk_errors():
    raises_like(lambda m, x: x.split([1, 1]), np.arange(3.))
    raises_like(lambda m, x: x.split(0), np.arange(3.))
    raises_like(lambda m, x: x.chunk(0), np.arange(3.))
    raises_like(lambda m, x: x.tensor_split(0), np.arange(3.))
    raises_like(lambda m, x: x.unbind(2), np.arange(3.))


ERRORS = {
    "t_3d": lambda m, x: x.t(),
    "transpose_range": lambda m, x: x.transpose(0, 3),
    "permute_len": lambda m, x: x.permute(0, 1),
    "permute_repeat": lambda m, x: x.permute(0, 0, 1),
    "permute_range": lambda m, x: x.permute(0, 1, 3),
    "squeeze_range": lambda m, x: x.squeeze(3),
    "unsqueeze_range": lambda m, x: x.unsqueeze(5),
    "select_index": lambda m, x: x.select(0, 3),
    "select_neg_index": lambda m, x: x.select(1, -5),
    "select_dim": lambda m, x: x.select(3, 0),
    "narrow_length": lambda m, x: x.narrow(0, 1, 3),
    "narrow_start": lambda m, x: x.narrow(0, 4, 0),
    "narrow_negative_length": lambda m, x: x.narrow(0, 0, -1),
    "diagonal_same_dims": lambda m, x: x.diagonal(0, 1, 1),
    "unfold_size": lambda m, x: x.unfold(0, 4, 1),
    "unfold_step": lambda m, x: x.unfold(0, 2, 0),
    "flatten_order": lambda m, x: x.flatten(2, 1),
    "unflatten_sizes": lambda m, x: x.unflatten(1, (3, 2)),
    "movedim_len": lambda m, x: x.movedim((0, 1), (1,)),
    "movedim_repeat": lambda m, x: x.movedim((0, 0), (1, 2)),
    "as_strided_len": lambda m, x: x.as_strided((2, 2), (1,)),
    "as_strided_oob": lambda m, x: x.as_strided((10, 10), (10, 1)),
    "as_strided_neg": lambda m, x: x.as_strided((2,), (-1,)),
    "mT_1d": lambda m, x: x.select(0, 0).select(0, 0).mT,
    "expand_fewer_dims": lambda m, x: x.expand(4, 5),
    "view_incompatible": lambda m, x: x.transpose(0, 1).view(-1),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_view_errors(name):
    raises_like(ERRORS[name], np.zeros((3, 4, 5), np.float32))


@pytest.mark.filterwarnings("ignore:The use of `x.T` on tensors of dimension other than 2")
def test_t_of_small_tensors():
    check(lambda m, x: x.t(), np.array(3.))
    check(lambda m, x: x.t(), np.arange(3.))
    check(lambda m, x: x.T, np.arange(3.))
    check(lambda m, x: x.mT, np.arange(6.).reshape(1, 2, 3))


# ---- channels_last and contiguity -------------------------------------------------------------------------

def test_is_contiguous_memory_formats():
    def fn(m):
        x = m.empty(2, 3, 4, 5)
        cl = x.contiguous(memory_format=m.channels_last)
        y = m.empty(2, 3, 4, 5, 6)
        c3 = y.contiguous(memory_format=m.channels_last_3d)
        one = m.empty(2, 1, 4, 5)
        return (cl.stride(), cl.is_contiguous(), cl.is_contiguous(memory_format=m.channels_last),
                x.is_contiguous(memory_format=m.channels_last), c3.stride(),
                c3.is_contiguous(memory_format=m.channels_last_3d), y.is_contiguous(memory_format=m.channels_last_3d),
                one.is_contiguous(memory_format=m.channels_last), x.permute(0, 2, 3, 1).is_contiguous(),
                cl.permute(0, 2, 3, 1).is_contiguous(), m.empty(0, 3).t().is_contiguous(),
                m.empty(3, 1).t().is_contiguous(), m.empty(1, 3).expand(4, 3).is_contiguous())
    check(fn)
    check(lambda m, x: x.contiguous(memory_format=m.channels_last), noncontig(np.arange(24.).reshape(1, 2, 3, 4)))
    check(lambda m, x: x.clone(memory_format=m.channels_last).stride(), np.arange(24.).reshape(1, 2, 3, 4))


def test_contiguous_is_noop_when_contiguous():
    def fn(m):
        x = m.arange(6.).view(2, 3)
        return x.contiguous() is x, x.t().contiguous() is x.t(), x.narrow(0, 0, 1).contiguous()._base is x
    check(fn)


# ---- writes through views, version counter, _base -----------------------------------------------------------

def test_writes_through_views_reach_base():
    def fn(m, x):
        x = x.clone()
        x.t().narrow(0, 1, 1).fill_(-1)
        x.select(0, 0).mul_(10)
        x.diagonal().add_(100)
        x.unsqueeze(0).expand(1, 3, 4).select(0, 0).sub_(1)
        d = x.view(-1)
        d.narrow(0, 11, 1).zero_()
        return x, x._version, d._version
    check(fn, np.arange(12.).reshape(3, 4))


def test_base_is_root():
    def fn(m):
        x = m.arange(12.)
        v = x.view(3, 4)
        w = v.t().narrow(0, 1, 2).select(1, 0)
        return v._base is x, w._base is x, x._base is None, v.clone()._base is None
    check(fn)


def test_base_of_detach_and_view_dtype():
    check(lambda m: (m.zeros(4).view(2, 2).detach()._base is None, m.zeros(4).view(m.int32)._base is None))


def test_version_counter_shared():
    def fn(m):
        x = m.zeros(3, 4)
        v = x.narrow(1, 1, 2)
        w = x.t()
        v.add_(1)
        w.mul_(2)
        m.add(v, 1, out=v)
        x.select(0, 0).fill_(3)
        return x._version, v._version, w._version, x.clone()._version, x
    check(fn)


def test_row_2_data_ptr_and_row_12_sizes():
    def fn(m):
        x = m.arange(48).view(6, 8)
        y = x.narrow(0, 2, 3).narrow(1, 1, 2)
        return (y.data_ptr() - x.data_ptr(), y.untyped_storage().nbytes(), x.untyped_storage().nbytes(),
                y.element_size(), y.nbytes, y.itemsize, y.numel())
    check(fn)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                                   "bool", "complex64", "complex128", "bfloat16"])
def test_element_sizes(dtype):
    check(lambda m: (m.ones(3, dtype=getattr(m, dtype)).element_size(), m.ones(3, dtype=getattr(m, dtype)).nbytes,
                     m.ones(3, dtype=getattr(m, dtype)).itemsize,
                     m.ones(3, dtype=getattr(m, dtype)).untyped_storage().nbytes()))


def test_as_strided_overlapping_read():
    check(lambda m, x: x.as_strided((3, 3), (1, 1)), np.arange(6.))
    check(lambda m, x: x.as_strided((2, 2), (2, 1), 1), np.arange(6.))
    check(lambda m, x: x.narrow(0, 2, 3).as_strided((2,), (1,)).storage_offset(), np.arange(6.))
    check(lambda m, x: x.as_strided((0, 5), (100, 1)).shape, np.arange(6.))


def test_lantern_view_is_metadata_only():
    x = lantern.arange(12.)
    v = x.view(3, 4).t()
    assert v.untyped_storage() is x.untyped_storage()
    assert v._vc is x._vc
    assert torch.arange(12.).view(3, 4).t()._base is not None


# ---- property tests: random layouts against torch ---------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def strided_layouts(draw):
    """A shape, a permutation of it and a narrowing: the kind of non-contiguous tensor views produce."""
    ndim = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    perm = draw(st.permutations(range(ndim)))
    dim = draw(st.integers(0, ndim - 1))
    length = draw(st.integers(0, shape[perm[dim]]))
    start = draw(st.integers(0, shape[perm[dim]] - length))
    return shape, perm, dim, start, length


def _factorizations(n, draw):
    dims = []
    while n > 1 and len(dims) < 4:
        d = draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
        dims.append(d)
        n //= d
    if n > 1:
        dims.append(n)
    ones = draw(st.integers(0, 2))
    for _ in range(ones):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    return tuple(dims)


@settings(max_examples=150, deadline=None, database=None)
@given(strided_layouts(), st.data())
def test_view_and_reshape_random_layouts(layout, data):
    shape, perm, dim, start, length = layout
    n = int(np.prod(shape))

    def make(m):
        return m.arange(n).view(*shape).permute(*perm).narrow(dim, start, length)
    numel = make(torch).numel()
    target = _factorizations(numel, data.draw) if numel else (0, -1)

    def fn(m):
        x = make(m)
        try:
            v = x.view(target)
            view = (v.shape, v.stride(), v.storage_offset())
        except RuntimeError:
            view = "error"
        r = x.reshape(target)
        return view, r, r.data_ptr() == x.data_ptr() or r.numel() == 0
    matches_torch(fn)  # reshape into (0, -1) is an error


@settings(max_examples=100, deadline=None, database=None)
@given(strided_layouts())
def test_clone_and_contiguous_random_layouts(layout):
    shape, perm, dim, start, length = layout
    n = int(np.prod(shape))

    def fn(m):
        x = m.arange(n).view(*shape).permute(*perm).narrow(dim, start, max(length, 1))
        return x.clone().stride(), x.contiguous().stride(), x.is_contiguous(), x.to(m.float64).stride()
    matches_torch(fn)  # narrow past the end is an error


def test_empty_tensors_are_contiguous():
    check(lambda m: (m.arange(4).view(1, 2, 2).permute(0, 2, 1).narrow(0, 0, 0).is_contiguous(),
                     m.empty(3, 0).t().is_contiguous()))
