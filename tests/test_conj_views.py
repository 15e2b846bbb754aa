"""Conjugate and negative views (issue 17 item 6) against torch: the bits, strides, aliasing, values, printing,
in-place writes through the bits, autograd, and the errors of views that cannot carry a bit."""
import numpy as np
import pytest
import torch

import lantern
import oracle
from oracle import noncontig, raises_like

Z = noncontig(np.array([[1 + 2j, 3 - 4j, -0.5j], [2.0, -1 + 1j, 5 + 0.25j]], dtype=np.complex64))
R = noncontig(np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -4.0]], dtype=np.float32))


def bits(t):
    return t.is_conj(), t.is_neg()


def check_bits(fn, *inputs):
    """oracle.check (values, dtype, strides, aliasing of the inputs) plus the conjugate and negative bits of every
    tensor result."""
    torch_inputs, lantern_inputs = oracle._convert(inputs)
    expected = fn(torch, *torch_inputs)
    got = oracle._lantern_matches(expected, fn, torch_inputs, lantern_inputs, None, None, True)
    for g, e in zip(_flat(got), _flat(expected), strict=True):
        assert bits(g) == bits(e), f"bits: lantern {bits(g)}, torch {bits(e)}"


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [t for y in x for t in _flat(y)]
    return [x] if isinstance(x, (torch.Tensor, lantern.Tensor)) else []


VIEW_CASES = {
    "conj": lambda m, z: z.conj(),
    "function conj": lambda m, z: m.conj(z),
    "_conj": lambda m, z: m._conj(z),
    "conj of conj": lambda m, z: z.conj().conj(),
    "select": lambda m, z: z.conj()[1],
    "slice": lambda m, z: z.conj()[:, 1:],
    "transpose": lambda m, z: z.conj().t(),
    "mT": lambda m, z: z.mT.conj(),
    "adjoint": lambda m, z: z.adjoint(),
    "mH": lambda m, z: z.mH,
    "expand": lambda m, z: z.conj()[:1].expand(3, 3),
    "unsqueeze": lambda m, z: z.conj().unsqueeze(0),
    "reshape (a view)": lambda m, z: z.conj()[0].reshape(3, 1),
    "reshape (a copy)": lambda m, z: z.conj().t().reshape(6),
    "contiguous (a copy)": lambda m, z: z.conj().contiguous(),
    "detach": lambda m, z: z.conj().detach(),
    "real": lambda m, z: z.conj().real,
    "imag": lambda m, z: z.conj().imag,
    "imag of imag's neg": lambda m, z: m._neg_view(z.conj()).imag,
    "real of neg": lambda m, z: m._neg_view(z).real,
    "neg of conj": lambda m, z: m._neg_view(z.conj()),
    "conj of neg": lambda m, z: m._neg_view(z).conj(),
    "neg of neg": lambda m, z: m._neg_view(m._neg_view(z)),
    "view_as_real of neg": lambda m, z: m.view_as_real(m._neg_view(z)),
    "resolve_conj": lambda m, z: z.conj().resolve_conj(),
    "resolve_neg": lambda m, z: m._neg_view(z).resolve_neg(),
    "resolve_conj of plain": lambda m, z: z.resolve_conj(),
    "conj_physical": lambda m, z: m.conj_physical(z.conj()),
    "clone": lambda m, z: z.conj().clone(),
    "to another dtype": lambda m, z: z.conj().to(m.complex128),
}


@pytest.mark.parametrize("case", VIEW_CASES)
def test_views_and_resolution_match_torch(case):
    check_bits(VIEW_CASES[case], Z)


def test_conj_shares_memory_strides_and_base():
    x = lantern.tensor([[1 + 2j, 3j], [4.0, 5 - 1j]]).t()
    y = x.conj()
    assert y.is_conj() and not x.is_conj()
    assert y.data_ptr() == x.data_ptr() and y.stride() == x.stride() and y.storage_offset() == x.storage_offset()
    assert y._base is x._base and y._version == x._version


def test_real_tensors_have_no_conjugate_view():
    r = lantern.tensor([1.0, 2.0])
    assert r.conj() is r and lantern.conj(r) is r and not r.is_conj()
    n = lantern._neg_view(r)
    assert n.is_neg() and n.tolist() == [-1.0, -2.0] and n.resolve_neg().tolist() == [-1.0, -2.0]


OP_CASES = {
    "add": lambda m, z: z.conj() + z,
    "mul scalar": lambda m, z: z.conj() * (2 - 1j),
    "abs": lambda m, z: z.conj().abs(),
    "sum": lambda m, z: z.conj().sum(0),
    "matmul": lambda m, z: z.conj() @ z.mT,
    "matmul of adjoint": lambda m, z: z.mH @ z,
    "exp": lambda m, z: z.conj().exp(),
    "cat": lambda m, z: m.cat([z.conj(), z]),
    "neg view + real": lambda m, z: m._neg_view(z.real) + z.real,
    "eq": lambda m, z: z.conj() == m.conj_physical(z),
    "stack of views": lambda m, z: m.stack([z.conj()[0], m._neg_view(z)[1]]),
    "unsafe_split": lambda m, z: m.unsafe_split(z.conj(), 1, 1),
    "unsafe_chunk of neg": lambda m, z: m._neg_view(z).unsafe_chunk(2),
}


@pytest.mark.parametrize("case", OP_CASES)
def test_ops_read_the_resolved_values(case):
    check_bits(OP_CASES[case], Z)


def test_equal_and_item_and_tolist():
    x = lantern.tensor([1 + 2j, -3j])
    assert lantern.equal(x.conj(), x.conj_physical())
    assert x.conj()[0].item() == 1 - 2j
    assert x.conj().tolist() == [1 - 2j, 3j]
    assert lantern._neg_view(x).imag.tolist() == [-2.0, 3.0]


INPLACE_CASES = {
    "add_ into conj": lambda m, z: (lambda v: (v.add_(1j), z))(z.conj()),
    "mul_ into conj": lambda m, z: (lambda v: (v.mul_(2 + 1j), z))(z.conj()),
    "copy_ into conj": lambda m, z: (lambda v: (v.copy_(z * 2), z))(z.conj()),
    "copy_ from conj": lambda m, z: m.zeros_like(z).copy_(z.conj()),
    "zero_ conj slice": lambda m, z: (z.conj()[:, 1].zero_(), z),
    "fill_ into conj": lambda m, z: (z.conj()[0].fill_(1 + 1j), z),
    "conj_physical_ of conj": lambda m, z: (lambda v: (v.conj_physical_(), z))(z.conj()),
    "add_ into conj's imag": lambda m, z: (z.conj().imag.add_(1), z),
    "add_ into neg": lambda m, z: (m._neg_view(z).add_(1), z),
    "setitem into conj": lambda m, z: (lambda v: (v.__setitem__((0, 0), 7j), v, z))(z.conj()),
    "out= a conj view": lambda m, z: (lambda v: (m.mul(z, 2, out=v), z))(z.clone().conj()),
}


@pytest.mark.parametrize("case", INPLACE_CASES)
def test_writes_go_through_the_bits(case):
    check_bits(INPLACE_CASES[case], Z)


def test_a_write_counts_one_version_on_the_base():
    x = lantern.tensor([1 + 1j, 2j])
    y = x.conj()
    before = x._version
    y.add_(1)
    assert x._version == y._version == before + 1


ERROR_CASES = {
    "view_as_real of conj": lambda m, z: m.view_as_real(z.conj()),
    "view dtype of conj": lambda m, z: z.conj().view(m.complex64),
    "view dtype of neg": lambda m, z: m._neg_view(z.real).view(m.float32),
    "numpy of conj": lambda m, z: z.conj().numpy(),
    "numpy of neg": lambda m, z: m._neg_view(z).numpy(),
}


@pytest.mark.parametrize("case", ERROR_CASES)
def test_views_that_cannot_carry_a_bit_raise_as_torch(case):
    raises_like(ERROR_CASES[case], Z)


@pytest.mark.parametrize("make", ["conj", "neg"])
def test_numpy_force_resolves_the_bits(make):
    def run(m):
        z = m.tensor([1 + 2j, -3j])
        view = z.conj() if make == "conj" else m._neg_view(z)
        return view.numpy(force=True)
    np.testing.assert_array_equal(run(lantern), run(torch))


def test_error_messages_name_the_bit():
    z = lantern.tensor([1j])
    with pytest.raises(RuntimeError, match="unresolved conjugated tensors"):
        lantern.view_as_real(z.conj())
    with pytest.raises(RuntimeError, match="conjugate bit set"):
        z.conj().numpy()
    with pytest.raises(RuntimeError, match="negative bit set"):
        lantern._neg_view(z).numpy()


@pytest.mark.parametrize("make", ["conj", "neg"])
def test_printing_shows_the_values(make):
    values = [1 + 2j, -3j]
    t = {"conj": lambda m: m.tensor(values).conj(), "neg": lambda m: m._neg_view(m.tensor(values))}[make]
    assert repr(t(lantern)) == repr(t(torch))
    assert str(t(lantern)[0]) == str(t(torch)[0])


GRAD_CASES = {
    "conj": lambda m, z: z.conj(),
    "conj then mul": lambda m, z: z.conj() * (2 + 3j),
    "neg view": lambda m, z: m._neg_view(z) * (1 - 1j),
    "resolve_conj": lambda m, z: z.conj().resolve_conj() * z,
    "conj imag": lambda m, z: z.conj().imag * 3,
    "adjoint matmul": lambda m, z: z.mH @ z,
}


@pytest.mark.parametrize("case", GRAD_CASES)
def test_gradients_through_the_views(case):
    def grads(m):
        z = m.tensor([[1 + 2j, 3 - 4j], [-1j, 2 + 0.5j]], dtype=m.complex128, requires_grad=True)
        out = GRAD_CASES[case](m, z)
        (out.abs() ** 2).sum().backward()
        return type(out.grad_fn).__name__, z.grad.resolve_conj().tolist()
    (got_name, got), (want_name, want) = grads(lantern), grads(torch)
    assert got_name == want_name
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_grad_fn_names():
    z = lantern.tensor([1 + 1j], requires_grad=True)
    assert type(z.conj().grad_fn).__name__ == "ConjBackward0"
    assert type(z.conj().resolve_conj().grad_fn).__name__ == "CloneBackward0"
    assert type(lantern._neg_view(z).grad_fn).__name__ == "NegViewBackward0"


def test_meta_tensors_carry_the_bits():
    m = lantern.empty(2, 3, dtype=lantern.complex64, device="meta")
    y = m.conj()
    assert y.is_conj() and y.device.type == "meta" and (y + 1).shape == (2, 3) and not (y + 1).is_conj()
    assert y.t().is_conj() and y.imag.is_neg()


def test_dispatch_keys_name_the_bits():
    """A view's bits put their keys in the key set, above the device's (whose kernel runs after the fallback)."""
    from lantern.ops import dispatcher, registry
    x = lantern.tensor([1j])
    keys = dispatcher.explain_keys(registry.get("add"), (x, x.conj(), 1))
    assert [(k.name, why) for k, why in keys] == [("Conjugate", "input 1 is a conjugate view"),
                                                  ("CPU", "inputs are on cpu")]
    keys = dispatcher.dispatch_keys(registry.get("add"), (lantern._neg_view(x), x.conj(), 1))
    assert [k.name for k in keys] == ["Negative", "Conjugate", "CPU"]


def test_in_place_write_into_a_conjugate_view_of_a_graph_tensor():
    """CopySlices passes the gradient through the view's bits (the base holds the conjugate of what was written)."""
    def run(m):
        z = m.tensor([1 + 1j, 2 - 1j, 0.5j], dtype=m.complex128, requires_grad=True)
        w = m.tensor([3 - 1j], dtype=m.complex128, requires_grad=True)
        a = z * 1
        a.conj().mul_(2j)
        a[1:].conj().mul_(w)
        m._neg_view(a[:2]).add_(w * 1j)
        (a.abs() ** 2).sum().backward()
        return a.detach().tolist(), z.grad.tolist(), w.grad.tolist()
    for got, want in zip(run(lantern), run(torch), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("writer, reader", [(torch, lantern), (lantern, torch), (lantern, lantern)])
def test_checkpoints_keep_the_bits(writer, reader):
    import io
    saved = {"conj": writer.tensor([1 + 2j, -3j]).conj(), "neg": writer._neg_view(writer.tensor([1.0, -2.0]))}
    buffer = io.BytesIO()
    writer.save(saved, buffer)
    buffer.seek(0)
    loaded = reader.load(buffer)
    assert loaded["conj"].is_conj() and loaded["conj"].tolist() == [1 - 2j, 3j]
    assert loaded["neg"].is_neg() and loaded["neg"].tolist() == [-1.0, 2.0]


def test_deepcopy_holds_the_values():
    import copy
    check_bits(lambda m, z: copy.deepcopy(z.conj()), Z)
    check_bits(lambda m, z: copy.deepcopy(m._neg_view(z)), Z)


@pytest.mark.parametrize("fn", [lambda z: z.conj() * z.sin(), lambda z: lantern._neg_view(z).exp(),
                                lambda z: (z.conj().t() @ z).imag, lambda z: lantern._neg_view(z.conj()).resolve_neg()],
                         ids=["conj", "neg view", "adjoint product", "neg of conj resolved"])
def test_gradcheck_and_gradgradcheck_through_the_views(fn):
    z = lantern.tensor([[1 + 2j, -0.5j], [0.25, 2 - 1j]], dtype=lantern.complex128, requires_grad=True)
    assert lantern.autograd.gradcheck(fn, (z,))
    assert lantern.autograd.gradgradcheck(fn, (z,))
