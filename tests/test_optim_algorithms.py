"""Every optimizer against torch: the same parameters, the same loss (so grads change between steps), five steps,
then parameters and every state entry compared after each step, in float64 and float32."""
import math

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same

R = np.random.RandomState(0)
P1 = R.randn(3, 4)
P2 = R.randn(5)
C1 = R.randn(3, 4)
C2 = R.rand(5) + 0.5


def _params(lib, dtype):
    """Two leaf parameters; the first a non-contiguous view of a larger buffer (as after a transpose)."""
    dt = getattr(lib, dtype)
    p1 = lib.tensor(np.ascontiguousarray(P1.T), dtype=dt).t().detach().requires_grad_()
    p2 = lib.tensor(P2, dtype=dt).requires_grad_()
    return [p1, p2]


def _loss(lib, params, dtype):
    p1, p2 = params
    dt = getattr(lib, dtype)
    c1, c2 = lib.tensor(C1, dtype=dt), lib.tensor(C2, dtype=dt)
    return (p1 * c1).sin().sum() + (p2 * p2 * c2).sum() + (p1.sum() * p2[0]) * 0.1


def _snapshot(opt, params):
    """Parameters and the optimizer's state, keyed by parameter index."""
    state = {i: dict(opt.state[p]) for i, p in enumerate(params) if p in opt.state}
    return [p.detach().clone() for p in params], state


def _run(lib, make, dtype, steps=5, groups=False):
    params = _params(lib, dtype)
    if groups:
        opt = make(lib, [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.03}])
    else:
        opt = make(lib, params)
    snaps = []
    for _ in range(steps):
        opt.zero_grad()
        _loss(lib, params, dtype).backward()
        opt.step()
        snaps.append(_snapshot(opt, params))
    return opt, snaps


def _compare_state(got, expected, atol, rtol, path):
    assert list(got) == list(expected), f"{path}: state keys {list(got)} != {list(expected)}"
    for key, value in expected.items():
        if isinstance(value, torch.Tensor):
            assert_same(got[key], value, atol=atol, rtol=rtol, path=f"{path}.{key}")
        elif isinstance(value, float):
            assert math.isclose(got[key], value, rel_tol=1e-6), f"{path}.{key}: {got[key]} != {value}"
        else:
            assert got[key] == value, f"{path}.{key}: {got[key]!r} != {value!r}"


def check_optimizer(make, dtype="float64", steps=5, groups=False):
    """Run `make(lib, params)` on both libraries; compare params and state after every step."""
    atol, rtol = (1e-10, 1e-9) if dtype == "float64" else (2e-5, 2e-5)
    t_opt, expected = _run(torch, make, dtype, steps, groups)
    l_opt, got = _run(lantern, make, dtype, steps, groups)
    for step, ((gp, gs), (ep, es)) in enumerate(zip(got, expected)):
        for i, (g, e) in enumerate(zip(gp, ep)):
            assert_same(g, e, atol=atol, rtol=rtol, path=f"step {step} param {i}")
        assert list(gs) == list(es), f"step {step}: params with state {list(gs)} != {list(es)}"
        for i in es:
            _compare_state(gs[i], es[i], atol, rtol, f"step {step} state[{i}]")
    t_groups = [{k: v for k, v in g.items() if k != "params"} for g in t_opt.param_groups]
    l_groups = [{k: v for k, v in g.items() if k != "params"} for g in l_opt.param_groups]
    assert list(map(list, l_groups)) == list(map(list, t_groups))
    assert repr(l_opt) == repr(t_opt)
    return t_opt, l_opt


CASES = {
    "sgd": lambda m, p: m.optim.SGD(p, lr=0.1),
    "sgd_default": lambda m, p: m.optim.SGD(p),
    "sgd_momentum": lambda m, p: m.optim.SGD(p, lr=0.05, momentum=0.9),
    "sgd_dampening_wd": lambda m, p: m.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1),
    "sgd_nesterov_max": lambda m, p: m.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, maximize=True),
    "sgd_flags": lambda m, p: m.optim.SGD(p, lr=0.05, momentum=0.5, foreach=False, fused=None),
    "adam": lambda m, p: m.optim.Adam(p, lr=0.01),
    "adam_wd_amsgrad": lambda m, p: m.optim.Adam(p, lr=0.02, weight_decay=0.1, amsgrad=True),
    "adam_max_betas": lambda m, p: m.optim.Adam(p, lr=0.02, betas=(0.5, 0.9), eps=1e-3, maximize=True),
    "adam_decoupled": lambda m, p: m.optim.Adam(p, lr=0.02, weight_decay=0.3, decoupled_weight_decay=True),
    "adam_tensor_lr": lambda m, p: m.optim.Adam(p, lr=m.tensor(0.01)),
    "adamw": lambda m, p: m.optim.AdamW(p, lr=0.01),
    "adamw_amsgrad_max": lambda m, p: m.optim.AdamW(p, lr=0.01, weight_decay=0.5, amsgrad=True, maximize=True),
    "rmsprop": lambda m, p: m.optim.RMSprop(p),
    "rmsprop_centered_momentum": lambda m, p: m.optim.RMSprop(p, lr=0.01, alpha=0.9, momentum=0.5, centered=True),
    "rmsprop_wd_max": lambda m, p: m.optim.RMSprop(p, lr=0.01, weight_decay=0.1, maximize=True, eps=1e-3),
    "rmsprop_momentum": lambda m, p: m.optim.RMSprop(p, lr=0.01, momentum=0.9),
    "rmsprop_tensor_wd": lambda m, p: m.optim.RMSprop(p, lr=0.01, weight_decay=m.tensor(0.1)),
    "adagrad": lambda m, p: m.optim.Adagrad(p),
    "adagrad_decay_init": lambda m, p: m.optim.Adagrad(p, lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5,
                                                       weight_decay=0.1),
    "adagrad_max_tensor_lr": lambda m, p: m.optim.Adagrad(p, lr=m.tensor(0.05), maximize=True, eps=1e-3),
    "adadelta": lambda m, p: m.optim.Adadelta(p),
    "adadelta_rho_wd_max": lambda m, p: m.optim.Adadelta(p, lr=0.5, rho=0.5, weight_decay=0.1, maximize=True),
    "adamax": lambda m, p: m.optim.Adamax(p),
    "adamax_tensor_wd": lambda m, p: m.optim.Adamax(p, lr=0.05, weight_decay=m.tensor(0.2)),
    "adamax_wd_max": lambda m, p: m.optim.Adamax(p, lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, maximize=True),
    "nadam": lambda m, p: m.optim.NAdam(p),
    "nadam_decoupled": lambda m, p: m.optim.NAdam(p, lr=0.05, weight_decay=0.2, momentum_decay=0.1,
                                                  decoupled_weight_decay=True),
    "nadam_wd_max": lambda m, p: m.optim.NAdam(p, lr=0.05, weight_decay=0.2, maximize=True),
    "radam": lambda m, p: m.optim.RAdam(p, lr=0.05),
    "radam_rectified": lambda m, p: m.optim.RAdam(p, lr=0.05, betas=(0.9, 0.5), weight_decay=0.1),
    "radam_decoupled_max": lambda m, p: m.optim.RAdam(p, lr=0.05, betas=(0.5, 0.6), weight_decay=0.3,
                                                      decoupled_weight_decay=True, maximize=True),
}


@pytest.mark.parametrize("name", CASES)
def test_matches_torch_float64(name):
    check_optimizer(CASES[name], "float64")


@pytest.mark.parametrize("name", ["sgd_momentum", "sgd_nesterov_max", "adam_wd_amsgrad", "adamw",
                                  "rmsprop_centered_momentum", "adagrad_decay_init", "adadelta", "adamax_wd_max",
                                  "nadam_decoupled", "radam_rectified"])
def test_matches_torch_float32(name):
    check_optimizer(CASES[name], "float32")


@pytest.mark.parametrize("name", ["sgd_dampening_wd", "adam_wd_amsgrad", "adagrad_decay_init", "nadam",
                                  "rmsprop_centered_momentum"])
def test_param_groups_with_own_lr(name):
    check_optimizer(CASES[name], "float64", steps=3, groups=True)


def test_adam_step_dtype_follows_default_dtype():
    for dtype in ("float32", "float64"):
        _, l_opt = check_optimizer(CASES["adam"], dtype, steps=1)
        assert l_opt.state[l_opt.param_groups[0]["params"][0]]["step"].dtype is lantern.float32
    prev = lantern.get_default_dtype()
    lantern.set_default_dtype(lantern.float64)
    try:
        w = lantern.tensor([1.0], requires_grad=True)
        opt = lantern.optim.Adam([w])
        w.grad = lantern.tensor([1.0])
        opt.step()
        assert opt.state[w]["step"].dtype is lantern.float64
    finally:
        lantern.set_default_dtype(prev)


# ---- LBFGS ------------------------------------------------------------------------------------------------------
def _same_value(got, expected, path, atol=1e-9):
    """Recursive comparison of LBFGS state entries: tensors, numbers, lists (with None holes)."""
    if isinstance(expected, torch.Tensor):
        assert_same(got, expected, atol=atol, rtol=1e-7, path=path)
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), path
        for i, (g, e) in enumerate(zip(got, expected)):
            _same_value(g, e, f"{path}[{i}]", atol)
    elif isinstance(expected, float):
        assert not isinstance(got, lantern.Tensor) and math.isclose(got, expected, rel_tol=1e-7), \
            f"{path}: {got!r} != {expected!r}"
    else:
        assert got == expected and type(got) is type(expected), f"{path}: {got!r} != {expected!r}"


def _deep_clone(value):
    if isinstance(value, dict):
        return {k: _deep_clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_clone(v) for v in value]
    return value.clone() if hasattr(value, "clone") else value


def _lbfgs_run(lib, steps, **kw):
    x = lib.tensor([-1.5, 2.0, 0.5], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([[0.3], [-0.7]], dtype=lib.float64, requires_grad=True)
    opt = lib.optim.LBFGS([x, y], **kw)

    def closure():
        opt.zero_grad()
        loss = ((1 - x[:-1]) ** 2 + 100 * (x[1:] - x[:-1] ** 2) ** 2).sum() + (y ** 4).sum() + (x[0] * y[1, 0])
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        loss = opt.step(closure)
        out.append((loss.item(), x.detach().clone(), y.detach().clone(), _deep_clone(dict(opt.state[x]))))
    return opt, out


# Rosenbrock is chaotic near its optimum (torch itself drifts 1e-7 from a 2e-16 change of x0 after 60 iterations),
# so the long runs stop after one step and the multi-step runs keep max_iter small.
@pytest.mark.parametrize("steps,kw", [(1, {}), (1, {"line_search_fn": "strong_wolfe"}),
                                      (3, {"lr": 0.1, "max_iter": 4}), (3, {"max_iter": 5, "history_size": 2}),
                                      (3, {"line_search_fn": "strong_wolfe", "history_size": 2, "max_iter": 4}),
                                      (2, {"tolerance_change": 0.5}), (2, {"tolerance_grad": 5, "max_iter": 100}),
                                      (2, {"tolerance_change": 1e-2, "line_search_fn": "strong_wolfe"})])
def test_lbfgs_matches_torch_step_by_step(steps, kw):
    t_opt, expected = _lbfgs_run(torch, steps, **kw)
    l_opt, got = _lbfgs_run(lantern, steps, **kw)
    for step, (g, e) in enumerate(zip(got, expected)):
        assert math.isclose(g[0], e[0], rel_tol=1e-9)
        assert_same(g[1], e[1], atol=1e-9, rtol=1e-7, path=f"step {step} x")
        assert_same(g[2], e[2], atol=1e-9, rtol=1e-7, path=f"step {step} y")
        assert list(g[3]) == list(e[3])
        for key in e[3]:
            # `al` holds dot products of nearly orthogonal vectors: cancellation leaves ~1e-7 absolute noise
            _same_value(g[3][key], e[3][key], f"step {step} state.{key}", 1e-7 if key == "al" else 1e-9)
    assert repr(l_opt) == repr(t_opt)


def test_lbfgs_errors_match_torch():
    from oracle import raises_like
    one = lambda m: m.tensor([1.], requires_grad=True)  # noqa: E731
    cases = [
        lambda m: m.optim.LBFGS([{"params": [one(m)]}, {"params": [one(m)]}]),
        lambda m: m.optim.LBFGS([one(m)], lr=-1.),
        lambda m: m.optim.LBFGS([one(m)]).step(),
        lambda m: (lambda w: m.optim.LBFGS([w], line_search_fn="armijo").step(
            lambda: (w * w).sum().backward() or (w * w).sum()))(one(m)),
    ]
    for case in cases:
        torch_msg, lantern_msg = raises_like(case)
        assert torch_msg.replace("torch", "lantern") == lantern_msg or "missing 1 required" in torch_msg


@pytest.mark.parametrize("make", [lambda m, p: m.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
                                  lambda m, p: m.optim.AdamW(p, lr=0.05, amsgrad=True)])
def test_training_a_module_with_named_parameters(make):
    from nn_oracle import same_weights
    x, y = R.randn(8, 3), R.randn(8, 2)
    torch_model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    lantern_model = lantern.nn.Sequential(lantern.nn.Linear(3, 4), lantern.nn.Tanh(), lantern.nn.Linear(4, 2))
    same_weights(torch_model, lantern_model)
    results = []
    for lib, model in ((torch, torch_model), (lantern, lantern_model)):
        opt = make(lib, model.named_parameters())
        xs, ys = lib.tensor(x, dtype=lib.float32), lib.tensor(y, dtype=lib.float32)
        for _ in range(4):
            opt.zero_grad()
            lib.nn.functional.mse_loss(model(xs), ys).backward()
            opt.step()
        results.append((model.state_dict(), opt.state_dict()))
    (t_params, t_sd), (l_params, l_sd) = results
    for key in t_params:
        assert_same(l_params[key], t_params[key], atol=1e-5, rtol=1e-5, path=key)
    assert l_sd["param_groups"] == t_sd["param_groups"]
    assert l_sd["param_groups"][0]["param_names"] == ["0.weight", "0.bias", "2.weight", "2.bias"]
