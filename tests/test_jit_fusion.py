"""Fused elementwise kernels (lantern/jit/fusion*.py): values and gradients against torch eager.

Each case is a function of elementwise ops written once; torch runs it eagerly, lantern runs it as a
prim::FusionGroup subgraph (built with lantern.jit.ir) through `run_fusion_group`. Kernels compile once per
specialisation, so the cases pack many ops into few programs to keep the file fast.
"""
import numpy as np
import pytest
import torch

import lantern
from lantern.jit import fusion
from lantern.jit.fusion import fuse, run_fusion_group
from lantern.jit.ir import Graph, parse_ir
from oracle import assert_same, noncontig, to_lib


class _SymLib:
    """What a case calls as `lib` while it is recorded into a subgraph."""

    class nn:
        class functional:
            gelu = staticmethod(lambda x, approximate="none": x._op("gelu", x, approximate))
            silu = staticmethod(lambda x: x._op("silu", x))
            leaky_relu = staticmethod(lambda x, slope=0.01: x._op("leaky_relu", x, slope))
            hardtanh = staticmethod(lambda x, lo=-1.0, hi=1.0: x._op("hardtanh", x, lo, hi))
            softplus = staticmethod(lambda x, beta=1, threshold=20: x._op("softplus", x, beta, threshold))

    @staticmethod
    def where(c, a, b):
        return c._op("where", c, a, b)

    @staticmethod
    def maximum(a, b):
        return a._op("maximum", a, b)

    @staticmethod
    def minimum(a, b):
        return a._op("minimum", a, b)


def fusion_node(fn, n_inputs):
    """A prim::FusionGroup node whose Subgraph holds `fn(lib, *inputs)` as aten nodes and constants."""
    program, _ = fuse(lambda *xs: fn(_SymLib, *xs)).program(n_inputs)
    sub = Graph()
    values = [sub.addInput(f"x{k}") for k in range(n_inputs)]
    made = []

    def value(ref):
        kind, x = ref
        return values[x] if kind == "in" else made[x] if kind == "node" else sub.insertConstant(x)

    for op, args in program.nodes:
        node = sub.create(f"aten::{op}", [value(a) for a in args])
        node.attrs["op"] = op
        sub.insertNode(node)
        made.append(node.output())
    for ref in program.outputs:
        sub.registerOutput(value(ref))
    outer = Graph()
    inputs = [outer.addInput() for _ in range(n_inputs)]
    group = outer.create("prim::FusionGroup", inputs, num_outputs=len(program.outputs))
    group.g_("Subgraph", sub)
    outer.insertNode(group)
    return group


def compare(fn, arrays, grad=True, atol=1e-5, rtol=1e-5, scalars=(), fused=True):
    """Values (and gradients for random grad_outputs) of the fused group against torch eager."""
    node = fusion_node(fn, len(arrays) + len(scalars))
    results = {}
    for lib in (torch, lantern):
        xs = [to_lib(lib, a) for a in arrays]
        if grad:
            xs = [x.requires_grad_() if x.dtype.is_floating_point else x for x in xs]
        args = xs + list(scalars)
        outs = run_fusion_group(node, args) if lib is lantern else fn(torch, *args)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        grads = []
        if grad:
            rng = np.random.default_rng(1)
            pairs = [(o, to_lib(lib, rng.standard_normal(tuple(o.shape)).astype(str(o.dtype).split(".")[-1])))
                     for o in outs if o.requires_grad]
            leaves = [x for x in xs if x.requires_grad]
            grads = list(lib.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True))
        results[lib] = (outs, grads)
    (t_outs, t_grads), (l_outs, l_grads) = results[torch], results[lantern]
    assert_same(l_outs, t_outs, atol=atol, rtol=rtol, strides=False)
    assert_same(l_grads, t_grads, atol=atol, rtol=rtol, strides=False)
    if grad and l_outs[0].requires_grad:
        assert (type(l_outs[0].grad_fn).__name__ == "FusedGroupBackward") == fused
    return l_outs


def gelu_chain(lib, x):
    return x * 0.5 * (1 + (0.79788456 * (x + 0.044715 * x ** 3)).tanh())


def arith_mix(lib, x, y):
    a = (x + y * 2) - 3.0 * x / (y * y + 1) + (-x) ** 2 + 1 / (x * x + 0.5)
    return a * x.sigmoid() - (y - 0.5).tanh(), 2 - a


def transcendental_mix(lib, x, y):
    z = x.abs() + 0.1
    return z.log() + z.sqrt() * z.rsqrt() + (y * 0.5).exp() + z.reciprocal() + y.erf() + (0.3 * y).expm1() \
        + z.log1p() + x.sin() * y.cos() + x.square() + x ** 0.5 + z ** -1 + z ** -0.5 + z ** 1.7


def piecewise_mix(lib, x, y):
    f = lib.nn.functional
    return (x.relu() + x.clamp(-0.5, 0.7) + y.clamp(min=0.1) + lib.where(x > y, x * y, y - 1)
            + f.leaky_relu(x, 0.2) + f.hardtanh(y, -0.3, 0.4) + f.silu(x) + f.gelu(y) + f.gelu(x, approximate="tanh")
            + lib.where(y <= 0.2, x, 0.5 * y) + lib.maximum(x, y) * lib.minimum(x, 0.5 * y) + f.softplus(x, 2, 1)
            + (x * 3).floor() + y.ceil() + (x * 2).trunc())


@pytest.mark.parametrize("fn", [gelu_chain, arith_mix, transcendental_mix, piecewise_mix])
def test_op_mixes_match_torch_values_and_grads(fn):
    rng = np.random.default_rng(0)
    n = fn.__code__.co_argcount - 1
    arrays = [noncontig(rng.standard_normal((5, 6)).astype(np.float32)) for _ in range(n)]
    compare(fn, arrays)


def test_broadcast_inputs_get_summed_gradients():
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(3, 1, 4), (5, 1), (4,), (), (1, 1, 1)]]
    outs = compare(lambda lib, a, b, c, d, e: (a * b + c).tanh() * d - e * a, arrays)
    assert tuple(outs[0].shape) == (3, 5, 4)


def test_bool_outputs_are_not_differentiable_and_narrower_outputs_run_op_by_op():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((3, 1)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    outs = compare(lambda lib, x, y: (x * y, x > y), [a, b])
    assert outs[0].requires_grad and not outs[1].requires_grad
    compare(lambda lib, x, y: ((x + 1).exp(), x * y), [a, b], fused=False)


def test_expanded_and_one_element_inputs_run_as_scalars():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    node = fusion_node(lambda lib, a, b: (a * b).sigmoid(), 2)
    got = run_fusion_group(node, [lantern.tensor(x), lantern.tensor([2.0]).expand(4, 3)])
    np.testing.assert_allclose(got[0].numpy(), torch.sigmoid(torch.tensor(x) * 2).numpy(), rtol=1e-6)


def test_python_scalar_inputs_and_dtype_promotion():
    rng = np.random.default_rng(4)
    ints = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    floats = rng.standard_normal((3, 4)).astype(np.float32)
    compare(lambda lib, i, f, s: (i * 2.5 + f * s, i + 3, i > f, f / 2, i / 2), [ints, floats], grad=False,
            scalars=(1.5,))
    compare(lambda lib, i, j: (i * j - 7, lib.where(i > j, i, j)), [ints, ints.astype(np.int64)], grad=False)
    # a 0-dim float64 tensor does not promote a float32 tensor (PyTorch's dimension-aware promotion)
    compare(lambda lib, f, d: f * d + 1, [floats, np.array(0.25)])


def test_float64_gradcheck_and_double_backward_fall_back_op_by_op():
    rng = np.random.default_rng(5)
    x = lantern.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    y = lantern.tensor(rng.standard_normal(2), requires_grad=True)
    node = fusion_node(lambda lib, a, b: ((a * b).tanh() + b.exp() * a ** 3, a.sigmoid()), 2)
    assert lantern.autograd.gradcheck(lambda a, b: tuple(run_fusion_group(node, [a, b])), (x, y))
    assert lantern.autograd.gradgradcheck(lambda a, b: tuple(run_fusion_group(node, [a, b])), (x, y))
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    (gx,) = torch.autograd.grad(gelu_chain(torch, tx).sum(), tx, create_graph=True)
    gelu = fusion_node(gelu_chain, 1)
    (lx,) = lantern.autograd.grad(run_fusion_group(gelu, [x])[0].sum(), x, create_graph=True)
    assert_same(lx, gx, strides=False)
    assert_same(lantern.autograd.grad(lx.sum(), x)[0], torch.autograd.grad(gx.sum(), tx)[0], strides=False)


def test_torch_style_traced_subgraph():
    sub = parse_ir("""graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %half : float = prim::Constant[value=0.5]()
  %none : NoneType = prim::Constant()
  %1 : Tensor = aten::rsub(%x, %half, %one)
  %2 : Tensor = aten::div(%1, %y, %none)
  %3 : Tensor = aten::sub(%2, %x, %two)
  %4 : Tensor = aten::pow(%3, %two)
  return (%4, %2)
""")
    rng = np.random.default_rng(6)
    x, y = (lantern.tensor(rng.uniform(1, 2, (4,)).astype(np.float32), requires_grad=True) for _ in range(2))
    out, mid = run_fusion_group(sub, [x, y])
    out.sum().backward()
    tx, ty = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, y))
    t_mid = (0.5 - tx) / ty
    (t_mid - 2 * tx).pow(2).sum().backward()
    assert_same([out, mid, x.grad, y.grad], [(t_mid - 2 * tx) ** 2, t_mid, tx.grad, ty.grad], strides=False)


def test_kernels_are_cached_per_structure_and_dtype():
    node = fusion_node(lambda lib, a: (a * 3).exp(), 1)
    x = lantern.ones(4)
    run_fusion_group(node, [x])
    count = len(fusion._KERNELS)
    run_fusion_group(node, [lantern.ones(7)])
    run_fusion_group(fusion_node(lambda lib, a: (a * 3).exp(), 1), [x])
    assert len(fusion._KERNELS) == count
    run_fusion_group(node, [lantern.ones(4, dtype=lantern.float64)])
    assert len(fusion._KERNELS) == count + 1


def test_without_the_compiler_groups_run_op_by_op(monkeypatch):
    import sys
    import lantern.jit.fusion_numba  # noqa: F401  (so that the package attribute exists to take away)
    monkeypatch.setitem(sys.modules, "numba", None)       # `import numba` now raises ImportError
    monkeypatch.delitem(sys.modules, "lantern.jit.fusion_numba")
    monkeypatch.delattr(lantern.jit, "fusion_numba")
    monkeypatch.setattr(fusion, "_COMPILER", [])
    assert not fusion.compiler_available()
    count = len(fusion._KERNELS)
    rng = np.random.default_rng(7)
    compare_out = fusion_node(arith_mix, 2)
    x, y = (lantern.tensor(rng.standard_normal(5).astype(np.float32), requires_grad=True) for _ in range(2))
    out = run_fusion_group(compare_out, [x, y])
    assert type(out[0].grad_fn).__name__ != "FusedGroupBackward" and len(fusion._KERNELS) == count
    expected = arith_mix(lantern, x, y)
    assert_same(out, [torch.tensor(e.detach().numpy()).requires_grad_(e.requires_grad) for e in expected])


def test_unsupported_dtype_and_op_run_op_by_op():
    half = lantern.tensor([0.5, -1.0], dtype=lantern.float16)
    node = fusion_node(lambda lib, a: (a * 2).tanh(), 1)
    assert run_fusion_group(node, [half])[0].dtype == lantern.float16
    sub = parse_ir("""graph(%x : Tensor):
  %0 : int = prim::Constant[value=0]()
  %n : NoneType = prim::Constant()
  %1 : Tensor = aten::cumsum(%x, %0, %n)
  return (%1)
""")
    x = lantern.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = run_fusion_group(sub, [x])[0]
    out.sum().backward()
    assert out.tolist() == [1.0, 3.0, 6.0] and x.grad.tolist() == [3.0, 2.0, 1.0]


def test_errors_are_the_eager_ops_errors():
    node = fusion_node(lambda lib, a, b: a + b, 2)
    with pytest.raises(RuntimeError):
        run_fusion_group(node, [lantern.ones(3), lantern.ones(4)])


def test_fuse_helper_matches_eager_and_returns_tuples():
    f = fuse(lambda x, y: (x * y + 1, (x - y).relu()))
    x = lantern.tensor([1.0, -2.0, 3.0], requires_grad=True)
    a, b = f(x, 2.0)
    (a.sum() + b.sum()).backward()
    assert a.tolist() == [3.0, -3.0, 7.0] and b.tolist() == [0.0, 0.0, 1.0] and x.grad.tolist() == [2.0, 2.0, 3.0]
    with pytest.raises(AttributeError):
        fuse(lambda x: x.cumsum(0))(x)


def test_threaded_kernels_match_serial(monkeypatch):
    from lantern.jit import fusion_numba
    x = lantern.tensor(np.linspace(-2, 2, 40, dtype=np.float32), requires_grad=True)
    node = fusion_node(lambda lib, a: (a * 1.5 + 1) * a, 1)
    serial = run_fusion_group(node, [x])[0]
    (g_serial,) = lantern.autograd.grad(serial.sum(), x)
    monkeypatch.setattr(fusion_numba, "use_threads", lambda numel: True)
    threaded = run_fusion_group(node, [x])[0]
    (g_threaded,) = lantern.autograd.grad(threaded.sum(), x)
    assert threaded.tolist() == serial.tolist() and g_threaded.tolist() == g_serial.tolist()


def test_non_elementwise_subgraph_runs_through_the_interpreter():
    sub = parse_ir("""graph(%x : Tensor, %y : Tensor):
  %0 : int = prim::Constant[value=0]()
  %l : Tensor[] = prim::ListConstruct(%x, %y)
  %s : Tensor = aten::stack(%l, %0)
  return (%s)
""")
    x, y = lantern.tensor([1.0, 2.0]), lantern.tensor([3.0, 4.0])
    assert run_fusion_group(sub, [x, y])[0].tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_maximum_minimum_propagate_nan_and_split_ties():
    a = np.array([1.0, 2.0, np.nan, 3.0, -1.0], dtype=np.float32)
    b = np.array([1.0, 3.0, 1.0, np.nan, -2.0], dtype=np.float32)
    compare(lambda lib, x, y: (lib.maximum(x, y), lib.minimum(x, y)), [a, b])


def test_a_repeated_call_gives_the_general_calls_results():
    """run_like_last_call (the repeat of a laid-out call) against the general layout in reference mode: the same
    bits when it fires, and a general call whenever the inputs differ from the last call's (shape, dtype, strides,
    scalar type, a gradient wanted, a broadcast)."""
    node = fusion_node(lambda lib, a, b, s: lib.where(a > 0, b * s, a - b), 3)
    program = fusion._program_for(node.g("Subgraph"))
    rng = np.random.default_rng(3)

    def run(*args):
        """Whether the last call repeats for `args` (then with the general call's bits); `args` are laid out as
        the next call to repeat."""
        repeated = fusion.run_like_last_call(fusion._REPEATS[program], list(args))
        with lantern.reference_mode():
            general = run_fusion_group(node, list(args))
        if repeated is not None:
            assert_same(repeated, [torch.tensor(g.numpy()) for g in general], atol=0, rtol=0)
        return repeated is not None

    def floats(*shape, dtype=np.float32):
        return lantern.tensor(rng.standard_normal(shape).astype(dtype))

    a, b = floats(4, 6), floats(4, 6)
    run_fusion_group(node, [a, b, 2.0])                     # lays out the call to repeat
    assert run(floats(4, 6), floats(4, 6), 3.0)
    assert not run(floats(4, 6), floats(4, 6), 2)           # an int scale: a kernel of its own
    assert run(floats(4, 6), floats(4, 6), 3)
    assert not run(floats(4, 6), floats(4, 6), 2.0)
    assert run(floats(4, 6), floats(4, 6), 0.5)
    assert not run(floats(5, 6), floats(5, 6), 0.5)         # another shape
    assert not run(floats(5, 6, dtype=np.float64), floats(5, 6, dtype=np.float64), 0.5)
    assert not run(floats(5, 6), floats(5, 6), 0.5)
    assert not run(floats(6, 5).t(), floats(5, 6), 0.5)     # strided: laid out as a copy ...
    assert not run(floats(5, 6), floats(5, 6), 0.5)         # ... so not a call to repeat
    assert run(floats(5, 6), floats(5, 6), 0.5)
    assert not run(floats(1, 6), floats(5, 6), 0.5)         # broadcast
    assert not run(floats(5, 6), floats(5, 6), 0.5)
    needs_grad = floats(5, 6).requires_grad_()
    assert fusion.run_like_last_call(fusion._REPEATS[program], [needs_grad, floats(5, 6), 0.5]) is None
    assert type(run_fusion_group(node, [needs_grad, floats(5, 6), 0.5])[0].grad_fn).__name__ == "FusedGroupBackward"
    with lantern.no_grad():
        assert run(needs_grad, floats(5, 6), 0.5)
