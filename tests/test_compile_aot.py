"""torch.compile's training path (lantern/_functorch, lantern/_dynamo/aot_plan.py): the forward and backward captured
as one joint graph, partitioned, and run as one autograd node, with the losses and gradients of eager lantern and of
torch.compile (backend="aot_eager": AOTAutograd without inductor's C++ toolchain)."""
import numpy as np
import pytest
import torch

import lantern
from lantern._dynamo.aot_plan import AotPlan
from lantern._dynamo.eval_frame import _EAGER, _Plan
from lantern._functorch.compiled_function import DOUBLE_BACKWARD_ERROR

torch._dynamo.config.suppress_errors = False


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8), nn.GELU(), nn.Linear(8, 4))


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 4 * 4, 4))


def transformer(lib):
    return lib.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)


def lstm(lib):
    nn = lib.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.lstm, self.out = nn.Embedding(10, 6), nn.LSTM(6, 8), nn.Linear(8, 4)

        def forward(self, tokens):
            hidden, _ = self.lstm(self.embed(tokens))
            return self.out(hidden).flatten(0, 1)

    return Tagger()


def _inputs(name, rng):
    if name == "lstm":
        return rng.integers(0, 10, (5, 3)), 15
    shape = {"mlp": (6, 12), "cnn": (3, 1, 8, 8), "transformer": (2, 5, 16)}[name]
    return rng.standard_normal(shape).astype(np.float32), shape[0] * (5 if name == "transformer" else 1)


@pytest.fixture
def fast_paths():
    """Fast paths on (also in the reference tier): the test checks the compiled mechanism itself."""
    with lantern.core.reference.reference_mode(False):
        yield


# what each model's compiled training call becomes: one node (AotPlan), the ordinary capture with eager autograd
# (_Plan: the convolutions' fused backward kernels), or eager (the LSTM's fused recurrence)
MODELS = {"mlp": (mlp, AotPlan), "cnn": (cnn, _Plan), "transformer": (transformer, AotPlan), "lstm": (lstm, str)}


def _train(lib, name, compiled, steps=3, compile_kwargs=None):
    """Losses and final gradients of `steps` SGD steps (cross-entropy on a fixed batch)."""
    build, _ = MODELS[name]
    rng = np.random.default_rng(0)
    x, rows = _inputs(name, rng)
    target = lib.tensor(rng.integers(0, 4, rows))
    lib.manual_seed(0)
    model = build(lib)
    if lib is lantern:
        model.load_state_dict({k: lantern.tensor(v.numpy()) for k, v in _torch_state(name).items()})
    run = lib.compile(model, **(compile_kwargs or {})) if compiled else model
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    xt = lib.tensor(x)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        out = run(xt)
        loss = lib.nn.functional.cross_entropy(out.reshape(rows, -1), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.grad.numpy().copy() for p in model.parameters()], run


def _torch_state(name):
    torch.manual_seed(0)
    return MODELS[name][0](torch).state_dict()


@pytest.mark.parametrize("name", MODELS)
def test_compiled_training_matches_eager_and_torch_compile(name):
    eager_losses, eager_grads, _ = _train(lantern, name, compiled=False)
    losses, grads, run = _train(lantern, name, compiled=True)
    torch._dynamo.reset()
    t_losses, t_grads, _ = _train(torch, name, compiled=True, compile_kwargs={"backend": "aot_eager"})
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-4)
    for g, e, t in zip(grads, eager_grads, t_grads):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(g, t, rtol=1e-3, atol=1e-5)
    (plan,) = run._compiled_call.plans.values()
    expected = MODELS[name][1]
    if expected is AotPlan and not lantern.core.reference.fast_paths_on():
        expected = _Plan  # reference mode: the ordinary capture, autograd recording each op
    assert plan is _EAGER if expected is str else type(plan) is expected


@pytest.mark.usefixtures("fast_paths")
def test_one_autograd_node_per_call():
    model = lantern.compile(mlp(lantern))
    x = lantern.randn(2, 12)
    model(x)
    out = model(x)
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    assert all(type(f).__name__ == "AccumulateGrad" for f, _ in out.grad_fn.next_functions if f is not None)


@pytest.mark.usefixtures("fast_paths")
def test_batch_norm_statistics_follow_eager():
    """The forward graph updates the running statistics in place, as eager does."""
    nn = lantern.nn

    def train(compiled):
        lantern.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.GELU(), nn.Linear(8, 2))
        run = lantern.compile(model) if compiled else model
        opt = lantern.optim.SGD(model.parameters(), lr=0.1)
        x = lantern.randn(5, 6)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            loss = run(x).square().mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, model[1].running_mean.numpy().copy(), run

    losses, mean, run = train(True)
    eager_losses, eager_mean, _ = train(False)
    assert isinstance(next(iter(run._compiled_call.plans.values())), AotPlan)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
    np.testing.assert_allclose(mean, eager_mean, rtol=1e-6)


@pytest.mark.usefixtures("fast_paths")
def test_a_call_the_joint_trace_gives_up_updates_state_once():
    """A convolution model keeps the ordinary capture, which runs the first call again after the joint trace ran
    it: BatchNorm's running statistics, its batch count and the dropout mask drawn are those of one eager call."""
    nn = lantern.nn

    def first_call(compiled):
        lantern.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Dropout(0.5), nn.Flatten())
        run = lantern.compile(model) if compiled else model
        out = run(lantern.randn(2, 1, 5, 5))
        return out.detach().numpy(), model[1].running_mean.numpy().copy(), int(model[1].num_batches_tracked), run

    out, mean, batches, run = first_call(True)
    eager_out, eager_mean, eager_batches, _ = first_call(False)
    assert isinstance(next(iter(run._compiled_call.plans.values())), _Plan)
    assert batches == eager_batches == 1
    np.testing.assert_array_equal(mean, eager_mean)
    np.testing.assert_array_equal(out, eager_out)


@pytest.mark.usefixtures("fast_paths")
def test_compiled_dropout_masks_have_eagers_distribution():
    """The parity test of compiled_random.fast_bernoulli: compiled dropout draws its own masks (as torch.compile's
    do), with eager's keep rate, scaling and gradient, repeatable under manual_seed."""
    p, n = 0.3, 200_000
    model = lantern.nn.Dropout(p)
    compiled = lantern.compile(model)
    x = lantern.ones(n, requires_grad=True)

    def run(fn, seed):
        lantern.manual_seed(seed)
        x.grad = None
        out = fn(x)
        out.sum().backward()
        return out.detach().numpy(), x.grad.numpy()

    run(compiled, 0)
    out, grad = run(compiled, 1)
    eager_out, eager_grad = run(model, 1)
    assert type(compiled(x).grad_fn).__name__ == "CompiledFunctionBackward"
    assert set(np.unique(out).tolist()) == {0.0, np.float32(1 / (1 - p))}
    np.testing.assert_array_equal(grad, out)          # d(x * mask / (1 - p)) / dx, with x = 1
    assert abs((out > 0).mean() - (1 - p)) < 0.005 and abs((eager_out > 0).mean() - (1 - p)) < 0.005
    assert not np.array_equal(out, eager_out)         # the compiled masks are not eager's bits (nor torch.compile's)
    np.testing.assert_array_equal(run(compiled, 1)[0], out)


@pytest.mark.usefixtures("fast_paths")
@pytest.mark.parametrize("x_grad", [True, False])
def test_specialised_backward_calls_give_eagers_gradients(x_grad):
    """The parity test of backward_calls.record_backward_call: layer norm's backward, recorded as one call of its
    specialised formulas, gives eager's (and torch's) gradients, where the input needs a gradient (the fast
    kernels on the saved statistics) and where it does not (the weight's formula then recomputes them); reference
    mode traces the readable formulas."""
    from lantern._functorch.backward_calls import BackwardCall
    from lantern._functorch.joint_graph import trace_joint
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    results = []
    for lib, compiled in ((torch, False), (lantern, False), (lantern, True)):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.LayerNorm(16), lib.nn.GELU(), lib.nn.Linear(16, 3))
        if lib is lantern:
            model.load_state_dict({k: lantern.tensor(v.numpy()) for k, v in results[0][-1].items()})
        run = lib.compile(model) if compiled else model
        xt = lib.tensor(x).transpose(1, 2).requires_grad_(x_grad)
        for _ in range(2):
            model.zero_grad()
            run(xt).square().sum().backward()
        results.append([p.grad.numpy() for p in model.parameters()] + ([xt.grad.numpy()] if x_grad else [])
                       + [model.state_dict()])
        captured = run if compiled else None
    for expected, eager, got in list(zip(*results))[:-1]:
        np.testing.assert_allclose(got, eager, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    (plan,) = captured._compiled_call.plans.values()
    calls = [n.attrs["fn"] for n in plan.function.backward_graph.nodes() if n.kind() == "prim::CallFunction"]
    assert [type(c) for c in calls] == [BackwardCall]
    ln = lantern.nn.LayerNorm(4)
    with lantern.reference_mode():
        joint = trace_joint(lambda x, w, b: ln(x), [lantern.randn(2, 4, requires_grad=True), ln.weight, ln.bias])
    assert joint.graph.findNode("prim::CallFunction") is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_dropout_kernel_gives_the_numpy_philox_masks(dtype):
    """compiled_random_numba.philox_mask writes the mask of compiled_random.philox_words (Random123's Philox4x32-10,
    checked on its known answer in the doctest), for lengths that are not multiples of 4 and the edge
    probabilities."""
    from lantern._functorch.compiled_random import philox_words
    from lantern._functorch.compiled_random_numba import philox_mask
    for n in (1, 3, 6, 4097):
        for key in ((0, 0), (123456789, 4000000000)):
            words = philox_words(key, n)
            for threshold in (0, 2 ** 31, 3 * 2 ** 30 + 7, 2 ** 32):
                out = np.full(n, 5, dtype)
                philox_mask(np.uint64(key[0]), np.uint64(key[1]), np.uint64(threshold), out)
                np.testing.assert_array_equal(out, (words < threshold).astype(dtype))
    assert len(set(philox_words((5, 6), 4000).tolist())) == 4000   # no repeats: distinct counters


@pytest.mark.usefixtures("fast_paths")
def test_double_backward_raises_torchs_error():
    for lib in (torch, lantern):
        if lib is torch:
            torch._dynamo.reset()
        lib.manual_seed(0)
        compiled = lib.compile(lib.nn.Linear(3, 1), backend="aot_eager")
        x = lib.randn(2, 3, requires_grad=True)
        for _ in range(2):
            (g,) = lib.autograd.grad(compiled(x).tanh().sum(), x, create_graph=True)
        with pytest.raises(RuntimeError, match=DOUBLE_BACKWARD_ERROR):
            g.sum().backward()


def test_first_order_gradient_with_create_graph_is_right():
    lin = lantern.nn.Linear(3, 2)
    compiled = lantern.compile(lin)
    x = lantern.randn(4, 3, requires_grad=True)
    compiled(x)
    (g,) = lantern.autograd.grad(compiled(x).tanh().sum(), x, create_graph=True)
    (expected,) = lantern.autograd.grad(lin(x).tanh().sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), expected.numpy(), rtol=1e-6)


def test_reference_mode_runs_eagerly_with_equal_gradients():
    """The parity test of AotPlan.run: in reference mode the captured specialisation runs the module eagerly."""
    lantern.manual_seed(0)
    model = transformer(lantern)
    compiled = lantern.compile(model)
    x = lantern.randn(2, 5, 16, requires_grad=True)
    # not out.square().sum(): a layer norm's output has a fixed sum of squares per row, so every gradient below it
    # would be rounding noise (and differ with the order of any sum)
    weights = lantern.randn(2, 5, 16)

    def grads():
        model.zero_grad()
        x.grad = None
        out = compiled(x)
        (out * weights).sum().backward()
        return out, [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]

    with lantern.core.reference.reference_mode(False):
        grads()
        fast_out, fast = grads()
    with lantern.core.reference.reference_mode():
        plain_out, plain = grads()
    assert type(fast_out.grad_fn).__name__ == "CompiledFunctionBackward"
    assert type(plain_out.grad_fn).__name__ != "CompiledFunctionBackward"
    for f, p in zip(fast, plain):
        np.testing.assert_allclose(f, p, rtol=1e-4, atol=1e-6)


def test_closed_over_tensor_keeps_the_ordinary_capture():
    w = lantern.randn(3, requires_grad=True)
    f = lantern.compile(lambda x: (x * w).sin().sum())
    x = lantern.randn(3, requires_grad=True)
    for _ in range(2):
        f(x).backward()
    assert w.grad.allclose(2 * x * (x * w).cos()) and x.grad.allclose(2 * w * (x * w).cos())


def test_parameter_hooks_keep_the_ordinary_capture_and_fire_once_per_backward():
    model = lantern.nn.Linear(3, 1)
    seen = []
    model.weight.register_hook(lambda g: seen.append(g.clone()))
    compiled = lantern.compile(model)
    for _ in range(2):
        compiled(lantern.ones(1, 3)).sum().backward()
    assert len(seen) == 2 and isinstance(next(iter(compiled._compiled_call.plans.values())), _Plan)


def test_outputs_that_need_no_gradient_and_python_values():
    def fn(x, w):
        y = x @ w
        return y.relu(), y.argmax(-1), 3

    f = lantern.compile(fn)
    x, w = lantern.randn(4, 3), lantern.randn(3, 2, requires_grad=True)
    for _ in range(2):
        out, index, three = f(x, w)
        out.sum().backward()
    assert three == 3 and not index.requires_grad and index.equal((x @ w).argmax(-1))
    expected = x.t() @ ((x @ w) > 0).float()
    assert w.grad.allclose(2 * expected)


def test_inference_keeps_the_ordinary_capture():
    model = lantern.compile(mlp(lantern))
    with lantern.no_grad():
        model(lantern.randn(2, 12))
    assert isinstance(next(iter(model._compiled_call.plans.values())), _Plan)


@pytest.mark.usefixtures("fast_paths")
def test_buffer_reuse_keeps_values_and_skips_shared_inputs():
    """The parity test of reuse_buffers: an op writes over its input only where nothing else can read it, with
    the values of the graph that allocates."""
    from lantern._functorch.compiled_function import compile_joint
    from lantern._functorch.joint_graph import trace_joint

    def fn(x, w):
        y = x @ w                    # fresh, used once: relu may write over it
        shared = x @ w.t()           # also an output: its relu keeps a buffer
        viewed = (x @ (w + 1)).view(-1)   # a view of a fresh result: its sigmoid keeps a buffer
        return y.relu(), shared.relu(), shared, viewed.sigmoid(), x.tanh()

    x, w = lantern.randn(4, 3), lantern.randn(3, 3, requires_grad=True)
    fast = compile_joint(trace_joint(fn, [x, w]))
    plain = compile_joint(trace_joint(fn, [x, w]), optimize=False)
    kinds = [n.kind() for n in fast.forward_graph.nodes()]
    assert kinds.count("aten::relu_") == 1 and "aten::sigmoid_" not in kinds and "aten::tanh_" not in kinds
    outputs = fast(x, w)
    for got, expected in zip(outputs, plain(x, w)):
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    sum(o.sum() for o in outputs).backward()
    (expected,) = lantern.autograd.grad(sum(o.sum() for o in fn(x, w)), w)
    np.testing.assert_allclose(w.grad.numpy(), expected.numpy(), rtol=1e-5)


def test_module_backward_hooks_run_eagerly_and_fire_every_call():
    model = lantern.nn.Sequential(lantern.nn.Linear(3, 2), lantern.nn.ReLU())
    seen = []
    model[0].register_full_backward_hook(lambda m, grad_in, grad_out: seen.append(grad_out[0].shape))
    compiled = lantern.compile(model)
    for _ in range(2):
        compiled(lantern.ones(4, 3)).sum().backward()
    assert len(seen) == 2 and next(iter(compiled._compiled_call.plans.values())) is _EAGER


def test_reference_mode_runs_captured_graphs_unfused():
    """In reference mode a captured graph runs without the passes (no fused kernels), with the fused run's values."""
    class GeluChain(lantern.nn.Module):
        def forward(self, x):
            return x * 0.5 * (1 + (0.79788456 * (x + 0.044715 * x ** 3)).tanh())

    f = lantern.compile(GeluChain())
    x = lantern.linspace(-3, 3, 50)
    with lantern.no_grad(), lantern.core.reference.reference_mode(False):
        f(x)
        fused = f(x)
    with lantern.no_grad(), lantern.core.reference.reference_mode():
        plain = f(x)
    (plan,) = f._compiled_call.plans.values()
    ran = {n.kind() for p in plan.executor.plans.values() for n in p.graph.nodes()}
    ran_plain = {n.kind() for p in plan.plain_executor.plans.values() for n in p.graph.nodes()}
    assert "prim::FusionGroup" in ran and "prim::FusionGroup" not in ran_plain
    np.testing.assert_allclose(plain.numpy(), fused.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["view of a parameter", "result of the module"])
def test_inputs_sharing_autograd_history_get_eagers_gradients(case):
    lin = lantern.nn.Linear(3, 3)
    compiled = lantern.compile(lin)
    x = lantern.randn(2, 3, requires_grad=True)

    def grads(model):
        lin.zero_grad()
        x.grad = None
        out = model(lin.weight[:2]) if case == "view of a parameter" else model(model(x).tanh())
        out.sum().backward()
        return [lin.weight.grad.clone(), lin.bias.grad.clone()] + ([x.grad] if x.grad is not None else [])

    for _ in range(2):
        got = grads(compiled)
    for g, e in zip(got, grads(lin)):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def test_the_same_tensor_passed_twice_gets_eagers_gradient():
    def fn(a, b):
        return (a * b.sin()).sum()

    f = lantern.compile(fn)
    x = lantern.randn(4, requires_grad=True)
    for _ in range(2):
        x.grad = None
        f(x, x).backward()
    np.testing.assert_allclose(x.grad.numpy(), (x.sin() + x * x.cos()).detach().numpy(), rtol=1e-5)
