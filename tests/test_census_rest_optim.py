"""ASGD, Rprop, Adafactor, Muon, swap_in_optimizer_params_and_state and swa_utils against torch: parameter and state
trajectories over several steps (with their foreach, maximize and weight_decay options as torch has them), the
hyperparameter checks, state_dict round trips."""
import copy

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same
from test_optim_algorithms import check_optimizer

CASES = {
    "asgd": lambda m, p: m.optim.ASGD(p),
    "asgd_averaging": lambda m, p: m.optim.ASGD(p, lr=0.05, lambd=0.01, alpha=0.5, t0=2),
    "asgd_wd_max": lambda m, p: m.optim.ASGD(p, lr=0.05, t0=1, weight_decay=0.1, maximize=True),
    "asgd_foreach_false": lambda m, p: m.optim.ASGD(p, lr=0.05, t0=0, weight_decay=0.2, foreach=False),
    "rprop": lambda m, p: m.optim.Rprop(p),
    "rprop_etas_sizes": lambda m, p: m.optim.Rprop(p, lr=0.2, etas=(0.3, 1.7), step_sizes=(0.01, 0.25)),
    "rprop_max": lambda m, p: m.optim.Rprop(p, lr=0.05, maximize=True),
    "rprop_foreach_max": lambda m, p: m.optim.Rprop(p, lr=0.05, foreach=True, maximize=True),
    "rprop_foreach": lambda m, p: m.optim.Rprop(p, lr=0.3, etas=(0.5, 1.5), foreach=True),
    "adafactor": lambda m, p: m.optim.Adafactor(p),
    "adafactor_wd_max": lambda m, p: m.optim.Adafactor(p, lr=0.05, weight_decay=0.1, maximize=True),
    "adafactor_eps_d": lambda m, p: m.optim.Adafactor(p, lr=0.5, eps=(1e-3, 1e-2), d=1.5, beta2_decay=-0.5),
    "adafactor_foreach_wd": lambda m, p: m.optim.Adafactor(p, lr=0.05, weight_decay=0.3, foreach=True),
    "adafactor_foreach_max": lambda m, p: m.optim.Adafactor(p, lr=0.2, maximize=True, foreach=True),
    "adafactor_tensor_lr": lambda m, p: m.optim.Adafactor(p, lr=m.tensor(0.05), weight_decay=0.1),
}


# torch's foreach ASGD, and its ASGD with a tensor lr, compute the eta schedule lr / (1 + lambd·lr·t)^alpha in
# float32 tensor arithmetic (its single-tensor loop uses Python floats); lantern's one loop follows the single-tensor
# arithmetic, and NumPy's float32 pow may round a last bit differently, so these compare at float32's tolerance.
FLOAT32_ETA_CASES = {
    "asgd_foreach_wd": lambda m, p: m.optim.ASGD(p, lr=0.05, t0=0, weight_decay=0.2, foreach=True),
    "asgd_foreach_max": lambda m, p: m.optim.ASGD(p, lr=0.05, t0=3, maximize=True, foreach=True),
    "asgd_tensor_lr": lambda m, p: m.optim.ASGD(p, lr=m.tensor(0.05), t0=1, foreach=False),
}


@pytest.mark.parametrize("name", CASES)
def test_matches_torch_float64(name):
    check_optimizer(CASES[name], "float64", steps=6)


@pytest.mark.parametrize("name", ["asgd_averaging", "rprop_etas_sizes", "rprop_foreach_max", "adafactor",
                                  "adafactor_foreach_wd", *FLOAT32_ETA_CASES])
def test_matches_torch_float32(name):
    check_optimizer({**CASES, **FLOAT32_ETA_CASES}[name], "float32", steps=6)


@pytest.mark.parametrize("name", ["asgd_wd_max", "rprop_etas_sizes", "adafactor_wd_max"])
def test_param_groups_with_own_lr(name):
    check_optimizer(CASES[name], "float64", steps=3, groups=True)


def _complex_run(lib, make, steps=4):
    rng = np.random.RandomState(3)
    values = rng.randn(3, 2) + 1j * rng.randn(3, 2)
    target = rng.randn(3, 2) + 1j * rng.randn(3, 2)
    p = lib.tensor(values, dtype=lib.complex128, requires_grad=True)
    opt = make(lib, [p])
    for _ in range(steps):
        opt.zero_grad()
        ((p - lib.tensor(target)).abs() ** 2).sum().backward()
        opt.step()
    return p.detach(), opt.state[p]


@pytest.mark.parametrize("name", ["asgd_wd_max", "rprop", "rprop_etas_sizes"])
def test_complex_params_update_as_pairs_of_reals(name):
    expected_p, expected_state = _complex_run(torch, CASES[name])
    got_p, got_state = _complex_run(lantern, CASES[name])
    assert_same(got_p, expected_p, atol=1e-10, rtol=1e-9)
    for key, value in expected_state.items():
        assert_same(got_state[key], value, atol=1e-10, rtol=1e-9, path=key)


def _adafactor_shapes_run(lib, dtype, **kwargs):
    """Adafactor on a 3-D, a 2-D, a vector and a 0-d parameter: factored and unfactored second moments."""
    rng = np.random.RandomState(1)
    shapes = [(2, 3, 4), (4, 3), (5,), ()]
    params = [lib.tensor(rng.randn(*s), dtype=getattr(lib, dtype), requires_grad=True) for s in shapes]
    opt = lib.optim.Adafactor(params, **kwargs)
    history = []
    for step in range(4):
        opt.zero_grad()
        sum(((p * (step + 1.5)).sin() * p).sum() for p in params).backward()
        opt.step()
        history.append(([p.detach().clone() for p in params], copy.deepcopy([dict(opt.state[p]) for p in params])))
    return history


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adafactor_factors_every_shape_like_torch(dtype):
    tol = 1e-10 if dtype == "float64" else 2e-5
    expected = _adafactor_shapes_run(torch, dtype, lr=0.1, weight_decay=0.05)
    got = _adafactor_shapes_run(lantern, dtype, lr=0.1, weight_decay=0.05)
    for (g_params, g_states), (e_params, e_states) in zip(got, expected):
        for g, e in zip(g_params, e_params):
            assert_same(g, e, atol=tol, rtol=tol)
        for g_state, e_state in zip(g_states, e_states):
            assert list(g_state) == list(e_state)
            for key in e_state:
                assert_same(g_state[key], e_state[key], atol=tol, rtol=tol, path=key)


def _muon_run(lib, steps=4, **kwargs):
    """Muon on a tall and a wide matrix (Newton–Schulz runs on the wide orientation)."""
    rng = np.random.RandomState(2)
    tall = lib.tensor(rng.randn(6, 3), requires_grad=True)
    wide = lib.tensor(rng.randn(3, 5), requires_grad=True)
    target = lib.tensor(rng.randn(6, 5))
    opt = lib.optim.Muon([tall, wide], **kwargs)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        ((tall @ wide - target) ** 2).sum().backward()
        opt.step()
        history.append((tall.detach().clone(), wide.detach().clone(),
                        opt.state[tall]["momentum_buffer"].clone(), opt.state[wide]["momentum_buffer"].clone()))
    return history


@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.02, "nesterov": False, "weight_decay": 0.0},
                                    {"lr": 0.01, "adjust_lr_fn": "match_rms_adamw", "momentum": 0.5},
                                    {"lr": 0.01, "adjust_lr_fn": "original", "ns_steps": 3, "eps": 1e-3},
                                    {"lr": 0.05, "ns_coefficients": (2.0, -1.5, 0.5), "weight_decay": 0.3}])
def test_muon_matches_torch(kwargs):
    # the orthogonalization runs in bfloat16, as torch's does, and rounds where torch's CPU kernels round: the
    # float64 parameters agree to float64 rounding
    for step, (got, expected) in enumerate(zip(_muon_run(lantern, **kwargs), _muon_run(torch, **kwargs))):
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, atol=1e-12, rtol=1e-10, path=f"step {step} tensor {i}")


def test_muon_newton_schulz_is_nearly_orthogonal():
    from lantern.optim._muon import _zeropower_via_newtonschulz
    g = lantern.tensor(np.random.RandomState(4).randn(4, 7))
    ortho = _zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7)
    assert ortho.dtype is lantern.bfloat16 and ortho.shape == (4, 7)
    singular_values = lantern.linalg.svdvals(ortho.double())
    assert ((singular_values > 0.5) & (singular_values < 1.5)).all()


ERRORS = [
    lambda m, p: m.optim.ASGD(p, lr=-0.1),
    lambda m, p: m.optim.ASGD(p, weight_decay=-1),
    lambda m, p: m.optim.ASGD(p, lr=m.tensor([0.1, 0.2])),
    lambda m, p: m.optim.Rprop(p, lr=-1.0),
    lambda m, p: m.optim.Rprop(p, etas=(1.5, 1.2)),
    lambda m, p: m.optim.Rprop(p, etas=(0.5, 0.9)),
    lambda m, p: m.optim.Adafactor(p, lr=-1.0),
    lambda m, p: m.optim.Adafactor(p, beta2_decay=0.5),
    lambda m, p: m.optim.Adafactor(p, eps=(-1.0, 1e-3)),
    lambda m, p: m.optim.Adafactor(p, eps=(None, -1e-3)),
    lambda m, p: m.optim.Adafactor(p, d=0.5),
    lambda m, p: m.optim.Adafactor(p, weight_decay=-0.1),
    lambda m, p: m.optim.Muon(p, lr=-1.0),
    lambda m, p: m.optim.Muon(p, momentum=-0.1),
    lambda m, p: m.optim.Muon(p, weight_decay=-0.1),
    lambda m, p: m.optim.Muon(p, adjust_lr_fn="other"),
    lambda m, p: m.optim.Muon(p + [m.zeros(3, requires_grad=True)]),
]


@pytest.mark.parametrize("make", ERRORS)
def test_invalid_hyperparameters_raise_like_torch(make):
    messages = []
    for lib in (torch, lantern):
        with pytest.raises(ValueError) as info:
            make(lib, [lib.zeros(2, 2, requires_grad=True)])
        messages.append(str(info.value).replace("torch.", "lantern."))
    assert messages[1] == messages[0]


@pytest.mark.parametrize("make, grad_kind, error", [
    (lambda m, p: m.optim.ASGD(p), "sparse", RuntimeError),
    (lambda m, p: m.optim.Rprop(p), "sparse", RuntimeError),
    (lambda m, p: m.optim.Adafactor(p), "sparse", RuntimeError),
    (lambda m, p: m.optim.Adafactor(p), "complex", RuntimeError),
    (lambda m, p: m.optim.Muon(p), "sparse", RuntimeError),
    (lambda m, p: m.optim.Muon(p), "complex", RuntimeError),
])
def test_unsupported_grads_raise_like_torch(make, grad_kind, error):
    messages = []
    for lib in (torch, lantern):
        dtype = lib.complex64 if grad_kind == "complex" else lib.float32
        p = lib.ones(2, 2, dtype=dtype, requires_grad=True)
        p.grad = lib.ones(2, 2, dtype=dtype).to_sparse() if grad_kind == "sparse" else lib.ones(2, 2, dtype=dtype)
        opt = make(lib, [p])
        with pytest.raises(error) as info:
            opt.step()
        messages.append(str(info.value))
    assert messages[1] == messages[0]


def test_muon_refuses_foreach_like_torch():
    for lib in (torch, lantern):
        with pytest.raises(RuntimeError, match="Foreach is not supported for Muon yet"):
            lib.optim._muon.muon([], [], [], foreach=True, lr=0.1, weight_decay=0.0, momentum=0.9, nesterov=True,
                                 ns_coefficients=(1.0, 1.0, 1.0), ns_steps=1, eps=1e-7, adjust_lr_fn=None,
                                 has_complex=False)


@pytest.mark.parametrize("name", ["asgd_averaging", "rprop_etas_sizes", "adafactor_wd_max"])
def test_state_dict_round_trip_continues_like_torch(name):
    """Three steps, a state_dict into a fresh optimizer over fresh copies, three more steps: both libraries agree,
    and the state_dict has torch's layout."""
    def run(lib):
        rng = np.random.RandomState(5)
        p = lib.tensor(rng.randn(3, 4), requires_grad=True)
        opt = CASES[name](lib, [p])
        for _ in range(3):
            opt.zero_grad(); (p.sin() * p).sum().backward(); opt.step()
        saved = opt.state_dict()
        q = p.detach().clone().requires_grad_()
        opt2 = CASES[name](lib, [q])
        opt2.load_state_dict(saved)
        for _ in range(3):
            opt2.zero_grad(); (q.cos() * q).sum().backward(); opt2.step()
        return saved, q.detach(), opt2.state[q]

    (t_saved, t_q, t_state), (l_saved, l_q, l_state) = run(torch), run(lantern)
    assert l_saved["param_groups"][0].keys() == t_saved["param_groups"][0].keys()
    assert list(l_saved["state"][0]) == list(t_saved["state"][0])
    assert_same(l_q, t_q, atol=1e-10, rtol=1e-9)
    for key, value in t_state.items():
        assert_same(l_state[key], value, atol=1e-10, rtol=1e-9, path=key)


# ---- swap_in_optimizer_params_and_state ---------------------------------------------------------------------------
def _swap_run(lib):
    w = lib.tensor([1.0, -2.0], requires_grad=True)
    b = lib.tensor([0.5], requires_grad=True)
    opt = lib.optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    w.grad, b.grad = lib.tensor([1.0, 1.0]), lib.tensor([2.0])
    opt.step()
    saved = copy.deepcopy(opt.state_dict())
    saved["param_groups"][1]["lr"] = 0.01
    others = {"w": lib.tensor([3.0, 4.0], requires_grad=True), "b": lib.tensor([5.0], requires_grad=True)}
    others["w"].grad, others["b"].grad = lib.tensor([-1.0, 2.0]), lib.tensor([1.0])
    live_params = opt.param_groups[0]["params"]
    with lib.optim.swap_in_optimizer_params_and_state(opt, others, saved):
        inside = [opt.param_groups[1]["lr"], opt.param_groups[0]["params"][0] is others["w"]]
        opt.step()
    after = [opt.param_groups[1]["lr"], opt.param_groups[0]["params"] is live_params, opt.state[w]["step"].item()]
    return [w.detach(), b.detach(), others["w"].detach(), others["b"].detach(), saved["state"][0]["exp_avg"],
            saved["state"][1]["step"]], inside + after


def test_swap_in_optimizer_params_and_state_like_torch():
    (t_tensors, t_facts), (l_tensors, l_facts) = _swap_run(torch), _swap_run(lantern)
    assert l_facts == t_facts
    for g, e in zip(l_tensors, t_tensors):
        assert_same(g, e)


@pytest.mark.parametrize("spoil", [
    lambda opt, sd, ps: (opt, None, ps),
    lambda opt, sd, ps: (opt, {**sd, "state": []}, ps),
    lambda opt, sd, ps: (opt, {**sd, "state": {0: 1.0}}, ps),
    lambda opt, sd, ps: (opt, {**sd, "param_groups": {}}, ps),
    lambda opt, sd, ps: (opt, {**sd, "param_groups": sd["param_groups"] * 2}, ps),
    lambda opt, sd, ps: (opt, {**sd, "param_groups": [{**sd["param_groups"][0], "params": ["a"]}]}, ps),
    lambda opt, sd, ps: (opt, {**sd, "param_groups": [{**sd["param_groups"][0], "params": [0, 1]}]}, ps),
    lambda opt, sd, ps: (opt, {**sd, "param_groups": [{**sd["param_groups"][0], "extra": 1}]}, ps),
    lambda opt, sd, ps: (opt, {**sd, "state": {**sd["state"], 7: {}}}, ps),
    lambda opt, sd, ps: (opt, sd, {}),
])
def test_swap_in_checks_like_torch(spoil):
    messages = []
    for lib in (torch, lantern):
        w = lib.tensor([1.0], requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        w.grad = lib.tensor([1.0])
        opt.step()
        args = spoil(opt, opt.state_dict(), {"w": lib.tensor([2.0])})
        with pytest.raises(RuntimeError) as info:
            with lib.optim.swap_in_optimizer_params_and_state(*args):
                pass
        messages.append(str(info.value))
    assert messages[1] == messages[0]
    fresh = lantern.optim.SGD([lantern.zeros(1, requires_grad=True)])
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        with lantern.optim.swap_in_optimizer_params_and_state(fresh, {}, fresh.state_dict()):
            pass


# ---- swa_utils ------------------------------------------------------------------------------------------------------
def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def _copy_weights(src, dst):
    with torch.no_grad():
        for t_p, l_p in zip(src.state_dict().values(), dst.state_dict().values()):
            l_p.copy_(lantern.tensor(t_p.numpy()))


AVERAGERS = {
    "swa": lambda m: {},
    "ema_fn": lambda m: {"avg_fn": m.optim.swa_utils.get_ema_avg_fn(0.9)},
    "ema_multi": lambda m: {"multi_avg_fn": m.optim.swa_utils.get_ema_multi_avg_fn(0.8)},
    "swa_multi": lambda m: {"multi_avg_fn": m.optim.swa_utils.get_swa_multi_avg_fn()},
    "ema_multi_buffers": lambda m: {"multi_avg_fn": m.optim.swa_utils.get_ema_multi_avg_fn(0.7), "use_buffers": True},
    "swa_fn_buffers": lambda m: {"avg_fn": m.optim.swa_utils.get_swa_avg_fn(), "use_buffers": True},
}


def _averaged_run(lib, net, averager):
    rng = np.random.RandomState(6)
    swa = lib.optim.swa_utils.AveragedModel(net, **AVERAGERS[averager](lib))
    opt = lib.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(4):
        opt.zero_grad()
        net(lib.tensor(rng.randn(8, 3), dtype=lib.float32)).pow(2).sum().backward()
        opt.step()
        swa.update_parameters(net)
    x = lib.tensor(rng.randn(5, 3), dtype=lib.float32)
    swa.eval()
    return swa.state_dict(), swa(x).detach()


@pytest.mark.parametrize("averager", AVERAGERS)
def test_averaged_model_matches_torch(averager):
    t_net, l_net = _net(torch), _net(lantern)
    _copy_weights(t_net, l_net)
    t_state, t_out = _averaged_run(torch, t_net, averager)
    l_state, l_out = _averaged_run(lantern, l_net, averager)
    assert list(l_state) == list(t_state)
    for key, value in t_state.items():
        assert_same(l_state[key], value, atol=1e-6, rtol=1e-5, path=key)
    assert_same(l_out, t_out, atol=1e-5, rtol=1e-5)


def test_averaged_model_checks_and_integer_averages_like_torch():
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        lantern.optim.swa_utils.AveragedModel(lantern.nn.Linear(1, 1), avg_fn=lambda *a: a[0],
                                              multi_avg_fn=lambda *a: None)
    for make in (lambda m: m.optim.swa_utils.get_ema_avg_fn(1.5), lambda m: m.optim.swa_utils.get_ema_multi_avg_fn(-1)):
        messages = []
        for lib in (torch, lantern):
            with pytest.raises(ValueError) as info:
                make(lib)
            messages.append(str(info.value))
        assert messages[1] == messages[0]
    # integer tensors: the EMA rounds towards zero; the equal-weight average meets add's and addcdiv's integer checks
    results = []
    for lib in (torch, lantern):
        current = [lib.tensor([13, 29])]
        ema = [lib.tensor([10, 20])]
        lib.optim.swa_utils.get_ema_multi_avg_fn(0.5)(ema, current, 0)
        messages = []
        for n_averaged in (2, lib.tensor(2)):
            with pytest.raises(RuntimeError) as info:
                lib.optim.swa_utils.get_swa_multi_avg_fn()([lib.tensor([10, 20])], current, n_averaged)
            messages.append(str(info.value).split(" (")[0])
        results.append((ema[0], messages))
    assert_same(results[1][0], results[0][0])
    assert results[1][1] == results[0][1]


def test_update_bn_matches_torch():
    rng = np.random.RandomState(7)
    batches = [rng.randn(6, 3) * 2 + 1 for _ in range(3)]
    t_net, l_net = _net(torch), _net(lantern)
    _copy_weights(t_net, l_net)
    for lib, net in ((torch, t_net), (lantern, l_net)):
        net.eval()
        loader = [(lib.tensor(b, dtype=lib.float32), None) for b in batches]
        lib.optim.swa_utils.update_bn(loader, net)
        assert not net.training
    t_bn, l_bn = t_net[1], l_net[1]
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_same(getattr(l_bn, name), getattr(t_bn, name), atol=1e-6, rtol=1e-5, path=name)
    assert l_bn.momentum == t_bn.momentum == 0.1
    lantern.optim.swa_utils.update_bn([lantern.ones(2, 3)], lantern.nn.Linear(3, 1))  # no BatchNorm: nothing to do


@pytest.mark.parametrize("kwargs", [{"swa_lr": 0.05}, {"swa_lr": 0.5, "anneal_epochs": 3, "anneal_strategy": "linear"},
                                    {"swa_lr": [0.05, 0.2], "anneal_epochs": 0},
                                    {"swa_lr": 0.01, "anneal_epochs": 4, "anneal_strategy": "cos"}])
def test_swalr_matches_torch(kwargs):
    lrs = []
    for lib in (torch, lantern):
        w, b = lib.zeros(1, requires_grad=True), lib.zeros(1, requires_grad=True)
        opt = lib.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.3}], lr=1.0)
        sched = lib.optim.swa_utils.SWALR(opt, **kwargs)
        seen = [sched.get_last_lr()]
        for _ in range(7):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr())
        state = sched.state_dict()
        fresh = lib.optim.swa_utils.SWALR(opt, swa_lr=9.0, anneal_strategy="linear")
        fresh.load_state_dict(state)
        seen.append([fresh.anneal_func(0.5), sorted(state)])
        lrs.append(seen)
    t_lrs, l_lrs = ([lr for step in seen[:-1] for lr in step] for seen in lrs)
    assert l_lrs == pytest.approx(t_lrs, rel=1e-12)
    assert lrs[1][-1] == lrs[0][-1]


@pytest.mark.parametrize("kwargs, error", [({"swa_lr": 0.1, "anneal_strategy": "exp"}, ValueError),
                                           ({"swa_lr": 0.1, "anneal_epochs": -1}, ValueError),
                                           ({"swa_lr": 0.1, "anneal_epochs": 2.5}, ValueError),
                                           ({"swa_lr": [0.1, 0.2]}, ValueError)])
def test_swalr_checks_like_torch(kwargs, error):
    messages = []
    for lib in (torch, lantern):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        with pytest.raises(error) as info:
            lib.optim.swa_utils.SWALR(opt, **kwargs)
        messages.append(str(info.value))
    assert messages[1] == messages[0]


def test_optim_names_are_torchs():
    assert set(torch.optim.__all__) <= set(lantern.optim.__all__)
    assert sorted(lantern.optim.swa_utils.__all__) == sorted(torch.optim.swa_utils.__all__)
