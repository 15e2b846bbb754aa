"""Batched gradients against torch on the same functions: autograd.grad(is_grads_batched=True) (a vmap over the
backward pass), gradcheck's check_batched_grad / check_batched_forward_grad and gradgradcheck's check_batched_grad
(passing on ordinary ops, failing on a backward vmap cannot run and on a wrong batching rule), and
autograd.functional.jacobian / hessian with vectorize=True (one batched pass)."""
import warnings

import numpy as np
import pytest
import torch
from torch.autograd.gradcheck import GradcheckError as TorchGradcheckError

import lantern
from oracle import assert_same, noncontig, to_lib

rng = np.random.default_rng(0)
X = noncontig(rng.standard_normal((5, 4)))
Y = noncontig(rng.standard_normal((5, 1)))
W1, B1 = noncontig(rng.standard_normal((8, 4))), rng.standard_normal(8)
W2, B2 = noncontig(rng.standard_normal((1, 8))), rng.standard_normal(1)


def _both(fn):
    """fn(lib) on torch and on lantern, the results compared (values, shapes, dtypes, requires_grad)."""
    assert_same(fn(lantern), fn(torch), strides=False)


def _same_error(fn):
    """fn(lib) raises the same exception class in torch and in lantern."""
    classes = []
    for lib in (torch, lantern):
        with pytest.raises(Exception) as info:
            fn(lib)
        classes.append(type(info.value).__name__)
    assert classes[1] == classes[0]


def _mlp_params(lib):
    return [to_lib(lib, a).requires_grad_() for a in (W1, B1, W2, B2)]


def _per_example_losses(lib, params):
    w1, b1, w2, b2 = params
    hidden = lib.tanh(to_lib(lib, X) @ w1.t() + b1)
    return ((hidden @ w2.t() + b2 - to_lib(lib, Y)) ** 2).squeeze(1)


def test_per_sample_gradients_of_an_mlp():
    def run(lib):
        params = _mlp_params(lib)
        losses = _per_example_losses(lib, params)
        return lib.autograd.grad(losses, params, lib.eye(5, dtype=lib.float64), is_grads_batched=True)
    _both(run)


def test_per_sample_gradients_equal_one_backward_per_example():
    params = _mlp_params(lantern)
    losses = _per_example_losses(lantern, params)
    batched = lantern.autograd.grad(losses, params, lantern.eye(5, dtype=lantern.float64), is_grads_batched=True,
                                    retain_graph=True)
    for k in range(5):
        single = lantern.autograd.grad(losses[k], params, retain_graph=True)
        for b, s in zip(batched, single):
            np.testing.assert_allclose(b[k].numpy(), s.numpy(), rtol=1e-12)


def test_second_order_with_create_graph():
    def run(lib):
        x = to_lib(lib, X[0]).requires_grad_()
        (g,) = lib.autograd.grad(x ** 3, x, lib.eye(4, dtype=lib.float64), create_graph=True, is_grads_batched=True)
        seeds = lib.eye(4, dtype=lib.float64).expand(4, 4, 4) * to_lib(lib, X[1])
        (h,) = lib.autograd.grad(g, x, seeds, is_grads_batched=True)
        return g.requires_grad, g.detach(), h
    _both(run)


def test_allow_unused_and_materialize_grads():
    def run(lib, **kw):
        x, unused = to_lib(lib, X[0]).requires_grad_(), to_lib(lib, X[1]).requires_grad_()
        return lib.autograd.grad(x.exp() * 2, (x, unused), to_lib(lib, X[:3]), is_grads_batched=True, **kw)
    _both(lambda lib: run(lib, allow_unused=True))
    _both(lambda lib: run(lib, materialize_grads=True))
    _same_error(lambda lib: run(lib))


def test_an_output_without_grad_raises_as_torch():
    def run(lib):
        x = to_lib(lib, X[0]).requires_grad_()
        seeds = to_lib(lib, X[:3])
        return lib.autograd.grad((x.sin(), x.detach()), x, (seeds, seeds), is_grads_batched=True)
    _same_error(run)


@pytest.mark.parametrize("seeds", [
    lambda lib, x: (lib.ones(3, 4, dtype=lib.float64), lib.ones(2, 4, dtype=lib.float64)),  # batch sizes 3 and 2
    lambda lib, x: (lib.ones(3, 4, dtype=lib.float64), lib.ones(3, 5, dtype=lib.float64)),  # example shape wrong
    lambda lib, x: (lib.ones(3, dtype=lib.float64), lib.ones(3, 4, dtype=lib.float64)),     # no batch dim
], ids=["mismatched batch sizes", "mismatched shapes", "missing batch dim"])
def test_errors_match_torch(seeds):
    def run(lib):
        x = to_lib(lib, X[0]).requires_grad_()
        return lib.autograd.grad((x * 2, x * 3), x, seeds(lib, x), is_grads_batched=True)
    _same_error(run)


def test_implicit_seed_of_a_scalar_output_cannot_be_batched():
    _same_error(lambda lib: lib.autograd.grad((to_lib(lib, X[0]).requires_grad_() ** 2).sum(),
                                              to_lib(lib, X[0]).requires_grad_(), is_grads_batched=True))


# ---- gradcheck --------------------------------------------------------------------------------------------------
CHECKED = [
    lambda lib, a, b: (a @ b.t()).tanh().sum(1) * a[:, 0],
    lambda lib, a, b: lib.nn.functional.softmax(a * b, 1),
    lambda lib, a, b: (a.cumprod(0), b.exp()),
    lambda lib, a, b: lib.nn.functional.layer_norm(a + b, (4,)),
    lambda lib, a, b: a.max(1).values + b.prod(1),
]
CHECKED_IDS = ["matmul tanh", "softmax", "cumprod and exp (two outputs)", "layer_norm", "max and prod"]


def _check_inputs(lib):
    return to_lib(lib, X[:3]).requires_grad_(), to_lib(lib, X[2:]).requires_grad_()


@pytest.mark.parametrize("f", CHECKED, ids=CHECKED_IDS)
@pytest.mark.parametrize("check", ["gradcheck", "forward", "gradgradcheck"])
def test_batched_checks_pass_on_ordinary_ops(f, check):
    def run(lib):
        fn = lambda a, b: f(lib, a, b)  # noqa: E731
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # performance warnings of ops that take vmap's fallback
            if check == "gradcheck":
                return lib.autograd.gradcheck(fn, _check_inputs(lib), check_batched_grad=True)
            if check == "forward":
                return lib.autograd.gradcheck(fn, _check_inputs(lib), check_forward_ad=True,
                                              check_batched_forward_grad=True)
            return lib.autograd.gradgradcheck(fn, _check_inputs(lib), check_batched_grad=True)
    assert run(torch) is True
    assert run(lantern) is True


def _reads_its_gradient(lib):
    """A Function whose backward reads a value of its gradient: impossible under vmap (data-dependent)."""
    class ReadsGradient(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2 if float(grad.sum()) != 12345.0 else grad

    return ReadsGradient.apply


def test_batched_grad_fails_where_the_backward_cannot_be_vmapped():
    for lib in (torch, lantern):
        x = to_lib(lib, X[0]).requires_grad_()
        assert lib.autograd.gradcheck(_reads_its_gradient(lib), (x,))
        error = TorchGradcheckError if lib is torch else lantern.autograd.GradcheckError
        with pytest.raises(error, match="While computing batched gradients, got: "):
            lib.autograd.gradcheck(_reads_its_gradient(lib), (x,), check_batched_grad=True)
        assert lib.autograd.gradcheck(_reads_its_gradient(lib), (x,), check_batched_grad=True,
                                      raise_exception=False) is False


def _cube_with_a_wrongly_batched_backward():
    """cube(x) = x³, whose backward calls triple(grad); triple's vmap rule returns the examples in reverse order.
    One example at a time the rule never runs (gradcheck passes); batched, the gradients come back swapped."""
    @lantern.library.custom_op("batched_grad_test::triple", mutates_args=())
    def triple(g: lantern.Tensor) -> lantern.Tensor:
        return g * 3

    @lantern.library.register_vmap("batched_grad_test::triple")
    def triple_vmap(info, in_dims, g):
        return g.flip(in_dims[0]) * 3, in_dims[0]

    triple.register_autograd(lambda ctx, grad: triple(grad))  # linear: its own backward (double backward hits it)

    @lantern.library.custom_op("batched_grad_test::cube", mutates_args=())
    def cube(x: lantern.Tensor) -> lantern.Tensor:
        return x ** 3

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return triple(grad) * x * x

    cube.register_autograd(backward, setup_context=setup_context)
    return cube


def test_batched_grad_fails_on_a_wrong_batching_rule():
    # torch's gradcheck batches through its legacy vmap, which does not run custom ops' register_vmap rules, so
    # the same construction passes there; lantern's vmap runs the rule, and the check catches it
    cube = _cube_with_a_wrongly_batched_backward()
    x = to_lib(lantern, X[0]).requires_grad_()
    assert lantern.autograd.gradcheck(cube, (x,))
    with pytest.raises(lantern.autograd.GradcheckError, match="For output 0 and input 0"):
        lantern.autograd.gradcheck(cube, (x,), check_batched_grad=True)
    with pytest.raises(lantern.autograd.GradcheckError, match="For output 0 and input 0"):
        lantern.autograd.gradgradcheck(lambda t: cube(t) * t, (x,), check_batched_grad=True)


class _WrongJvp(lantern.autograd.Function):
    """sin with a jvp that reads its tangent's values: fine one tangent at a time, impossible under vmap."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_forward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        raise AssertionError("not reached: only forward mode is checked")

    @staticmethod
    def jvp(ctx, x_t):
        (x,) = ctx.saved_tensors
        return x_t * x.cos() if float(x_t.sum()) != 12345.0 else x_t


def test_batched_forward_grad_fails_where_the_jvp_cannot_be_vmapped():
    x = to_lib(lantern, X[0]).requires_grad_()
    assert lantern.autograd.gradcheck(_WrongJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    with pytest.raises(lantern.autograd.GradcheckError, match="While computing batched gradients, got: "):
        lantern.autograd.gradcheck(_WrongJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                                   check_batched_forward_grad=True)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.autograd.gradcheck(lib.sin, (x,), check_batched_grad=True, check_backward_ad=False,
                                          check_forward_ad=True),
    lambda lib, x: lib.autograd.gradcheck(lib.sin, (x,), check_batched_forward_grad=True),
    lambda lib, x: lib.autograd.gradgradcheck(lib.sin, (x,), check_batched_grad=True, check_rev_over_rev=False,
                                              check_fwd_over_rev=True, check_undefined_grad=False),
], ids=["batched grad without backward", "batched forward without forward", "gradgradcheck without rev-over-rev"])
def test_flag_errors_match_torch(call):
    _same_error(lambda lib: call(lib, to_lib(lib, X[0]).requires_grad_()))


# ---- autograd.functional with vectorize=True -----------------------------------------------------------------------
def _outputs(lib, a, b):
    return a.exp() * b, (a * b).sum(), a[:2].outer(b[1:])


@pytest.mark.parametrize("kw", [dict(vectorize=True), dict(vectorize=True, create_graph=True),
                                dict(vectorize=True, strategy="forward-mode"), dict(vectorize=False)],
                         ids=["reverse", "reverse create_graph", "forward", "loop"])
def test_jacobian_matches_torch(kw):
    def run(lib):
        jac = lib.autograd.functional.jacobian(lambda a, b: _outputs(lib, a, b),
                                               (to_lib(lib, X[0]), to_lib(lib, X[1])), **kw)
        return [[t.detach() for t in row] for row in jac]  # torch's forward-mode rows are lists
    _both(run)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_hessian_matches_torch(strategy):
    def run(lib):
        f = lambda a, b: (a ** 3 * b).sum() + a.prod() + a.sin().outer(b).sum()  # noqa: E731
        h = lib.autograd.functional.hessian(f, (to_lib(lib, X[0]), to_lib(lib, X[1])), vectorize=True,
                                            outer_jacobian_strategy=strategy)
        return [[t.detach() for t in row] for row in h]
    _both(run)


def test_vectorized_jacobian_runs_one_batched_pass(monkeypatch):
    """Forward mode: func called once (a batch of tangents); reverse mode: one backward pass (a batch of seeds),
    where vectorize=False runs one per output element."""
    calls, passes = [], []
    run_backward = lantern.autograd.engine.run_backward
    monkeypatch.setattr(lantern.autograd.engine, "run_backward", lambda *a, **k: passes.append(1) or run_backward(*a, **k))

    def f(a, b):
        calls.append(1)
        return _outputs(lantern, a, b)
    inputs = (to_lib(lantern, X[0]), to_lib(lantern, X[1]))
    lantern.autograd.functional.jacobian(f, inputs, vectorize=True, strategy="forward-mode")
    assert (len(calls), len(passes)) == (1, 0)
    lantern.autograd.functional.jacobian(f, inputs, vectorize=True)
    assert (len(calls), len(passes)) == (2, 1)
    lantern.autograd.functional.jacobian(f, inputs, vectorize=False)
    assert (len(calls), len(passes)) == (3, 1 + 4 + 1 + 6)  # one pass per element of the three outputs


def test_vectorize_with_strict_raises_as_torch():
    _same_error(lambda lib: lib.autograd.functional.jacobian(lambda a: a * 2, lib.ones(2), vectorize=True,
                                                             strict=True))
