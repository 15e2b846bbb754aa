"""split, split_with_sizes, chunk, unbind and the unsafe_ forms against torch: one backward node shared by all
outputs (its name, the outputs' output_nr), views of the input, gradients from any subset of the outputs, double
backward, the in-place rule for multi-output views, conjugate views, vmap, torch.compile and the JIT tracer.
"""
import warnings

import numpy as np
import pytest
import torch

import lantern
from lantern.ops.derivative import TensorMeta
from lantern.ops.split_views import (split_backward, split_backward_on_arrays, split_with_sizes_backward,
                                     split_with_sizes_backward_on_arrays)
from oracle import check, noncontig, raises_like

CALLS = {
    "split_int": lambda x: x.split(2),
    "split_uneven_negative_dim": lambda x: x.split(3, dim=-1),
    "split_larger_than_dim": lambda x: x.split(10, 1),
    "split_list": lambda x: x.split([1, 0, 3], 0),
    "split_with_sizes": lambda x: x.split_with_sizes([2, 2], dim=0),
    "chunk": lambda x: x.chunk(3, 1),
    "chunk_uneven": lambda x: x.chunk(3, -1),
    "unbind": lambda x: x.unbind(),
    "unbind_negative_dim": lambda x: x.unbind(-1),
    "tensor_split": lambda x: x.tensor_split(3, 1),
    "hsplit": lambda x: x.hsplit(5),
    "unsafe_split": lambda x: x.unsafe_split(3, 1),
    "unsafe_split_with_sizes": lambda x: x.unsafe_split_with_sizes([3, 1]),
    "unsafe_chunk": lambda x: x.unsafe_chunk(2),
}


def _values(shape=(4, 5), dtype="float64"):
    return noncontig(np.random.default_rng(0).standard_normal(shape).astype(dtype))


def _structure(name, m):
    """What the node of each output looks like: name, output_nr, whether all share one node, view and base."""
    x = m.tensor(_values()).requires_grad_() * 1
    outs = CALLS[name](x)
    return [(o.grad_fn.name(), o.output_nr, o.grad_fn is outs[0].grad_fn, o._is_view(), o._base is x) for o in outs]


@pytest.mark.parametrize("name", CALLS)
def test_nodes_and_views_match_torch(name):
    assert _structure(name, lantern) == _structure(name, torch)


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("used", ["all", "first", "last"])
def test_values_and_gradients_match_torch(name, used):
    def run(m, x):
        x = x.requires_grad_()
        outs = CALLS[name](x)
        picked = {"all": outs, "first": outs[:1], "last": outs[-1:]}[used]
        m.stack([(o * (k + 2)).sum() for k, o in enumerate(picked)]).sum().backward()
        return [o.detach() for o in outs], x.grad
    check(run, _values())


def test_empty_dim_matches_torch():
    def run(m, x):
        x = x.requires_grad_()
        outs = x.split(2) + x.chunk(3) + x.split(0) + x.split([0, 0])
        sum(o.sum() for o in outs).backward()
        return [(o.shape, o.grad_fn.name()) for o in outs], x.grad
    got, expected = run(lantern, lantern.zeros(0, 3)), run(torch, torch.zeros(0, 3))
    assert [(tuple(s), n) for s, n in got[0]] == [(tuple(s), n) for s, n in expected[0]]
    assert tuple(got[1].shape) == tuple(expected[1].shape)


@pytest.mark.parametrize("name", ["split_uneven_negative_dim", "split_list", "chunk_uneven", "unbind_negative_dim",
                                  "unsafe_split", "unsafe_split_with_sizes"])
def test_gradcheck_and_gradgradcheck(name):
    x = lantern.tensor(_values((4, 5)), requires_grad=True)

    def f(t):
        return tuple(o * (k + 1) for k, o in enumerate(CALLS[name](t)))
    assert lantern.autograd.gradcheck(f, (x,))
    assert lantern.autograd.gradgradcheck(f, (x,))


def test_double_backward_matches_torch():
    def run(m, x):
        x = x.requires_grad_()
        a, b = x.split([1, 3])
        g, = m.autograd.grad((a ** 3).sum() + (b ** 2).sum(), x, create_graph=True)
        return m.autograd.grad((g * g).sum(), x)
    check(run, _values())


def assert_same(fast, readable):
    """Equal values (nan where nan), dtype, shape and strides."""
    assert (fast.dtype, fast.shape, fast.stride()) == (readable.dtype, readable.shape, readable.stride())
    np.testing.assert_array_equal(fast.numpy(), readable.numpy())


@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
def test_split_backward_on_arrays_matches_the_readable_formula(dtype):
    x = lantern.tensor(_values((4, 7, 5)), dtype=dtype)
    meta = TensorMeta(x)
    grad = lantern.tensor(_values((4, 3, 5)), dtype=dtype).transpose(0, 2).contiguous().transpose(0, 2)
    grad[0, 0, 0] = float("nan")
    for grads in ((grad, None, grad[:, :1]), (None, grad, grad[:, 2:]), (grad, grad, None)):
        assert_same(split_backward_on_arrays(grads, 3, -2, meta), split_backward(grads, 3, -2, meta))
    grads = (grad[:, :0], None, grad[:, :2], grad)
    assert_same(split_with_sizes_backward_on_arrays(grads, [0, 2, 2, 3], 1, meta),
                split_with_sizes_backward(grads, [0, 2, 2, 3], 1, meta))


def _inplace_on(make):
    def run(m, x):
        x = x.requires_grad_()
        make(m, x).mul_(2)
    return run


@pytest.mark.parametrize("make", [
    lambda m, x: x.split(2)[1],
    lambda m, x: (x * 1).split(2)[0],
    lambda m, x: (x * 1).split([1, 3])[1],
    lambda m, x: (x * 1).chunk(2)[1],
    lambda m, x: (x * 1).unbind(1)[3],
    lambda m, x: (x * 1).split(2)[0][0],
    lambda m, x: (x * 1).split(2)[1].view(-1),
    lambda m, x: (x * 1).split(2)[1][:, 1:],
    lambda m, x: (x * 1).split(2)[1].t(),
    lambda m, x: (x * 1).split(2)[1].flatten(),
    lambda m, x: (x * 1).split(2)[1].split(1)[0],
    lambda m, x: (x * 1).split(2)[1][:, :1].expand(2, 3),
], ids=["leaf", "split", "split_list", "chunk", "unbind", "select_of_output", "view_of_output", "slice_of_output",
        "t_of_output", "flatten_of_output", "split_of_output", "expand_of_output"])
def test_inplace_on_an_output_raises_as_torch(make):
    theirs, mine = raises_like(_inplace_on(make), _values(), match="returns multiple views")
    assert theirs == mine


@pytest.mark.parametrize("make", [
    lambda m, x: x.detach().split(2)[1],
    lambda m, x: (x * 1).tensor_split(2)[0],
    lambda m, x: m.ones(4, 5).split(2)[0],
    lambda m, x: (x * 1).unsafe_split(2)[0],
    lambda m, x: (x * 1).unsafe_chunk(2)[1],
], ids=["detached", "tensor_split", "no_grad_input", "unsafe_split", "unsafe_chunk"])
def test_inplace_allowed_as_in_torch(make):
    def run(m, x):
        x = x.requires_grad_()
        y = make(m, x)
        y.mul_(2)
        return y.detach()
    check(run, _values(), aliasing=False)


def test_using_an_output_after_its_base_changed_raises_as_torch():
    def run(m, x):
        y = x.requires_grad_() * 1
        a, b = y.split(2)
        y.mul_(2)
        return a * 3
    theirs, mine = raises_like(run, _values(), match="its base or another view of its base has been modified")
    assert theirs == mine


def test_inplace_under_no_grad_is_allowed():
    for m in (torch, lantern):
        y = m.ones(4, 5, requires_grad=True) * 1
        with m.no_grad():
            y.split(2)[0].mul_(2)
        assert y.detach().sum().item() == 30.0


@pytest.mark.parametrize("fn", [
    lambda m, x: x.split(0),
    lambda m, x: x.split(-1),
    lambda m, x: x.split([1, 2]),
    lambda m, x: x.split([-1, 5]),
    lambda m, x: x.split(2, dim=2),
    lambda m, x: x[0, 0].split(1),
    lambda m, x: x[0, 0].unbind(),
    lambda m, x: x[0, 0].unbind(1),
    lambda m, x: x.unbind(2),
    lambda m, x: x.split(2, -3),
    lambda m, x: x.chunk(0),
    lambda m, x: x.unsafe_split(0),
    lambda m, x: x.unsafe_chunk(-1),
])
def test_errors_match_torch(fn):
    raises_like(fn, _values())


def test_conjugate_input_keeps_its_bit_and_gradient():
    def run(m, x):
        x = x.requires_grad_()
        parts = x.conj().split(1)
        kept = [(p.is_conj(), p._base is x) for p in parts]
        (parts[0].abs().sum() + (parts[1] * 1j).real.sum()).backward()
        return kept, x.grad
    z = _values((2, 3)) + 1j * _values((2, 3))
    check(run, z, aliasing=False)


def test_unsafe_pieces_share_memory_but_not_the_version_counter():
    def run(m, x):
        y = x.requires_grad_() * 1
        pieces = m.unsafe_split(y, 2) + m.unsafe_chunk(m.zeros(0, requires_grad=True), 2)
        pieces[0].mul_(3)
        y.sum().backward()
        return ([(p.grad_fn.name(), p.output_nr, p._is_view(), p._version) for p in pieces], y._version,
                y.detach(), x.grad)
    check(run, _values(), aliasing=False)


def test_vmap_over_split_and_unbind():
    def run(m, x):
        return (m.vmap(lambda t: t.split(2, -1)[1] * t.unbind(-1)[0].unsqueeze(-1))(x),
                m.func.grad(lambda t: (t.split([1, 4])[1] ** 2).sum())(x[0]))
    check(run, _values())


def test_forward_derivatives_match_torch():
    def run(m, x):
        def f(t):
            return m.stack([p.sum() for p in t.split([1, 3]) + t.unbind(1) + m.unsafe_split(t, 3, 1)])
        return m.func.jvp(f, (x,), (x * 2,))
    check(run, _values())


def test_compile_matches_eager():
    def f(x):
        a, b = x.split([2, 3], dim=1)
        return (a.sum(1) * b.unbind(1)[0]).sum()
    x = lantern.tensor(_values(), requires_grad=True)
    compiled = lantern.compile(f)
    y = compiled(x)
    y.backward()
    got = x.grad.clone()
    x.grad = None
    f(x).backward()
    assert y.item() == pytest.approx(f(x).item())
    assert lantern.equal(got, x.grad)


def test_jit_trace_records_one_split_node_as_torch():
    def f(x):
        a, b = x.split(3, dim=-1)
        return a.sum() * b.unbind(-1)[0]

    def kinds(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = m.jit.trace(f, m.ones(4, 5))
        x = m.tensor(_values())
        assert m.equal(traced(x), f(x))
        return [n.kind() for n in traced.graph.nodes() if n.kind() != "prim::Constant"]
    assert kinds(lantern) == kinds(torch)
