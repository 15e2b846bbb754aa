"""torch.compile on lantern: captured into JIT graphs where it can be, eager where it cannot, with the same outputs,
gradients and training losses as eager lantern and as torch.compile on torch (backend="eager" there: the same
captured program without inductor's C++ toolchain)."""
import math
import warnings

import numpy as np
import pytest
import torch

import lantern
from lantern._dynamo.aot_plan import AotPlan
from lantern._dynamo.eval_frame import _EAGER, _Plan

torch._dynamo.config.suppress_errors = False


# ---- models, written once against either library -------------------------------------------------------------

def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 3 * 3, 5))


def gpt_block(lib):
    """nanoGPT's Block: pre-norm causal self-attention and an MLP, with the mask as a buffer."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, n_embd=16, n_head=2, block_size=8):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
            self.n_head, self.n_embd = n_head, n_embd
            self.register_buffer("bias", lib.tril(lib.ones(block_size, block_size)).view(1, 1, block_size,
                                                                                          block_size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
            return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(16), CausalSelfAttention(), nn.LayerNorm(16)
            self.mlp = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    return Block()


MODELS = {"mlp": (mlp, (4, 8)), "cnn": (cnn, (2, 3, 8, 8)), "gpt_block": (gpt_block, (2, 8, 16))}


def _pair(name):
    """(torch model, lantern model with the same weights, input as numpy)."""
    build, shape = MODELS[name]
    torch.manual_seed(0)
    t_model = build(torch)
    l_model = build(lantern)
    l_model.load_state_dict({k: lantern.tensor(v.numpy()) for k, v in t_model.state_dict().items()})
    return t_model, l_model, np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _run(lib, model, x, calls=3):
    """Outputs of `calls` forward passes and the input/parameter gradients of the last."""
    outs = []
    for _ in range(calls):
        model.zero_grad()
        xt = lib.tensor(x, requires_grad=True)
        out = model(xt)
        out.square().sum().backward()
        outs.append(out.detach().numpy())
    grads = {n.removeprefix("_orig_mod."): p.grad.numpy() for n, p in model.named_parameters()}
    return outs, xt.grad.numpy(), grads


def _assert_close(got, expected):
    for g, e in zip(got[0], expected[0]):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-4, atol=1e-5)
    for name, e in expected[2].items():
        np.testing.assert_allclose(got[2][name], e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_compiled_module_matches_eager_and_torch_compile(name):
    t_model, l_model, x = _pair(name)
    eager = _run(lantern, l_model, x)
    compiled = lantern.compile(l_model)
    got = _run(lantern, compiled, x)
    torch._dynamo.reset()
    expected = _run(torch, torch.compile(t_model, backend="eager"), x)
    _assert_close(got, eager)
    _assert_close(got, expected)
    plans = list(compiled._compiled_call.plans.values())
    # calls after the first ran the captured graphs: forward and backward as one node (the input requires grad),
    # but the CNN's convolutions keep eager autograd's fused backward kernels (lantern/_dynamo/aot_plan.py)
    aot = name != "cnn" and lantern.core.reference.fast_paths_on()   # reference mode: the ordinary capture
    assert len(plans) == 1 and isinstance(plans[0], AotPlan if aot else _Plan)


@pytest.mark.parametrize("backend", ["inductor", "eager", "aot_eager"])
def test_training_through_a_compiled_module_gives_eager_losses(backend):
    def losses(compile_it):
        lantern.manual_seed(0)
        model = gpt_block(lantern)
        opt = lantern.optim.AdamW(model.parameters(), lr=1e-2)
        step = lantern.compile(model, backend=backend) if compile_it else model
        x, y = lantern.randn(4, 8, 16), lantern.randn(4, 8, 16)
        out = []
        for _ in range(5):
            loss = lantern.nn.functional.mse_loss(step(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out

    assert losses(True) == losses(False)


def test_state_dict_keys_carry_torch_prefix():
    t_model, l_model, _ = _pair("cnn")
    expected = list(torch.compile(t_model, backend="eager").state_dict())
    compiled = lantern.compile(l_model)
    assert list(compiled.state_dict()) == expected
    assert compiled._orig_mod is l_model and type(compiled).__name__ == "OptimizedModule"
    assert lantern.compile(lantern.nn.Linear(2, 3)).out_features == 3  # other attributes are the original's
    stripped = {k.removeprefix("_orig_mod."): v for k, v in compiled.state_dict().items()}
    cnn(lantern).load_state_dict(stripped)  # nanoGPT's checkpoint code strips the prefix this way


def test_train_and_eval_are_separate_specialisations():
    _, model, x = _pair("cnn")
    compiled = lantern.compile(model)
    x = lantern.tensor(x)
    compiled(x)
    compiled.eval()
    assert not model.training
    with lantern.no_grad():
        assert compiled(x).equal(model(x))
        assert compiled(x).equal(model(x))
    assert len(compiled._compiled_call.plans) == 2


def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def test_data_dependent_control_flow_runs_eagerly():
    compiled = lantern.compile(_branchy)
    for sign in (1, -1, 1):
        x = lantern.full((3,), float(sign))
        assert compiled(x).equal(_branchy(x))


_TORCH_FULLGRAPH = """
import torch
def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1
try:
    torch.compile(_branchy, fullgraph=True, backend="eager")(torch.ones(3))
except torch._dynamo.exc.Unsupported:
    print("Unsupported")
"""


def test_fullgraph_raises_where_torch_raises():
    # torch's side runs in its own process: after a failed fullgraph capture, dynamo leaves the interpreter holding
    # one more reference to function arguments, which would stop lantern's allocator from recycling blocks in the
    # rest of the session
    import subprocess
    import sys
    torch_run = subprocess.run([sys.executable, "-c", _TORCH_FULLGRAPH], capture_output=True, text=True)
    assert torch_run.stdout.strip() == "Unsupported", torch_run.stderr
    with pytest.raises(lantern._dynamo.exc.Unsupported, match="fullgraph=True"):
        lantern.compile(_branchy, fullgraph=True)(lantern.ones(3))
    assert issubclass(lantern._dynamo.exc.Unsupported, RuntimeError)


def test_disabled_function_breaks_the_graph():
    calls = []

    @lantern.compiler.disable
    def log(x):
        calls.append(x.shape)
        return x

    compiled = lantern.compile(lambda x: log(x + 1) * 2)
    for _ in range(2):
        assert compiled(lantern.ones(2)).tolist() == [4.0, 4.0]
    assert len(calls) == 2  # ran in Python both times, not frozen into a graph


def test_decorator_forms_and_structured_outputs():
    @lantern.compile
    def plain(a, b):
        return (a * b).sin() + 1

    @lantern.compile(mode="max-autotune", dynamic=True, fullgraph=True)
    def structured(a, scale=2.0):
        return {"y": a * scale, "none": None, "pair": (a.sum(), 3)}

    a, b = lantern.randn(3), lantern.randn(3)
    for _ in range(2):
        assert plain(a, b).equal((a * b).sin() + 1)
        out = structured(a, scale=3.0)
        assert out["y"].equal(a * 3.0) and out["none"] is None and out["pair"][1] == 3
    assert plain.__name__ == "plain"


@pytest.mark.parametrize("kwargs", [{"backend": "no_such_backend"}, {"mode": "fastest"},
                                    {"mode": "default", "options": {}}])
def test_bad_arguments_raise_torch_errors(kwargs):
    with pytest.raises(Exception) as expected:
        torch.compile(torch.nn.Linear(2, 2), **kwargs)
    with pytest.raises(Exception) as got:
        lantern.compile(lantern.nn.Linear(2, 2), **kwargs)
    assert type(got.value).__name__ == type(expected.value).__name__
    assert str(got.value) == str(expected.value)


def test_backend_names_are_torchs():
    torch_names = [n for n in torch._dynamo.list_backends(exclude_tags=())
                   if "TESTING_ONLY" not in n and "minifier" not in n]
    assert lantern._dynamo.list_backends(exclude_tags=()) == torch_names
    assert lantern._dynamo.list_backends() == torch._dynamo.list_backends()
    assert lantern.compiler.list_backends() == torch.compiler.list_backends()


def test_reset_and_config():
    compiled = lantern.compile(lambda x: x + 1)
    compiled(lantern.ones(2))
    lantern._dynamo.reset()
    assert lantern._dynamo.config.suppress_errors is False
    assert not lantern.compiler.is_compiling()
    seen = []
    compiled = lantern.compile(lambda x: seen.append(lantern.compiler.is_compiling()) or x + 1)
    compiled(lantern.ones(2))
    compiled(lantern.ones(2))
    assert seen == [True]  # Python ran once, while capturing; the second call ran the graph


def test_warnings_from_the_function_still_show():
    def noisy(x):
        warnings.warn("from user code", UserWarning)
        return x + 1

    with pytest.warns(UserWarning, match="from user code"):
        lantern.compile(noisy)(lantern.ones(2))


def test_disable_returns_the_model():
    model = lantern.nn.Linear(2, 2)
    assert lantern.compile(model, disable=True) is model
    assert isinstance(lantern.compile(model, backend=None), lantern._dynamo.OptimizedModule)
    assert _EAGER not in lantern.compile(model)._compiled_call.plans.values()


def _pooled_relu(lib, inplace, indices):
    nn = lib.nn
    conv = nn.Conv2d(2, 3, 3, padding=1)
    with lib.no_grad():  # integer weights: exact zeros and ties in the convolution's output
        conv.weight.copy_(lib.tensor(np.random.default_rng(1).integers(-1, 2, (3, 2, 3, 3)), dtype=lib.float32))
        conv.bias.zero_()
    return nn.Sequential(conv, nn.ReLU(inplace=inplace), nn.MaxPool2d(2, stride=1, return_indices=indices))


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("indices", [False, True])
def test_relu_moved_after_max_pool_gives_eagers_values_and_grads(inplace, indices):
    """The parity test of _dynamo/pool_relu.py: relu(max_pool(x)) in place of max_pool(relu(x)) gives eager's
    values and gradients bit for bit (overlapping windows, ties, all-negative windows), and the pool's indices
    where they are read (the rewrite then does not apply)."""
    x = np.random.default_rng(0).integers(-2, 3, (4, 5, 2, 6)).astype(np.float32).transpose(0, 2, 1, 3)
    grad = np.random.default_rng(2).standard_normal((4, 3, 4, 5)).astype(np.float32)
    results, captured = [], None
    for lib, compiled in ((lantern, False), (lantern, True), (torch, False)):
        lib.manual_seed(0)
        model = _pooled_relu(lib, inplace, indices)
        run = lantern.compile(model) if compiled else model
        captured = run if compiled else captured
        with lantern.reference_mode(False):
            for _ in range(2):  # the second call runs the captured graph
                model.zero_grad()
                xt = lib.tensor(x).transpose(1, 2).contiguous().transpose(1, 2).requires_grad_()
                out = run(xt)
                (out[0] if indices else out).backward(lib.tensor(grad))
        results.append([t.detach().numpy() for t in (out if indices else [out])] + [xt.grad.numpy(),
                       model[0].weight.grad.numpy()])
    for got, eager, expected in zip(*results):
        np.testing.assert_array_equal(got, eager)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    (plan,) = captured._compiled_call.plans.values()
    kinds = [n.kind() for n in plan.executor.graph.nodes() if n.kind().startswith(("aten::relu", "aten::max"))]
    assert kinds[0].startswith("aten::relu" if indices else "aten::max_pool"), kinds
