"""lantern.func against torch.func on the same functions: vmap (in_dims/out_dims/chunk_size/randomness, nesting,
the batching layer in the dispatch trace, the fallback's warning), grad/grad_and_value/vjp/jacrev and their
nesting, per-sample gradients of a small MLP and CNN, ensembles with stack_module_state, and the errors."""
import io
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, check, raises_like

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_every_torch_func_name_exists_in_lantern_func():
    missing = [name for name in torch.func.__all__ if not hasattr(lantern.func, name)]
    assert missing == []
    assert sorted(lantern.func.__all__) == sorted(torch.func.__all__)
    assert lantern.vmap is lantern.func.vmap  # torch.vmap is torch.func.vmap


# ---- vmap -----------------------------------------------------------------------------------------------------------
VMAP_CASES = {
    "pointwise": (lambda m, x: m.func.vmap(lambda r: r.sin() * 2 + 1)(x), [(3, 4)]),
    "broadcast with unbatched": (lambda m, x, y: m.func.vmap(lambda r: r + y)(x), [(3, 1, 4), (2, 4)]),
    "two batched of different rank": (lambda m, x, y: m.func.vmap(m.mul)(x, y), [(3, 2, 4), (3, 4)]),
    "reduction": (lambda m, x: m.func.vmap(lambda r: r.sum(0))(x), [(3, 4, 5)]),
    "reduction all dims": (lambda m, x: m.func.vmap(lambda r: r.mean())(x), [(3, 4, 5)]),
    "reduction keepdim": (lambda m, x: m.func.vmap(lambda r: r.amax(-1, keepdim=True))(x), [(3, 4, 5)]),
    "max with indices": (lambda m, x: m.func.vmap(lambda r: r.max(1))(x), [(3, 4, 5)]),
    "softmax": (lambda m, x: m.func.vmap(lambda r: r.softmax(-1))(x), [(3, 4, 5)]),
    "in_dims 1": (lambda m, x: m.func.vmap(lambda r: r.cumsum(0), in_dims=1)(x), [(4, 3)]),
    "out_dims 1": (lambda m, x: m.func.vmap(lambda r: r * 3, out_dims=1)(x), [(3, 4)]),
    "view and permute": (lambda m, x: m.func.vmap(lambda r: r.view(2, 3).permute(1, 0))(x), [(4, 6)]),
    "expand and unsqueeze": (lambda m, x: m.func.vmap(lambda r: r.unsqueeze(0).expand(3, 4))(x), [(2, 4)]),
    "squeeze, t, select": (lambda m, x: m.func.vmap(lambda r: r.squeeze().t()[1])(x), [(2, 1, 3, 4)]),
    "slice and transpose": (lambda m, x: m.func.vmap(lambda r: r[:, 1:].transpose(0, 1))(x), [(2, 3, 4)]),
    "cat with unbatched": (lambda m, x, y: m.func.vmap(lambda r: m.cat([r, y], 0))(x), [(2, 3, 4), (1, 4)]),
    "stack": (lambda m, x: m.func.vmap(lambda r: m.stack([r, r * 2], 1))(x), [(2, 3, 4)]),
    "mm batched left": (lambda m, x, w: m.func.vmap(lambda r: r @ w)(x), [(3, 2, 4), (4, 5)]),
    "mm batched right": (lambda m, w, x: m.func.vmap(lambda r: w @ r)(x), [(2, 4), (3, 4, 5)]),
    "mv and dot": (lambda m, a, v: m.func.vmap(lambda r, s: m.dot(m.mv(r, s), s))(a, v), [(3, 4, 4), (3, 4)]),
    "bmm": (lambda m, a, b: m.func.vmap(m.bmm)(a, b), [(2, 3, 4, 5), (2, 3, 5, 2)]),
    "linear": (lambda m, x, w, b: m.func.vmap(lambda r: m.nn.functional.linear(r, w, b))(x), [(3, 4), (2, 4), (2,)]),
    "addmm": (lambda m, c, a, b: m.func.vmap(lambda r: m.addmm(c, r, b, beta=0.5, alpha=2))(a),
              [(2, 5), (3, 2, 4), (4, 5)]),
    "conv2d": (lambda m, x, w: m.func.vmap(lambda r: m.nn.functional.conv2d(r, w, padding=1))(x),
               [(2, 1, 3, 5, 5), (4, 3, 3, 3)]),
    "index_select": (lambda m, x: m.func.vmap(lambda r: r.index_select(1, m.tensor([2, 0])))(x), [(2, 3, 4)]),
    "nested vmap": (lambda m, x, y: m.func.vmap(m.func.vmap(lambda a, b: a * b + a.sum()))(x, y), [(2, 3, 4)] * 2),
    "nested vmap, inner in_dims None": (
        lambda m, x, y: m.func.vmap(lambda a: m.func.vmap(lambda b: a @ b, in_dims=1)(y))(x), [(2, 3, 4), (4, 5)]),
    "pytree in and out": (lambda m, x, y: m.func.vmap(lambda d: {"s": d["a"] + d["b"][0], "p": (d["a"] * 2,)})(
        {"a": x, "b": [y]}), [(3, 4), (3, 4)]),
    "in_dims tuple with None": (lambda m, x, y: m.func.vmap(m.sub, in_dims=(None, 0))(x, y), [(4,), (3, 4)]),
    "unbatched output is expanded": (lambda m, x: m.func.vmap(lambda r: m.ones(2))(x), [(3, 4)]),
    "chunk_size": (lambda m, x: m.func.vmap(lambda r: r.exp().sum(), chunk_size=2)(x), [(5, 3)]),
    "method calls and scalars": (lambda m, x: m.func.vmap(lambda r: (r.clamp(min=0) ** 2).norm())(x), [(3, 4)]),
    "in-place on a batched tensor": (lambda m, x: m.func.vmap(lambda r: r.clone().mul_(2).add_(1))(x), [(3, 4)]),
    "in-place with unbatched other": (lambda m, x, y: m.func.vmap(lambda r: r.clone().add_(y))(x), [(3, 4), (4,)]),
    "new_zeros is batched": (lambda m, x: m.func.vmap(lambda r: r.new_zeros(2, 4).add_(r))(x), [(3, 4)]),
    "conv2d with batched weight": (lambda m, x, w: m.func.vmap(lambda k: m.nn.functional.conv2d(x, k, padding=1))(w),
                                   [(2, 3, 5, 5), (3, 4, 3, 3, 3)]),
    "conv1d, all batched, groups": (lambda m, x, w, b: m.func.vmap(
        lambda a, k, c: m.nn.functional.conv1d(a, k, c, groups=2))(x, w, b), [(2, 1, 4, 6), (2, 6, 2, 3), (2, 6)]),
    "max_pool2d": (lambda m, x: m.func.vmap(lambda a: m.nn.functional.max_pool2d(a, 2, return_indices=True))(x),
                   [(3, 2, 2, 4, 4)]),
    "avg_pool2d of (C, H, W)": (lambda m, x: m.func.vmap(lambda a: m.nn.functional.avg_pool2d(a, 2))(x),
                                [(3, 2, 4, 4)]),
    "adaptive pools": (lambda m, x: m.func.vmap(lambda a: (m.nn.functional.adaptive_avg_pool2d(a, 3),
                                                           m.nn.functional.adaptive_max_pool2d(a, 2)))(x),
                       [(3, 2, 2, 5, 5)]),
    "interpolate": (lambda m, x: m.func.vmap(lambda a: m.nn.functional.interpolate(a, scale_factor=2,
                                                                                   mode="bilinear"))(x),
                    [(2, 1, 2, 3, 3)]),
    "pad": (lambda m, x: m.func.vmap(lambda a: m.nn.functional.pad(a, (1, 2, 0, 1), value=0.5))(x), [(3, 2, 4)]),
    "layer_norm": (lambda m, x, w, b: m.func.vmap(lambda a: m.nn.functional.layer_norm(a, (4,), w, b))(x),
                   [(3, 2, 4), (4,), (4,)]),
    "mse_loss": (lambda m, x, y: m.func.vmap(m.nn.functional.mse_loss)(x, y), [(3, 4, 2), (3, 4, 2)]),
    "huber_loss sum, target unbatched": (lambda m, x, y: m.func.vmap(
        lambda a: m.nn.functional.huber_loss(a, y, reduction="sum"))(x), [(3, 4), (4,)]),
    "bce with logits, pos_weight": (lambda m, x, y: m.func.vmap(lambda a, t: m.nn.functional.binary_cross_entropy_with_logits(
        a, t.sigmoid(), pos_weight=m.tensor([1., 2., 3.])))(x, y), [(2, 4, 3), (2, 4, 3)]),
}


@pytest.mark.parametrize("name", VMAP_CASES)
def test_vmap_matches_torch(name):
    fn, shapes = VMAP_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(fn, *[rand(*s) for s in shapes], strides=False, aliasing=False)


@pytest.mark.parametrize("self_batched", [True, False])
def test_as_strided_scatter_under_vmap_equals_torchs_loop_over_examples(self_batched):
    """torch.vmap refuses as_strided_scatter (no batching rule); lantern's rule (autograd's view nodes run it on
    batched gradients) must give what each example gives alone."""
    x, y = rand(3, 2, 3), rand(3, 2, 2)
    in_dims = (0 if self_batched else None, 0)
    got = lantern.func.vmap(lambda a, b: lantern.as_strided_scatter(a, b, (2, 2), (1, 3), 1), in_dims=in_dims)(
        lantern.tensor(x if self_batched else x[0]), lantern.tensor(y))
    expected = torch.stack([torch.as_strided_scatter(torch.tensor(x[i if self_batched else 0]), torch.tensor(y[i]),
                                                     (2, 2), (1, 3), 1) for i in range(3)])
    assert_same(got, expected, strides=False)


def test_vmap_class_index_losses_match_torch():
    targets = np.array([[0, 2, 1, 2], [1, -100, 0, 0], [2, 2, 2, 1]])
    weight = np.array([0.5, 2.0, 1.0], dtype=np.float32)
    check(lambda m, x, t: m.func.vmap(m.nn.functional.cross_entropy)(x, t), rand(3, 4, 3), targets)
    check(lambda m, x, t, w: m.func.vmap(lambda a, b: m.nn.functional.nll_loss(a.log_softmax(-1), b, weight=w))(x, t),
          rand(3, 4, 3), targets, weight)
    check(lambda m, x, t: m.func.vmap(lambda a, b: m.nn.functional.cross_entropy(a, b, reduction="sum"))(x, t),
          rand(3, 4, 3), targets)
    check(lambda m, x, t: m.func.vmap(lambda a, b: m.nn.functional.nll_loss(a, b, reduction="none"))(x, t),
          rand(3, 4, 3), targets)


def test_vmap_randomness_modes():
    x = lantern.ones(4, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        lantern.func.vmap(lambda r: r + lantern.rand(3))(x)
    same = lantern.func.vmap(lambda r: r * lantern.rand(3), randomness="same")(x)
    different = lantern.func.vmap(lambda r: r * lantern.rand(3), randomness="different")(x)
    assert same.shape == different.shape == (4, 3)
    assert bool((same == same[0]).all())
    assert not bool((different == different[0]).all())
    raises_like(lambda m, x: m.func.vmap(lambda r: r, randomness="bad")(x), rand(2, 3))
    raises_like(lambda m, x: m.func.vmap(lambda r: m.ones(3).normal_(), randomness="different")(x), rand(2, 3))


def test_randomness_different_draws_per_example_through_the_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = lantern.func.vmap(lambda r: lantern.bernoulli(r), randomness="different")(lantern.full((64, 8), 0.5))
    assert out.shape == (64, 8) and not bool((out == out[0]).all())


RANDOM_UNDER_VMAP = {
    "rand_like": lambda m, r: m.rand_like(r),
    "randn_like": lambda m, r: m.randn_like(r),
    "randint_like": lambda m, r: m.randint_like(r, 10),
    "dropout": lambda m, r: m.nn.functional.dropout(r, 0.5),
    "dropout eval": lambda m, r: m.nn.functional.dropout(r, 0.5, training=False),
    "bernoulli": lambda m, r: m.bernoulli(r.sigmoid()),
    "bernoulli_ float": lambda m, r: r.clone().bernoulli_(0.5),
    "normal_": lambda m, r: r.clone().normal_(),
    "uniform_": lambda m, r: r.clone().uniform_(),
    "normal with a tensor mean": lambda m, r: m.normal(r, 1.0),
    "multinomial": lambda m, r: m.multinomial(r.exp(), 2),
    "rand": lambda m, r: r + m.rand(6),
    "randperm": lambda m, r: r + m.randperm(6),
    "normal_ of an unbatched tensor": lambda m, r: r + m.ones(6).normal_(),
}


def _random_outcome(m, fn, randomness):
    """What a random op under vmap gives: the error's class and message, or the shape and whether every example
    drew the same values (the values themselves differ between libraries)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            out = m.func.vmap(lambda r: fn(m, r), randomness=randomness)(m.ones(5, 6))
    except Exception as e:
        return type(e).__name__, str(e)
    return tuple(out.shape), bool((out == out[0]).all())


@pytest.mark.parametrize("randomness", ["same", "different", "error"])
@pytest.mark.parametrize("name", sorted(RANDOM_UNDER_VMAP))
def test_random_ops_under_vmap_match_torch(name, randomness):
    """'same' shares one draw across the batch (and refuses a draw that depends on batched values), 'different'
    draws per example (and refuses an in-place draw into an unbatched tensor), 'error' refuses any draw."""
    fn = RANDOM_UNDER_VMAP[name]
    assert _random_outcome(lantern, fn, randomness) == _random_outcome(torch, fn, randomness)


@pytest.mark.parametrize("name", ["rand_like", "dropout", "bernoulli_ float", "normal with a tensor mean"])
def test_random_ops_under_vmap_take_no_fallback(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        for randomness in ("same", "different"):
            _random_outcome(lantern, RANDOM_UNDER_VMAP[name], randomness)


BATCH_NORMS = {
    "training, no running stats": (lambda m, x: m.func.vmap(
        lambda r: m.nn.functional.batch_norm(r, None, None, training=True))(x), [(3, 5, 4, 2)]),
    "training, batched running stats updated": (lambda m, x, mean, var: (m.func.vmap(
        lambda r, rm, rv: m.nn.functional.batch_norm(r, rm, rv, training=True, momentum=0.3))(x, mean, var), mean,
        var), [(3, 5, 4, 2), (3, 4), (3, 4)]),
    "eval, unbatched stats and affine": (lambda m, x, mean, var, w, b: m.func.vmap(
        lambda r: m.nn.functional.batch_norm(r, mean, var.exp(), w, b, training=False))(x),
        [(3, 5, 4, 2), (4,), (4,), (4,), (4,)]),
    "eval, batched stats, batched at dim 1": (lambda m, x, mean, var: m.func.vmap(
        lambda r, rm, rv: m.nn.functional.batch_norm(r, rm, rv.exp(), training=False), in_dims=(1, 0, 0))(
        x, mean, var), [(5, 3, 4), (3, 4), (3, 4)]),
    "training, per-example affine": (lambda m, x, w, b: m.func.vmap(
        lambda r, wi, bi: m.nn.functional.batch_norm(r, None, None, wi, bi, training=True))(x, w, b),
        [(2, 4, 3, 5), (2, 3), (2, 3)]),
}


@pytest.mark.parametrize("name", sorted(BATCH_NORMS))
def test_batch_norm_under_vmap_matches_torch(name):
    fn, shapes = BATCH_NORMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)   # the rule runs: no fallback
        check(fn, *(rand(*shape) for shape in shapes), atol=1e-5, rtol=1e-4)


def test_batch_norm_under_vmap_refuses_unbatched_running_stats_in_training():
    raises_like(lambda m, x, mean, var: m.func.vmap(
        lambda r: m.nn.functional.batch_norm(r, mean, var, training=True))(x), rand(3, 5, 4), rand(4), rand(4) ** 2,
        match="Batch norm got a batched tensor as input while the running_mean or running_var")


VMAP_ERRORS = {
    "in-place into an unbatched tensor": (lambda m, x: m.func.vmap(lambda r: m.ones(4).add_(r))(x), [(3, 4)]),
    "data-dependent control flow": (lambda m, x: m.func.vmap(lambda r: r if r.sum() > 0 else -r)(x), [(3, 4)]),
    ".item()": (lambda m, x: m.func.vmap(lambda r: r.sum().item())(x), [(3, 4)]),
    "mismatched batch sizes": (lambda m, x, y: m.func.vmap(m.add)(x, y), [(3, 4), (2, 4)]),
    "no batched input": (lambda m, x: m.func.vmap(m.sin, in_dims=(None,))(x), [(3, 4)]),
    "in_dim out of range": (lambda m, x: m.func.vmap(m.sin, in_dims=2)(x), [(3, 4)]),
    "in_dims a list": (lambda m, x: m.func.vmap(m.sin, in_dims=[0])(x), [(3, 4)]),
    "in_dims structure": (lambda m, x: m.func.vmap(m.sin, in_dims=(0, 0))(x), [(3, 4)]),
    "non-tensor output": (lambda m, x: m.func.vmap(lambda r: 3)(x), [(3, 4)]),
    "batched output with out_dims None": (lambda m, x: m.func.vmap(lambda r: r, out_dims=None)(x), [(3, 4)]),
    "chunk_size 0": (lambda m, x: m.func.vmap(m.sin, chunk_size=0)(x), [(3, 4)]),
    "no inputs": (lambda m, x: m.func.vmap(m.sin)(), [(3, 4)]),
}


@pytest.mark.parametrize("name", VMAP_ERRORS)
def test_vmap_errors_match_torch(name):
    fn, shapes = VMAP_ERRORS[name]
    raises_like(fn, *[rand(*s) for s in shapes])


def test_vmap_error_messages_carry_torch_gist():
    x = lantern.ones(3, 4)
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        lantern.func.vmap(lambda r: r if r.sum() > 0 else -r)(x)
    with pytest.raises(RuntimeError, match=r"output with shape \[4\] doesn't match the broadcast shape \[3, 4\]"):
        lantern.func.vmap(lambda r: lantern.ones(4).add_(r))(x)


def test_fallback_warns_with_torchs_wording_and_matches_a_loop():
    from lantern.ops.registry import REGISTRY
    assert REGISTRY["roll"].batch_rule is None
    x = rand(3, 4, 4)
    with pytest.warns(UserWarning, match="performance drop because we have not yet implemented the batching rule "
                                         "for aten::roll"):
        got = lantern.func.vmap(lambda m: lantern.roll(m, 1))(lantern.tensor(x))
    assert_same(got, torch.stack([torch.roll(torch.tensor(m), 1) for m in x]))


def test_dispatch_trace_shows_the_batching_layer_and_its_rule():
    stream = io.StringIO()
    with lantern.debug.trace_dispatch(stream=stream):
        lantern.func.vmap(lambda r: r * 2)(lantern.ones(3, 2))
    text = stream.getvalue()
    assert "mul  keys=[FuncTorchBatched: input 0 is batched (vmap level" in text
    assert "kernel=FuncTorchBatched:batching_rules.pointwise_rule" in text
    assert "  mul  keys=[CPU: inputs are on cpu]" in text  # the rule's call on the physical tensor, beneath


def test_every_op_record_has_a_rule_or_takes_the_fallback():
    from lantern.ops.registry import REGISTRY
    from lantern._functorch.batching_rules import rule_for
    # custom ops (namespace::name) are left out: a register_vmap anywhere earlier in the run (a doctest) gives one
    # its own rule
    built_in = [op for name, op in REGISTRY.items() if "::" not in name]
    assert [op.name for op in built_in if op.batch_rule is not rule_for(op)] == []
    assert sum(op.batch_rule is not None for op in REGISTRY.values()) > 300


def test_register_vmap_matches_torch():
    def run(m, x):
        @m.library.custom_op(f"func_vmap_test_{m.__name__}::cube", mutates_args=())
        def cube(t: m.Tensor) -> tuple[m.Tensor, m.Tensor]:
            return t ** 3, 3 * t ** 2

        calls = []

        def cube_vmap(info, in_dims, t):
            calls.append((info.batch_size, info.randomness, in_dims))
            return cube(t), (in_dims[0], in_dims[0])

        m.library.register_vmap(cube, cube_vmap)
        return m.func.vmap(cube, in_dims=1, randomness="same")(x), calls

    check(run, rand(2, 3), strides=False, aliasing=False)


def test_a_custom_op_without_a_vmap_rule_takes_the_fallback():
    @lantern.library.custom_op("func_vmap_test::twice", mutates_args=())
    def twice(t: lantern.Tensor) -> lantern.Tensor:
        return t * 2

    with pytest.warns(UserWarning, match="batching rule for func_vmap_test::twice"):
        got = lantern.func.vmap(twice)(lantern.tensor(rand(3, 2)))
    assert got.shape == (3, 2)


# ---- grad, vjp, jacrev ----------------------------------------------------------------------------------------------
def f_scalar(m, x):
    return (x.sin() * x.cos().exp()).sum()


def rosenbrock(m, x):
    return ((1 - x[:-1]) ** 2 + 100 * (x[1:] - x[:-1] ** 2) ** 2).sum()


GRAD_CASES = {
    "grad": lambda m, x: m.func.grad(lambda t: f_scalar(m, t))(x),
    "grad rosenbrock": lambda m, x: m.func.grad(lambda t: rosenbrock(m, t))(x),
    "grad argnums tuple": lambda m, x: m.func.grad(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1))(x, x * 2),
    "grad has_aux": lambda m, x: m.func.grad(lambda t: ((t ** 2).sum(), t.mean()), has_aux=True)(x),
    "grad_and_value": lambda m, x: m.func.grad_and_value(lambda t: f_scalar(m, t))(x),
    "grad of grad": lambda m, x: m.func.grad(lambda t: m.func.grad(lambda u: (u ** 3).sum())(t).sum())(x),
    "grad with a dict": lambda m, x: m.func.grad(lambda d: (d["a"] * d["b"]).sum())({"a": x, "b": x + 1}),
    "vjp": lambda m, x: m.func.vjp(lambda t: t.tanh() * 3, x)[1](m.ones_like(x)),
    "vjp has_aux": lambda m, x: m.func.vjp(lambda t: (t.exp(), t.sum()), x, has_aux=True)[1](x),
    "jacrev": lambda m, x: m.func.jacrev(lambda t: t.sin() * t.sum())(x),
    "jacrev argnums": lambda m, x: m.func.jacrev(lambda a, b: a * b.sum(), argnums=(0, 1))(x, x * 2),
    "jacrev two outputs": lambda m, x: m.func.jacrev(lambda t: (t.exp(), t.sum()))(x),
    "jacrev chunk_size": lambda m, x: m.func.jacrev(lambda t: t.cumsum(0) * t, chunk_size=2)(x),
    "jacrev of jacrev": lambda m, x: m.func.jacrev(m.func.jacrev(lambda t: rosenbrock(m, t)))(x),
    "jacrev of a matrix function": lambda m, x: m.func.jacrev(lambda t: t.reshape(2, 2) @ t.reshape(2, 2))(x),
    "vmap of grad": lambda m, x: m.func.vmap(m.func.grad(lambda t: (t.exp() * t).sum()))(x.reshape(2, 2)),
    "grad of vmap": lambda m, x: m.func.grad(lambda t: m.func.vmap(lambda r: (r * r).sum())(t.reshape(2, 2)).prod())(x),
    "jacrev of jacrev through an in-place op on a view": lambda m, x: m.func.jacrev(m.func.jacrev(
        lambda t: (t * 1).unsqueeze(0).squeeze(0).add_(t.flip(0)).tanh()))(x),
    "hessian of linear with bias": lambda m, x: m.func.hessian(
        lambda t: m.nn.functional.linear(t, m.ones(3, 4), m.ones(3)).tanh().sum())(x),
    "vmap of vjp_fn through an in-place op on a view": lambda m, x: m.func.vmap(m.func.vjp(
        lambda t: m.nn.functional.linear(t, x.reshape(2, 2).repeat(2, 2)[:3], m.ones(3)).tanh(), x)[1])(m.eye(3)),
    "vmap of jacrev": lambda m, x: m.func.vmap(m.func.jacrev(lambda t: t.sin() * t))(x.reshape(2, 2)),
    "vmap of vmap of grad": lambda m, x: m.func.vmap(m.func.vmap(m.func.grad(lambda t: t ** 3)))(x.reshape(2, 2)),
}


@pytest.mark.parametrize("name", GRAD_CASES)
def test_differentiation_transforms_match_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(GRAD_CASES[name], rand(4), strides=False, aliasing=False)


def test_grad_composes_with_autograd_outside():
    check(lambda m, x: m.func.grad(lambda t: (t ** 3).sum())(x.requires_grad_()), rand(3), strides=False,
          aliasing=False)


GRAD_ERRORS = {
    "non-scalar output": lambda m, x: m.func.grad(lambda t: t * 2)(x),
    "argnum out of range": lambda m, x: m.func.grad(lambda t: t.sum(), argnums=2)(x),
    "has_aux without a pair": lambda m, x: m.func.grad(lambda t: t.sum(), has_aux=True)(x),
    "tuple output": lambda m, x: m.func.grad(lambda t: (t.sum(),))(x),
    "vjp cotangent shape": lambda m, x: m.func.vjp(lambda t: t * 2, x)[1](m.ones(5)),
}


@pytest.mark.parametrize("name", GRAD_ERRORS)
def test_differentiation_errors_match_torch(name):
    raises_like(GRAD_ERRORS[name], rand(4))


# ---- forward mode: jvp, jacfwd, linearize, hessian ----------------------------------------------------------------
FORWARD_CASES = {
    "jvp": lambda m, x: m.func.jvp(lambda t: t.sin() * t.sum(), (x,), (m.ones_like(x),)),
    "jvp two primals": lambda m, x: m.func.jvp(lambda a, b: a * b.exp(), (x, x * 2), (x, m.ones_like(x))),
    "jvp has_aux": lambda m, x: m.func.jvp(lambda t: (t.exp(), t.sum()), (x,), (x,), has_aux=True),
    "jacfwd": lambda m, x: m.func.jacfwd(lambda t: t.sin() * t.sum())(x),
    "jacfwd argnums": lambda m, x: m.func.jacfwd(lambda a, b: a * b.sum(), argnums=(0, 1))(x, x * 2),
    "jacfwd has_aux": lambda m, x: m.func.jacfwd(lambda t: (t.tanh(), t.sum()), has_aux=True)(x),
    "linearize": lambda m, x: m.func.linearize(lambda t: t.sin() * t, x)[1](m.ones_like(x)),
    "hessian rosenbrock": lambda m, x: m.func.hessian(lambda t: rosenbrock(m, t))(x),
    "hessian": lambda m, x: m.func.hessian(lambda t: f_scalar(m, t))(x),
    "jvp of grad": lambda m, x: m.func.jvp(m.func.grad(lambda t: (t ** 3).sum()), (x,), (m.ones_like(x),)),
    "jvp of jacrev": lambda m, x: m.func.jvp(m.func.jacrev(lambda t: t ** 3), (x,), (m.ones_like(x),)),
    "jacrev of jacfwd": lambda m, x: m.func.jacrev(m.func.jacfwd(lambda t: t.sin() * t))(x),
    "vmap of jvp": lambda m, x: m.func.vmap(lambda a, t: m.func.jvp(lambda y: y.exp() * y.sum(), (a,), (t,)))(
        x.reshape(2, 2), m.ones(2, 2)),
    "jvp of vmap": lambda m, x: m.func.jvp(m.func.vmap(lambda y: y.exp() * y.sum()), (x.reshape(2, 2),),
                                           (m.ones(2, 2),)),
    "vmap of jacfwd": lambda m, x: m.func.vmap(m.func.jacfwd(lambda t: t.sin() * t))(x.reshape(2, 2)),
    "vmap of hessian": lambda m, x: m.func.vmap(m.func.hessian(lambda t: (t.sin() * t).sum()))(x.reshape(2, 2)),
}


@pytest.mark.parametrize("name", FORWARD_CASES)
def test_forward_mode_transforms_match_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(FORWARD_CASES[name], rand(4), strides=False, aliasing=False, atol=1e-4, rtol=1e-5)


FORWARD_ERRORS = {
    "primals not a tuple": lambda m, x: m.func.jvp(m.sin, x, (x,)),
    "tangents of another structure": lambda m, x: m.func.jvp(m.mul, (x, x), (x,)),
    "tangent of another shape": lambda m, x: m.func.jvp(m.sin, (x,), (m.ones(5),)),
    "strict with an independent output": lambda m, x: m.func.jvp(lambda t: m.ones(2), (x,), (x,), strict=True),
}


@pytest.mark.parametrize("name", FORWARD_ERRORS)
def test_forward_mode_errors_match_torch(name):
    raises_like(FORWARD_ERRORS[name], rand(4))


# ---- per-sample gradients and ensembles ---------------------------------------------------------------------------
def _mlp(m):
    m.manual_seed(0)
    return m.nn.Sequential(m.nn.Linear(5, 8), m.nn.Tanh(), m.nn.Linear(8, 3))


def _cnn(m):
    m.manual_seed(0)
    return m.nn.Sequential(m.nn.Conv2d(1, 2, 3), m.nn.ReLU(), m.nn.Flatten(), m.nn.Linear(2 * 4 * 4, 3))


def _cnn_with_batch_norm_and_dropout(m):
    """Batch norm without running stats (replace_all_batch_norm_modules_) normalises each example by its own
    statistics; eval mode turns dropout off."""
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Conv2d(1, 2, 3), m.nn.BatchNorm2d(2), m.nn.ReLU(), m.nn.Dropout(0.5),
                            m.nn.Flatten(), m.nn.Linear(2 * 4 * 4, 3))
    return m.func.replace_all_batch_norm_modules_(model).eval()


def _per_sample_grads(m, make_model, x, y):
    model = make_model(m)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        out = m.func.functional_call(model, p, (xi.unsqueeze(0),))
        return m.nn.functional.cross_entropy(out, yi.unsqueeze(0))

    return m.func.vmap(m.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)


def _with_torch_weights(make_model):
    """Build the model in both libraries with torch's initial weights copied into lantern's."""
    reference = make_model(torch)

    def make(m):
        model = make_model(m)
        if m is lantern:
            model.load_state_dict({k: lantern.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
        else:
            model.load_state_dict(reference.state_dict())
        return model
    return make


@pytest.mark.parametrize("make_model, shape", [(_mlp, (6, 5)), (_cnn, (4, 1, 6, 6)),
                                               (_cnn_with_batch_norm_and_dropout, (4, 1, 6, 6))],
                         ids=["mlp", "cnn", "cnn with batch norm and dropout"])
def test_per_sample_gradients_match_torch(make_model, shape):
    make = _with_torch_weights(make_model)
    labels = RNG.integers(0, 3, shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(lambda m, x, y: _per_sample_grads(m, make, x, y), rand(*shape), labels, strides=False, aliasing=False,
              atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("make_model, shape", [(_mlp, (6, 5)), (_cnn, (4, 1, 6, 6)),
                                               (_cnn_with_batch_norm_and_dropout, (4, 1, 6, 6))],
                         ids=["mlp", "cnn", "cnn with batch norm and dropout"])
def test_per_sample_gradients_take_no_fallback(make_model, shape):
    """Every op on the path (linear, conv2d with per-example weights, batch norm, relu, dropout in eval mode, cross
    entropy) has a batching rule."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _per_sample_grads(lantern, make_model, lantern.tensor(rand(*shape)),
                          lantern.tensor(RNG.integers(0, 3, shape[0])))


def test_per_sample_gradients_equal_one_backward_per_example():
    make = _with_torch_weights(_mlp)
    x, y = lantern.tensor(rand(4, 5)), lantern.tensor(RNG.integers(0, 3, 4))
    grads = _per_sample_grads(lantern, make, x, y)
    model = make(lantern)
    for i in range(4):
        model.zero_grad()
        lantern.nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for name, p in model.named_parameters():
            assert_same(grads[name][i], torch.tensor(p.grad.numpy()), atol=1e-6, rtol=1e-5, strides=False)


def _neural_tangent_kernels(m, x1, x2, w1, w2):
    """The empirical NTK of a small network both ways of torch's tutorial: Jacobians contracted, and
    vector-Jacobian products pushed forward (vmap of vmap of vjp, then vmap of jvp over the vjps)."""
    params = {"w1": w1, "w2": w2}

    def net(p, x):
        return (x @ p["w1"]).tanh() @ p["w2"]

    jac1 = m.func.vmap(m.func.jacrev(net), (None, 0))(params, x1)
    jac2 = m.func.vmap(m.func.jacrev(net), (None, 0))(params, x2)
    contraction = sum(m.einsum("Naf,Mbf->NMab", jac1[k].flatten(2), jac2[k].flatten(2)) for k in params)

    def ntk(a, b):
        output, vjp_fn = m.func.vjp(lambda p: net(p, a), params)

        def column(vec):
            return m.func.jvp(lambda p: net(p, b), (params,), vjp_fn(vec))[1]
        return m.func.vmap(column)(m.eye(output.numel()))

    products = m.func.vmap(m.func.vmap(ntk, (None, 0)), (0, None))(x1, x2)
    return contraction, products


def test_neural_tangent_kernels_match_torch():
    check(_neural_tangent_kernels, rand(3, 4), rand(2, 4), rand(4, 5), rand(5, 3), strides=False, aliasing=False,
          atol=1e-5, rtol=1e-5)


def _ensemble(m, make_model, x):
    models = [make_model(m) for _ in range(3)]
    params, buffers = m.func.stack_module_state(models)
    base = models[0]

    def run(p, b, xi):
        return m.func.functional_call(base, (p, b), (xi,))

    return m.func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)


def test_model_ensembling_with_stack_module_state_matches_torch():
    def make(m):
        return m.nn.Sequential(m.nn.Linear(5, 4), m.nn.ReLU(), m.nn.Linear(4, 2))

    reference = [make(torch) for _ in range(3)]

    def make_copy(m, count=iter(range(10**6))):
        model = make(m)
        source = reference[next(count) % 3].state_dict()
        model.load_state_dict(source if m is torch else {k: lantern.tensor(v.numpy()) for k, v in source.items()})
        return model

    check(lambda m, x: _ensemble(m, make_copy, x), rand(6, 5), strides=False, aliasing=False)


def test_stack_module_state_matches_torch():
    weights = [(rand(3, 2), rand(3)) for _ in range(2)]

    def stacked(m):
        models = []
        for w, b in weights:
            model = m.nn.Sequential(m.nn.Linear(2, 3), m.nn.BatchNorm1d(3))
            model[0].weight.data, model[0].bias.data = m.tensor(w), m.tensor(b)
            models.append(model)
        params, buffers = m.func.stack_module_state(models)
        return params, buffers, [(p.is_leaf, p.requires_grad) for p in params.values()]

    check(stacked, strides=False, aliasing=False)
    raises_like(lambda m: m.func.stack_module_state([]))
    raises_like(lambda m: m.func.stack_module_state([m.nn.Linear(2, 2), m.nn.Linear(2, 2).eval()]))
    raises_like(lambda m: m.func.stack_module_state([m.nn.Linear(2, 2), m.nn.Conv1d(1, 1, 1)]))


def test_replace_all_batch_norm_modules_matches_torch():
    def run(m):
        model = m.func.replace_all_batch_norm_modules_(m.nn.Sequential(m.nn.BatchNorm1d(3), m.nn.Linear(3, 3)))
        bn = model[0]
        return bn.running_mean, bn.running_var, bn.num_batches_tracked, bn.track_running_stats
    check(run)


def test_functionalize_keeps_values_and_input_mutations():
    def run(m, x):
        def f(t):
            t.add_(1)
            return t * 2
        out = m.func.functionalize(f)(x)
        return out, x
    check(run, rand(3), aliasing=False)


@pytest.mark.parametrize("pattern, lengths, shape", [
    ("a b -> b a", {}, (2, 3)), ("(a b) c -> a b c", {"b": 2}, (6, 3)), ("a b c -> a (c b)", {}, (2, 3, 4)),
    ("a ... -> ... a", {}, (2, 3, 4)), ("b (h w) -> b h w", {"h": 2}, (3, 4))])
def test_rearrange_matches_torch(pattern, lengths, shape):
    check(lambda m, x: m.func.rearrange(x, pattern, **lengths), rand(*shape), strides=False, aliasing=False)


def test_debug_unwrap_matches_torch():
    check(lambda m, x: m.func.vmap(lambda r: m.func.debug_unwrap(r) * 1)(x), rand(3, 2), strides=False,
          aliasing=False)


TRANSFORM_CALLS = {
    "vmap(grad)": lambda p, x, model: lantern.func.vmap(lantern.func.grad(
        lambda p, x: lantern.func.functional_call(model, p, (x,)).square().sum()), in_dims=(None, 0))(p, x),
    "jacrev": lambda p, x, model: lantern.func.jacrev(model)(x[0]),
    "jacfwd": lambda p, x, model: lantern.func.jacfwd(model)(x[0]),
    "hessian": lambda p, x, model: lantern.func.hessian(lambda v: model(v).sum())(x[0]),
    "jvp": lambda p, x, model: lantern.func.jvp(model, (x,), (x,)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORM_CALLS))
def test_a_transform_leaves_no_reference_cycle(name):
    """Everything a transform makes is freed when its last reference goes, as in torch: a reference cycle would keep
    whole tensors (vmap's per-example gradients) alive until the garbage collector runs, and timeit, which
    torch.utils.benchmark's Timer uses, turns the collector off (a per-sample-gradient Timer loop grew to 22 GB)."""
    import gc
    lantern.manual_seed(0)
    model = lantern.nn.Sequential(lantern.nn.Linear(8, 16), lantern.nn.Tanh(), lantern.nn.Linear(16, 4))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = lantern.randn(5, 8)
    TRANSFORM_CALLS[name](params, x, model)  # first call: caches and lazily made objects
    gc.collect()
    gc.disable()
    try:
        TRANSFORM_CALLS[name](params, x, model)
        assert gc.collect() == 0
    finally:
        gc.enable()
