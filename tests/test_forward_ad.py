"""lantern.autograd.forward_ad against torch.autograd.forward_ad: levels, make_dual/unpack_dual and their errors,
tangents through ops, views and in-place ops, forward-over-reverse, the functional API's forward-mode strategies,
and every op with a backward declaring its forward derivative."""
import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as torch_fwAD

import lantern
import lantern.autograd.forward_ad as fwAD
from lantern.ops.registry import REGISTRY
from oracle import assert_same

rng = np.random.default_rng(0)
X, T = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))


def _both(fn):
    """fn(lib, fwAD, x, t) run on torch and on lantern with the same primal and tangent; results compared."""
    with torch_fwAD.dual_level():
        expected = fn(torch, torch_fwAD, torch.tensor(X), torch.tensor(T))
    with fwAD.dual_level():
        got = fn(lantern, fwAD, lantern.tensor(X), lantern.tensor(T))
    assert_same(got, expected, strides=False)


def _errors(fn):
    """The exception fn(lib, fwAD) raises in torch and in lantern: the same class, the same message."""
    outcomes = []
    for lib, ad in ((torch, torch_fwAD), (lantern, fwAD)):
        with pytest.raises(Exception) as info:
            fn(lib, ad)
        outcomes.append((type(info.value).__name__, str(info.value).replace("lantern.", "torch.")))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("f", [
    lambda lib, x: (x * x).sin().sum(),
    lambda lib, x: lib.nn.functional.softmax(x, 1),
    lambda lib, x: lib.nn.functional.log_softmax(x, 0),
    lambda lib, x: x @ x.t(),
    lambda lib, x: lib.cat([x, x.exp()], 1),
    lambda lib, x: lib.stack([x, x]).mean(0),
    lambda lib, x: x.t()[1:].reshape(-1),
    lambda lib, x: lib.nn.functional.gelu(x) + lib.relu(x) + lib.tanh(x),
    lambda lib, x: x.prod(1),
    lambda lib, x: x.max(1).values,
    lambda lib, x: lib.nn.functional.linear(x, x[:2], x[0, :2]),
    lambda lib, x: x[lib.tensor([0, 2])].pow(3),
    lambda lib, x: lib.nn.functional.layer_norm(x, (4,)),
], ids=["sin", "softmax", "log_softmax", "matmul", "cat", "stack", "views", "activations", "prod (derived)",
        "max.dim (derived)", "linear", "indexing", "layer_norm (derived)"])
def test_tangents_match_torch(f):
    _both(lambda lib, ad, x, t: ad.unpack_dual(f(lib, ad.make_dual(x, t))).tangent)


@pytest.mark.parametrize("f", [
    lambda lib, d: lib.stack([d.argmax().to(d.dtype), d.sum()]),
    lambda lib, d: d.detach(),
    lambda lib, d: d.clone().to(lib.float32),
    lambda lib, d: lib.where(d > 0, d, lib.zeros_like(d)),
    lambda lib, d: d[0].unbind(0)[1],
    lambda lib, d: d.expand(2, 3, 4).sum(0),
    lambda lib, d: lib.nn.functional.conv1d(d.unsqueeze(0), lib.ones(2, 3, 2, dtype=d.dtype)),
    lambda lib, d: lib.nn.functional.cross_entropy(d, lib.tensor([1, 0, 3])),
], ids=["integer outputs", "detach", "clone/to", "where", "unbind", "expand", "conv1d", "cross_entropy"])
def test_edge_cases_match_torch(f):
    _both(lambda lib, ad, x, t: ad.unpack_dual(f(lib, ad.make_dual(x, t))))


def test_tangents_flow_under_no_grad_and_formulas_save_no_duals():
    def run(lib, ad, x, t):
        d = ad.make_dual(x, t.requires_grad_())
        with lib.no_grad():
            under_no_grad = ad.unpack_dual(d * 2).tangent
        tangent = ad.unpack_dual((d * d).sum()).tangent
        (g,) = lib.autograd.grad(tangent, t)  # the formula read d's primal: g carries no tangent, as torch's
        return under_no_grad, g, ad.unpack_dual(g).tangent
    _both(run)


def test_a_view_tangent_is_a_view_of_the_tangent():
    with fwAD.dual_level():
        t = lantern.tensor(T)
        d = fwAD.make_dual(lantern.tensor(X), t)
        assert fwAD.unpack_dual(d[1:]).tangent._base is t
        assert fwAD.unpack_dual(d).primal._base is not None


def test_in_place_ops_update_tangents():
    def run(lib, ad, x, t):
        d = ad.make_dual(x, t)
        d.mul_(3)
        plain = lib.zeros(3, 4, dtype=lib.float64)
        plain[0].copy_(d[1])  # a view of a tangent-less tensor: its base gets a tangent
        plain.add_(d)
        return ad.unpack_dual(d).tangent, ad.unpack_dual(plain).tangent
    _both(run)


def test_forward_over_reverse_gives_the_tangent_of_a_gradient():
    def run(lib, ad, x, t):
        x = x.requires_grad_()
        d = ad.make_dual(x, t)
        g, = lib.autograd.grad((d.exp() * d.sin()).sum(), x, create_graph=True)
        return ad.unpack_dual(g).tangent
    _both(run)


def test_levels_and_clearing():
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(lantern.ones(2), lantern.ones(2))
    assert fwAD.unpack_dual(d) == (d, None)
    assert d._fw_grad is None
    assert fwAD.enter_dual_level() == 0
    fwAD.exit_dual_level()


@pytest.mark.parametrize("fn", [
    lambda lib, ad: ad.make_dual(lib.ones(2), lib.ones(2)),
    lambda lib, ad: ad.exit_dual_level(),
    lambda lib, ad: ad.exit_dual_level(level=3),
], ids=["make_dual outside a level", "exit with none", "exit another level"])
def test_level_errors_match_torch(fn):
    _errors(fn)


@pytest.mark.parametrize("fn", [
    lambda lib, ad: ad.make_dual(lib.ones(3), lib.ones(2)),
    lambda lib, ad: ad.make_dual(lib.ones(3), lib.ones(3, dtype=lib.int32)),
    lambda lib, ad: ad.make_dual(lib.arange(3), lib.ones(3)),
    lambda lib, ad: ad.enter_dual_level(),
    lambda lib, ad: ad.make_dual(ad.make_dual(lib.ones(3), lib.ones(3)), lib.ones(3)),
], ids=["shape", "tangent dtype", "primal dtype", "nested", "dual of a dual"])
def test_dual_errors_match_torch(fn):
    def inside(lib, ad):
        with ad.dual_level():
            fn(lib, ad)
    _errors(inside)


def test_an_unsupported_op_raises_torchs_error():
    with fwAD.dual_level():
        d = fwAD.make_dual(lantern.ones(2, 2), lantern.ones(2, 2))
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with _to_sparse that does not "
                                                      "support it"):
            d.to_sparse()


def test_every_op_with_a_backward_declares_its_forward_derivative():
    undeclared = sorted(op.name for op in REGISTRY.values()
                        if op.derivative is not None and not op.derivative.nondifferentiable
                        and op.derivative.forward is None)
    assert undeclared == []


def test_outside_a_level_the_dispatcher_pays_nothing():
    from lantern.core.state import tls
    assert not tls.forward_ad and not tls.observed


@pytest.mark.parametrize("name", ["jacobian", "hessian"])
def test_functional_forward_mode_matches_torch(name):
    def run(lib):
        x, y = lib.tensor(X[0]), lib.tensor(X[1])
        if name == "jacobian":
            return lib.autograd.functional.jacobian(lambda a, b: (a.exp() * b, (a * b).sum()), (x, y),
                                                    strategy="forward-mode", vectorize=True)
        return lib.autograd.functional.hessian(lambda a: (a ** 3).sum() + a.prod(), x,
                                               outer_jacobian_strategy="forward-mode", vectorize=True).detach()
    assert_same(run(lantern), run(torch), strides=False)  # torch's columns come from vmap, in its own layout


@pytest.mark.parametrize("kw", [dict(), dict(vectorize=True, strict=True), dict(vectorize=True, create_graph=True),
                                dict(strategy="bad")])
def test_functional_forward_mode_errors_match_torch(kw):
    kw = {"strategy": "forward-mode", **kw}
    _errors(lambda lib, ad: lib.autograd.functional.jacobian(lambda a: a * 2, lib.ones(2), **kw))


def _custom_functions(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_forward(x)
            return x * k

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None

    class DoubleWithJvp(Double):
        @staticmethod
        def jvp(ctx, x_t, k_t):
            x, = ctx.saved_tensors
            return x_t * 3 + x

    return Double, DoubleWithJvp


def test_a_custom_function_uses_its_jvp():
    def run(lib, ad, x, t):
        _, with_jvp = _custom_functions(lib)
        return ad.unpack_dual(with_jvp.apply(ad.make_dual(x, t), 2.0)).tangent
    _both(run)


def test_a_custom_function_without_jvp_raises_torchs_error():
    def run(lib, ad):
        without_jvp, _ = _custom_functions(lib)
        with ad.dual_level():
            without_jvp.apply(ad.make_dual(lib.ones(2), lib.ones(2)), 2.0)
    _errors(run)


@pytest.mark.parametrize("f", [
    lambda lib, a: (a.exp() * a.sin()).sum(),
    lambda lib, a: lib.nn.functional.softmax(a, 0) * a,
    lambda lib, a: lib.nn.functional.gelu(a @ a.t()).sum(1),
    lambda lib, a: a.prod(0) / a.norm(),
], ids=["exp*sin", "softmax", "gelu(matmul)", "prod/norm"])
def test_gradgradcheck_forward_over_reverse_agrees_with_torch(f):
    def run(lib):
        x = lib.tensor(X, requires_grad=True)
        return lib.autograd.gradgradcheck(lambda a: f(lib, a), (x,), check_fwd_over_rev=True, raise_exception=False)
    assert run(lantern) is run(torch) is True


@pytest.mark.parametrize("f", [
    lambda lib, a: a.prod(),
    lambda lib, a: a.cumprod(1),
    lambda lib, a: lib.nn.functional.normalize(a).amax(1),
    lambda lib, a: a.var(1) * a.std(),
], ids=["prod (derived)", "cumprod (derived)", "amax over an int dim", "var/std"])
def test_reverse_over_forward_matches_torch(f):
    def run(lib, ad, x, t):
        x, t = x.requires_grad_(), t.requires_grad_()
        tangent = ad.unpack_dual(f(lib, ad.make_dual(x, t))).tangent.sum()
        return [ad.unpack_dual(g).primal for g in lib.autograd.grad(tangent, (x, t))]
    _both(run)
