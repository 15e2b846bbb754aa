"""MaskedTensor against torch's: construction and its checks, repr, the unary and binary ops (torch's own lists of
them), reductions, pass-through ops, the ops torch refuses, and gradients. Two MaskedTensors match when their masks
are equal and their data agree where the mask keeps them (what sits under a masked-out element is not defined)."""
import copy
import io
import warnings

import numpy as np
import pytest
import torch
from torch.masked.maskedtensor import binary as torch_binary, unary as torch_unary

import lantern
from lantern.ops import dispatcher, registry
from oracle import assert_same, same_error_class, to_lib

rng = np.random.default_rng(0)
DATA = rng.uniform(0.2, 0.9, (2, 3))
MASK = np.array([[True, False, True], [False, True, True]])


@pytest.fixture(autouse=True)
def _no_prototype_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def make(lib, data=DATA, mask=MASK, requires_grad=False):
    data, mask = to_lib(lib, np.asarray(data)), to_lib(lib, np.asarray(mask))
    return lib.masked.masked_tensor(data, mask, requires_grad=requires_grad)


def assert_masked_same(got, expected):
    """Same type; for MaskedTensors the same mask, and the same data where it is kept."""
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_masked_same(g, e)
        return
    if not torch.masked.is_masked_tensor(expected):
        assert not lantern.masked.is_masked_tensor(got)
        assert_same(got, expected, strides=False)
        return
    assert lantern.masked.is_masked_tensor(got), f"expected a MaskedTensor, got {type(got).__name__}"
    assert_same(got.get_mask(), expected.get_mask(), strides=False)
    keep = expected.get_mask()
    assert_same(got.get_data().detach().masked_fill(~got.get_mask(), 0),
                expected.get_data().detach().masked_fill(~keep, 0), strides=False)


def compare(fn, *inputs):
    """fn(lib, *inputs) on torch and lantern: the same MaskedTensors, or the same exception class."""
    try:
        expected = fn(torch, *inputs)
    except Exception as torch_exc:
        with pytest.raises(Exception) as info:
            fn(lantern, *inputs)
        assert same_error_class(type(torch_exc), type(info.value)), (torch_exc, info.value)
        return
    assert_masked_same(fn(lantern, *inputs), expected)


def test_names_and_types():
    mt = make(lantern)
    assert isinstance(mt, lantern.Tensor) and isinstance(mt, lantern.masked.MaskedTensor)
    assert lantern.masked.is_masked_tensor(mt) and not lantern.masked.is_masked_tensor(mt.get_data())
    assert (mt.shape, mt.dtype, mt.layout, mt.device) == ((2, 3), lantern.float64, lantern.strided,
                                                          lantern.device("cpu"))
    for module in ("core", "creation"):
        names = getattr(torch.masked.maskedtensor, module).__all__
        assert all(hasattr(getattr(lantern.masked.maskedtensor, module), name) for name in names)


@pytest.mark.parametrize("data, mask", [
    (DATA, MASK), (DATA[0], MASK[0]), (DATA[0, 0], MASK[0, 1]), (DATA[0, 0], MASK[0, 0]),
    (np.array([[3, -1], [20, 7]]), MASK[:, :2]), (np.array([True, False]), MASK[0, :2]),
])
def test_repr(data, mask):
    assert repr(make(lantern, data, mask)) == repr(make(torch, data, mask))


@pytest.mark.parametrize("data, mask", [
    (DATA, MASK.astype(np.int64)),            # mask not bool
    (DATA.astype(np.complex64), MASK),        # a dtype MaskedTensor refuses
    (DATA, MASK[0]),                          # another shape
    (DATA.astype(np.uint8), MASK),
])
def test_construction_checks(data, mask):
    compare(lambda lib: make(lib, data, mask))


def test_construction_copies_and_as_masked_tensor_does_not():
    data, mask = lantern.tensor(DATA), lantern.tensor(MASK)
    assert lantern.masked.masked_tensor(data, mask).get_data().data_ptr() != data.data_ptr()
    assert lantern.masked.as_masked_tensor(data, mask).get_data() is data
    with pytest.raises(TypeError, match="data must be a Tensor"):
        lantern.masked.MaskedTensor(DATA, mask)
    with pytest.warns(UserWarning, match="prototype stage"):
        lantern.masked.MaskedTensor(data, mask)


UNARY_ARGUMENTS = {"clamp": (0.3,), "clip": (0.3, 0.6), "pow": (2,)}


@pytest.mark.parametrize("name", torch_unary.UNARY_NAMES)
def test_unary_ops_keep_the_mask(name):
    data = (DATA * 10).astype(np.int64) if name == "bitwise_not" else DATA
    compare(lambda lib: getattr(lib, name)(make(lib, data), *UNARY_ARGUMENTS.get(name, ())))
    if name + "_" in torch_unary.INPLACE_UNARY_NAMES:
        def in_place(lib):
            mt = make(lib, data)
            assert getattr(mt, name + "_")(*UNARY_ARGUMENTS.get(name, ())) is mt
            return mt
        compare(in_place)


@pytest.mark.parametrize("name", torch_binary.BINARY_NAMES)
def test_binary_ops_need_equal_masks(name):
    data = (DATA * 10).astype(np.int64) if name.startswith("bitwise") else DATA
    other = data[::-1] + 1
    compare(lambda lib: getattr(lib, name)(make(lib, data), make(lib, other)))
    compare(lambda lib: getattr(lib, name)(make(lib, data), to_lib(lib, other)))
    compare(lambda lib: getattr(lib, name)(make(lib, data), make(lib, other, ~MASK)))
    if name + "_" in torch_binary.INPLACE_BINARY_NAMES:
        compare(lambda lib: getattr(make(lib, data), name + "_")(make(lib, other)))


@pytest.mark.parametrize("call", [
    lambda lib, mt: mt.sum(), lambda lib, mt: mt.sum(1), lambda lib, mt: mt.mean(0), lambda lib, mt: mt.amax(1),
    lambda lib, mt: lib.amin(mt), lambda lib, mt: mt.argmax(), lambda lib, mt: mt.argmin(1),
    lambda lib, mt: mt.prod(1, keepdim=True), lambda lib, mt: mt.var(), lambda lib, mt: mt.std(1),
    lambda lib, mt: (mt > 0.5).all(), lambda lib, mt: (mt > 0.5).all(1), lambda lib, mt: lib.sum(mt, (0, 1)),
    lambda lib, mt: lib.masked.sum(mt, 1), lambda lib, mt: lib.masked.amax(mt),
])
def test_reductions(call):
    compare(lambda lib: call(lib, make(lib)))


@pytest.mark.parametrize("call", [
    lambda lib, mt: mt.t(), lambda lib, mt: mt.transpose(0, 1), lambda lib, mt: mt[1], lambda lib, mt: mt[:, 1:],
    lambda lib, mt: mt[lib.tensor([1, 0, 1])], lambda lib, mt: mt.view(6), lambda lib, mt: mt.reshape(3, 2),
    lambda lib, mt: mt.unsqueeze(0), lambda lib, mt: mt.expand(2, 2, 3), lambda lib, mt: mt.split(1),
    lambda lib, mt: lib.cat([mt, mt], 1), lambda lib, mt: lib.stack([mt, mt]), lambda lib, mt: mt.unfold(1, 2, 1),
    lambda lib, mt: mt.clone(), lambda lib, mt: mt.detach(), lambda lib, mt: mt.float(), lambda lib, mt: mt.int(),
    lambda lib, mt: mt.softmax(1), lambda lib, mt: lib.where(mt.get_data() > 0.5, mt, mt.get_data()),
    lambda lib, mt: lib.where(mt.get_mask(), mt, 0.0), lambda lib, mt: mt.isfinite(),
    lambda lib, mt: mt.to_tensor(0), lambda lib, mt: mt.t().contiguous(),
    lambda lib, mt: mt.clone().copy_(mt * 2), lambda lib, mt: mt.clone().copy_(make(lib, DATA, ~MASK)),
])
def test_pass_through_ops(call):
    compare(lambda lib: call(lib, make(lib)))


@pytest.mark.parametrize("call", [   # and Python values
    lambda lib, mt: mt.permute(1, 0), lambda lib, mt: lib.fft.fft(mt), lambda lib, mt: mt.log_softmax(1),
    lambda lib, mt: lib.linalg.vector_norm(mt), lambda lib, mt: mt.masked_fill(mt.get_mask(), 0),
    lambda lib, mt: mt.numpy(), lambda lib, mt: lib.matmul(mt, mt.t()), lambda lib, mt: mt.tolist(),
    lambda lib, mt: mt.item(), lambda lib, mt: mt[0, 1].item(), lambda lib, mt: float(mt[0, 0]),
    lambda lib, mt: bool(mt[1, 2] > 0.1),
])
def test_ops_torch_refuses(call):
    compare(lambda lib: call(lib, make(lib)))


@pytest.mark.parametrize("call", [
    lambda lib, mt: mt.sum(), lambda lib, mt: (mt * mt).sum(), lambda lib, mt: lib.sin(mt).sum(),
    lambda lib, mt: mt.amax(), lambda lib, mt: (mt + 1).mean(), lambda lib, mt: mt.softmax(1).sum(),
])
def test_gradients_under_the_leafs_mask(call):
    def grad(lib):
        mt = make(lib, requires_grad=True)
        out = call(lib, mt)
        assert lantern.masked.is_masked_tensor(out) or torch.masked.is_masked_tensor(out)
        out.backward()
        return mt.grad
    compare(grad)


def test_autograd_grad_of_masked_tensors_is_a_clear_error():
    mt = make(lantern, requires_grad=True)
    with pytest.raises(TypeError, match="call .backward"):
        lantern.autograd.grad((mt * mt).sum(), mt)
    grad, = lantern.autograd.grad((mt * mt).sum().get_data(), mt.get_data())
    assert grad.tolist() == (2 * DATA * MASK).tolist()


def test_autograd_state_follows_the_data():
    mt = make(lantern, requires_grad=True)
    assert mt.requires_grad and mt.is_leaf and mt.grad_fn is None and mt.grad is None
    out = lantern.sin(mt)
    assert out.requires_grad and not out.is_leaf and out.grad_fn.name() == "SinBackward0"
    data = lantern.tensor(DATA, requires_grad=True)
    lantern.masked.as_masked_tensor(data * 3, lantern.tensor(MASK)).sum().backward()
    assert data.grad.tolist() == (3 * MASK).tolist()


def test_masked_functions_take_a_masked_tensor_and_its_mask():
    def grad(lib):
        mt = make(lib, requires_grad=True)
        out = lib.masked.sum(mt, 1) + lib.masked.amax(mt, 1)
        assert not lib.masked.is_masked_tensor(out)
        out.sum().backward()
        return out, mt.grad
    compare(grad)


def test_save_load_and_deepcopy():
    mt = make(lantern, requires_grad=True)
    buffer = io.BytesIO()
    lantern.save(mt, buffer)
    buffer.seek(0)
    for loaded in (lantern.load(buffer, weights_only=False), copy.deepcopy(mt)):
        assert repr(loaded) == repr(mt) and loaded.requires_grad
    buffer.seek(0)
    with pytest.raises(Exception) as info:   # weights_only refuses the MaskedTensor class, as torch's does
        lantern.load(buffer)
    assert "Weights only load failed" in str(info.value)


SPARSE_DATA = np.array([[0., 0., 3.], [4., 0., 5.]])
SPARSE_MASK = np.array([[False, False, True], [False, False, True]])


def sparse(lib, layout="coo", data=SPARSE_DATA, mask=SPARSE_MASK):
    convert = (lambda t: t.to_sparse()) if layout == "coo" else (lambda t: t.to_sparse_csr())
    data, mask = to_lib(lib, np.asarray(data)), to_lib(lib, np.asarray(mask))
    return lib.masked.masked_tensor(convert(data), convert(mask))


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("call", [
    lambda lib, mt: mt, lambda lib, mt: (mt.layout, mt.is_sparse, mt.is_sparse_coo(), mt.is_sparse_csr()),
    lambda lib, mt: mt.to_dense(), lambda lib, mt: mt.get_data().to_dense(), lambda lib, mt: mt.get_mask().to_dense(),
    lambda lib, mt: mt.sin(), lambda lib, mt: mt + mt, lambda lib, mt: mt * 2, lambda lib, mt: mt.sum(),
    lambda lib, mt: mt.amax(),
    lambda lib, mt: mt.mean(), lambda lib, mt: mt.argmax(), lambda lib, mt: mt.sum(1),
])
def test_sparse_masked_tensors(layout, call):
    def run(lib):
        out = call(lib, sparse(lib, layout))
        return out.to_dense() if lib.masked.is_masked_tensor(out) else out
    compare(run)


@pytest.mark.parametrize("call", [
    lambda lib: make(lib, SPARSE_DATA, SPARSE_MASK).to_sparse(),
    lambda lib: make(lib, SPARSE_DATA, SPARSE_MASK).to_sparse_csr(),
    lambda lib: make(lib, SPARSE_DATA, SPARSE_MASK).to_sparse().to_sparse_csr().get_data().to_dense(),
    lambda lib: make(lib, SPARSE_DATA[0], SPARSE_MASK[0]).to_sparse_csr(),        # CSR needs 2 dims
    lambda lib: lib.masked.masked_tensor(to_lib(lib, SPARSE_DATA).to_sparse(), to_lib(lib, SPARSE_MASK)),
    lambda lib: sparse(lib, "coo", [[1., 0.], [0., 2.]], [[True, True], [False, True]]),  # aligned to the mask
])
def test_sparse_conversions_and_checks(call):
    def run(lib):
        out = call(lib)
        assert out.layout == out.get_data().layout == out.get_mask().layout
        return (str(out.layout).split(".")[-1], out.to_dense())
    compare(run)


def test_sparse_in_place_ops_and_other_positions():
    """In place, the op writes the values (torch's COO path fails there, asking for coalesced indices; its CSR path
    works); masks at other positions do not match (torch fails comparing their values)."""
    compare(lambda lib: sparse(lib, "csr").exp_().to_dense())
    compare(lambda lib: (lambda mt: mt.mul_(mt).to_dense())(sparse(lib, "csr")))
    mt = sparse(lantern, "coo")
    assert mt.exp_() is mt and mt.get_data().to_dense()[1, 2].item() == pytest.approx(np.exp(5.0))
    with pytest.raises(ValueError, match="Input masks must match"):
        sparse(lantern) + sparse(lantern, "coo", SPARSE_DATA, SPARSE_DATA != 0)


def test_ops_registered_later_refuse_masked_tensors_too():
    op = registry.custom("_test_masked_later(Tensor self) -> Tensor", lambda backend, self: self, backends=("cpu",))
    try:
        with pytest.raises(TypeError, match="_test_masked_later is not implemented for MaskedTensor"):
            dispatcher.call(op, (make(lantern),))
    finally:  # a throwaway op: later tests walk the registry
        del registry.REGISTRY["_test_masked_later"]
