"""Optimizer base class against torch: param groups and their errors, zero_grad, state_dict / load_state_dict,
pickling, repr, hooks, and the spec cases 19-22."""
import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
from torch.optim import optimizer as torch_optimizer

import lantern
from lantern.optim import optimizer as lantern_optimizer
from oracle import assert_same, raises_like

LIBS = (torch, lantern)


def _leaf(lib, values, dtype=None):
    return lib.tensor(values, dtype=dtype, requires_grad=True)


def _both(fn):
    """fn(lib) on torch and lantern."""
    return fn(torch), fn(lantern)


def _same_state_dict(got, expected, atol=1e-6):
    """Two state dicts agree key for key; tensors by value and dtype."""
    assert list(got) == list(expected)
    assert list(got["state"]) == list(expected["state"])
    for k, e_state in expected["state"].items():
        assert list(got["state"][k]) == list(e_state)
        for key, value in e_state.items():
            assert_same(got["state"][k][key], value, atol=atol, path=f"state[{k}][{key}]")
    assert len(got["param_groups"]) == len(expected["param_groups"])
    for g, e in zip(got["param_groups"], expected["param_groups"]):
        assert list(g) == list(e)
        for key in e:
            if isinstance(e[key], torch.Tensor):
                assert_same(g[key], e[key], path=key)
            else:
                assert g[key] == e[key], key


# ---- spec cases 19-22 -------------------------------------------------------------------------------------------
def _adamw_one_step(lib):
    p = lib.nn.Parameter(lib.tensor([1., -2.]))
    opt = lib.optim.AdamW([p], lr=0.1)
    p.grad = lib.tensor([0.5, -1.])
    opt.step()
    return p, opt


def test_case19_adamw_one_step():
    p, opt = _adamw_one_step(lantern)
    np.testing.assert_allclose(p.tolist(), [0.899, -1.898], rtol=1e-6)
    state = opt.state[p]
    assert state["step"].item() == 1.0 and state["step"].dtype is lantern.float32 and state["step"].dim() == 0
    np.testing.assert_allclose(state["exp_avg"].tolist(), [0.05, -0.1], rtol=1e-6)
    np.testing.assert_allclose(state["exp_avg_sq"].tolist(), [0.00025, 0.001], rtol=1e-5)
    d = opt.defaults
    assert (d["betas"], d["eps"], d["weight_decay"], d["amsgrad"]) == ((0.9, 0.999), 1e-8, 0.01, False)
    assert d == {k: v for k, v in _adamw_one_step(torch)[1].defaults.items()}


def test_case20_state_dict_round_trip_and_pickle():
    for lib in LIBS:
        p, opt = _adamw_one_step(lib)
        sd = opt.state_dict()
        assert list(sd) == ["state", "param_groups"]
        assert list(sd["state"]) == [0] and sd["param_groups"][0]["params"] == [0]
        p3 = lib.nn.Parameter(lib.tensor([3., 4.]))
        opt2 = lib.optim.AdamW([p3])
        opt2.load_state_dict(sd)
        assert opt2.state[p3]["step"] == 1 and opt2.param_groups[0]["lr"] == 0.1
        two = lib.optim.AdamW([{"params": [lib.nn.Parameter(lib.zeros(1))]},
                               {"params": [lib.nn.Parameter(lib.zeros(1))]}])
        with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
            opt.load_state_dict(two.state_dict())
        again = pickle.loads(pickle.dumps(opt))
        assert type(again) is type(opt) and again.param_groups[0]["lr"] == 0.1
    _same_state_dict(_adamw_one_step(lantern)[1].state_dict(), _adamw_one_step(torch)[1].state_dict())


def test_case21_add_param_group():
    for lib in LIBS:
        p, opt = _adamw_one_step(lib)
        q = lib.nn.Parameter(lib.zeros(2))
        opt.add_param_group({"params": q, "lr": 0.01})
        g = opt.param_groups[1]
        assert len(g["params"]) == 1 and g["params"][0] is q
        assert (g["lr"], g["betas"], g["weight_decay"]) == (0.01, (0.9, 0.999), 0.01)
        with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
            opt.add_param_group({"params": [p]})
        with pytest.raises(TypeError, match="ordered collections"):
            opt.add_param_group({"params": {lib.nn.Parameter(lib.zeros(1))}})
        with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
            opt.add_param_group({"params": [lib.nn.Parameter(lib.zeros(1)) * 2]})
        with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
            lib.optim.AdamW([])


def test_case22_zero_grad_and_sgd_momentum():
    for lib in LIBS:
        w = lib.nn.Parameter(lib.tensor([1.]))
        untouched = lib.nn.Parameter(lib.tensor([5.]))
        opt = lib.optim.SGD([w, untouched], lr=.1, momentum=.9)
        for _ in range(2):
            w.grad = lib.tensor([1.])
            opt.step()
        assert abs(w.item() - 0.71) < 1e-6 and abs(opt.state[w]["momentum_buffer"].item() - 1.9) < 1e-6
        assert untouched not in opt.state and untouched.item() == 5.
        opt.zero_grad()
        assert w.grad is None
        w.grad = lib.tensor([3.])
        opt.zero_grad(set_to_none=False)
        assert w.grad.tolist() == [0.]


# ---- construction and add_param_group errors --------------------------------------------------------------------
ERRORS = {
    "bare tensor": lambda m: m.optim.SGD(_leaf(m, [1.]), lr=0.1),
    "empty": lambda m: m.optim.SGD([], lr=0.1),
    "group not a dict": lambda m: m.optim.SGD([_leaf(m, [1.])]).add_param_group([_leaf(m, [2.])]),
    "set": lambda m: m.optim.SGD([{"params": {_leaf(m, [1.])}}]),
    "not a tensor": lambda m: m.optim.SGD([_leaf(m, [1.]), 3]),
    "not a tensor in group": lambda m: m.optim.SGD([{"params": ["x"]}]),
    "non-leaf": lambda m: m.optim.Adam([_leaf(m, [1.]) * 2]),
    "shared across groups": lambda m: (lambda p: m.optim.SGD([{"params": [p]}, {"params": p}]))(_leaf(m, [1.])),
    "names missing": lambda m: m.optim.SGD([("a", _leaf(m, [1.])), _leaf(m, [2.])]),
    "named and unnamed groups": lambda m: m.optim.SGD([{"params": [("a", _leaf(m, [1.]))]},
                                                       {"params": [_leaf(m, [2.])]}]),
    "sgd lr": lambda m: m.optim.SGD([_leaf(m, [1.])], lr=-1),
    "sgd momentum": lambda m: m.optim.SGD([_leaf(m, [1.])], momentum=-0.5),
    "sgd weight_decay": lambda m: m.optim.SGD([_leaf(m, [1.])], weight_decay=-1e-3),
    "sgd nesterov": lambda m: m.optim.SGD([_leaf(m, [1.])], momentum=0.9, dampening=0.1, nesterov=True),
    "sgd nesterov no momentum": lambda m: m.optim.SGD([_leaf(m, [1.])], nesterov=True),
    "sgd tensor lr": lambda m: m.optim.SGD([_leaf(m, [1.])], lr=m.tensor([0.1, 0.2])),
    "sgd fused differentiable": lambda m: m.optim.SGD([_leaf(m, [1.])], fused=True, differentiable=True),
    "adam lr": lambda m: m.optim.Adam([_leaf(m, [1.])], lr=-1),
    "adam eps": lambda m: m.optim.Adam([_leaf(m, [1.])], eps=-1.),
    "adam beta0": lambda m: m.optim.Adam([_leaf(m, [1.])], betas=(1.0, 0.9)),
    "adam beta1": lambda m: m.optim.Adam([_leaf(m, [1.])], betas=(0.9, -0.1)),
    "adam int betas": lambda m: m.optim.Adam([_leaf(m, [1.])], betas=(0, 0.9)),
    "adam weight_decay": lambda m: m.optim.Adam([_leaf(m, [1.])], weight_decay=-2),
    "adam foreach tensor lr": lambda m: m.optim.Adam([_leaf(m, [1.])], lr=m.tensor(0.1), foreach=True),
    "adam fused foreach": lambda m: m.optim.Adam([_leaf(m, [1.])], fused=True, foreach=True),
    "adamw lr": lambda m: m.optim.AdamW([_leaf(m, [1.])], lr=-1),
    "rmsprop lr": lambda m: m.optim.RMSprop([_leaf(m, [1.])], lr=-0.5),
    "rmsprop eps": lambda m: m.optim.RMSprop([_leaf(m, [1.])], eps=-1.),
    "rmsprop momentum": lambda m: m.optim.RMSprop([_leaf(m, [1.])], momentum=-1.),
    "rmsprop weight_decay": lambda m: m.optim.RMSprop([_leaf(m, [1.])], weight_decay=-1.),
    "rmsprop alpha": lambda m: m.optim.RMSprop([_leaf(m, [1.])], alpha=-1.),
    "adagrad lr_decay": lambda m: m.optim.Adagrad([_leaf(m, [1.])], lr_decay=-1.),
    "adagrad weight_decay": lambda m: m.optim.Adagrad([_leaf(m, [1.])], weight_decay=-1.),
    "adagrad initial": lambda m: m.optim.Adagrad([_leaf(m, [1.])], initial_accumulator_value=-1.),
    "adagrad eps": lambda m: m.optim.Adagrad([_leaf(m, [1.])], eps=-1.),
    "adagrad tensor lr": lambda m: m.optim.Adagrad([_leaf(m, [1.])], lr=m.ones(2)),
    "adadelta rho": lambda m: m.optim.Adadelta([_leaf(m, [1.])], rho=1.5),
    "adadelta eps": lambda m: m.optim.Adadelta([_leaf(m, [1.])], eps=-1.),
    "adadelta weight_decay": lambda m: m.optim.Adadelta([_leaf(m, [1.])], weight_decay=-1.),
    "adamax beta": lambda m: m.optim.Adamax([_leaf(m, [1.])], betas=(0.9, 1.0)),
    "adamax eps": lambda m: m.optim.Adamax([_leaf(m, [1.])], eps=-1.),
    "adamax weight_decay": lambda m: m.optim.Adamax([_leaf(m, [1.])], weight_decay=-1.),
    "nadam momentum_decay": lambda m: m.optim.NAdam([_leaf(m, [1.])], momentum_decay=-1.),
    "nadam beta": lambda m: m.optim.NAdam([_leaf(m, [1.])], betas=(-0.1, 0.9)),
    "nadam weight_decay": lambda m: m.optim.NAdam([_leaf(m, [1.])], weight_decay=-1.),
    "radam lr": lambda m: m.optim.RAdam([_leaf(m, [1.])], lr=-1e-3),
    "radam eps": lambda m: m.optim.RAdam([_leaf(m, [1.])], eps=-1.),
    "radam beta": lambda m: m.optim.RAdam([_leaf(m, [1.])], betas=(0.9, 1.5)),
    "radam weight_decay": lambda m: m.optim.RAdam([_leaf(m, [1.])], weight_decay=-1.),
}


@pytest.mark.parametrize("name", ERRORS)
def test_error_class_and_message_match_torch(name):
    torch_msg, lantern_msg = raises_like(ERRORS[name])
    assert lantern_msg == torch_msg


def test_required_hyperparameter_and_typename():
    class Needs(lantern.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": lantern.optim.optimizer.required, "beta": 2})

    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Needs([_leaf(lantern, [1.])])
    opt = Needs([{"params": [_leaf(lantern, [1.])], "lr": 3}])
    assert opt.param_groups[0]["beta"] == 2 and repr(lantern.optim.optimizer.required) == "<required parameter>"
    with pytest.raises(NotImplementedError):
        opt.step()


def test_duplicate_params_in_a_group_only_warn():
    for lib in LIBS:
        p = _leaf(lib, [1.])
        with pytest.warns(UserWarning, match="duplicate parameters"):
            lib.optim.SGD([p, p])


def test_empty_group_is_accepted_and_named_parameters():
    for lib in LIBS:
        opt = lib.optim.SGD([_leaf(lib, [1.])])
        opt.add_param_group({"params": []})
        assert opt.param_groups[1]["params"] == []
    t, m = _both(lambda lib: lib.optim.SGD([("w", _leaf(lib, [1.])), ("b", _leaf(lib, [2.]))], lr=0.1))
    assert list(m.param_groups[0]) == list(t.param_groups[0])
    assert m.param_groups[0]["param_names"] == ["w", "b"]
    assert repr(m) == repr(t)
    _same_state_dict(m.state_dict(), t.state_dict())


# ---- zero_grad, step, closure -----------------------------------------------------------------------------------
def test_zero_grad_detaches_a_grad_with_history():
    w = _leaf(lantern, [1., 2.])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference-cycle warning of create_graph=True
        (w * w).sum().backward(create_graph=True)
    assert w.grad.grad_fn is not None
    lantern.optim.SGD([w]).zero_grad(set_to_none=False)
    assert w.grad.grad_fn is None and not w.grad.requires_grad and w.grad.tolist() == [0., 0.]


def test_step_runs_without_grad_and_closure_with_grad():
    for lib in LIBS:
        w = _leaf(lib, [1., 2.])
        opt = lib.optim.SGD([w], lr=0.1)
        seen = []

        def closure():
            seen.append(lib.is_grad_enabled())
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss

        loss = opt.step(closure)
        assert seen == [True] and loss.item() == 5. and lib.is_grad_enabled()
        assert w.tolist() == pytest.approx([0.8, 1.6])


def test_differentiable_step_keeps_the_graph():
    for lib in LIBS:
        w = _leaf(lib, [1., 2.])
        w2 = w.clone()  # a non-leaf is allowed with differentiable=True
        opt = lib.optim.SGD([w2], lr=0.1, differentiable=True)
        w2.grad = lib.ones(2)
        opt.step()
        assert w2.grad_fn is not None and w2.tolist() == pytest.approx([0.9, 1.9])
        (w2 * w2).sum().backward()
        assert w.grad.tolist() == pytest.approx([1.8, 3.8])


# ---- state dicts ------------------------------------------------------------------------------------------------
def _two_group_optimizer(lib, cls="Adam", **kw):
    a, b, c = _leaf(lib, [1., 2.]), _leaf(lib, [[3.], [4.]]), _leaf(lib, [5.])
    opt = getattr(lib.optim, cls)([{"params": [a, b]}, {"params": [c], "lr": 0.5}], **kw)
    for _ in range(2):
        opt.zero_grad()
        ((a * a).sum() + (b ** 3).sum() + (c * a[0]).sum()).backward()
        opt.step()
    return opt, (a, b, c)


ALL = [("Adam", {"amsgrad": True}), ("SGD", {"momentum": 0.9}), ("AdamW", {}),
       ("RMSprop", {"momentum": 0.5, "centered": True}), ("Adagrad", {}), ("Adadelta", {}), ("Adamax", {}),
       ("NAdam", {}), ("RAdam", {})]


@pytest.mark.parametrize("cls,kw", ALL)
def test_state_dict_matches_torch_key_for_key(cls, kw):
    (t_opt, _), (m_opt, _) = _both(lambda lib: _two_group_optimizer(lib, cls, lr=0.1, **kw))
    t_sd, m_sd = t_opt.state_dict(), m_opt.state_dict()
    _same_state_dict(m_sd, t_sd)
    assert [g["params"] for g in m_sd["param_groups"]] == [[0, 1], [2]]


def test_load_state_dict_into_fresh_optimizer_continues_identically():
    ref, (a, b, c) = _two_group_optimizer(lantern, "Adam", lr=0.1)
    sd = copy.deepcopy(ref.state_dict())
    fresh = [_leaf(lantern, a.tolist()), _leaf(lantern, b.tolist()), _leaf(lantern, c.tolist())]
    opt = lantern.optim.Adam([{"params": fresh[:2]}, {"params": fresh[2:]}])
    opt.load_state_dict(sd)
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[0]["params"][0] is fresh[0]
    for o, ps in ((ref, (a, b, c)), (opt, fresh)):
        o.zero_grad()
        ((ps[0] * ps[0]).sum() + (ps[1] ** 3).sum() + (ps[2] * ps[0][0]).sum()).backward()
        o.step()
    for x, y in zip((a, b, c), fresh):
        assert x.tolist() == y.tolist()
    assert opt.state[fresh[0]]["step"].item() == 3.


def test_load_state_dict_casts_floating_state_but_not_step():
    for lib in LIBS:
        p64 = _leaf(lib, [1., 2.], lib.float64)
        opt = lib.optim.Adam([p64])
        p64.grad = lib.ones(2, dtype=lib.float64)
        opt.step()
        p32 = _leaf(lib, [1., 2.])
        opt32 = lib.optim.Adam([p32])
        opt32.load_state_dict(opt.state_dict())
        state = opt32.state[p32]
        assert state["exp_avg"].dtype == lib.float32 and state["step"].dtype == lib.float32
        ints = _leaf(lib, [1., 2.], lib.float64)
        sgd = lib.optim.SGD([ints], momentum=0.5)
        sgd.load_state_dict({"state": {0: {"momentum_buffer": lib.tensor([1, 2]), "extra": [lib.ones(1), 2]}},
                             "param_groups": [dict(sgd.state_dict()["param_groups"][0])]})
        assert sgd.state[ints]["momentum_buffer"].dtype == lib.float64
        assert sgd.state[ints]["extra"][0].dtype == lib.float64 and sgd.state[ints]["extra"][1] == 2


def test_load_state_dict_size_mismatch_and_unknown_keys():
    for lib in LIBS:
        opt = lib.optim.SGD([_leaf(lib, [1.]), _leaf(lib, [2.])])
        small = lib.optim.SGD([_leaf(lib, [1.])])
        with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
            opt.load_state_dict(small.state_dict())
        sd = small.state_dict()
        sd["state"]["note"] = {"x": 1}
        small.load_state_dict(sd)
        assert small.state["note"] == {"x": 1}


def test_load_state_dict_backfills_old_checkpoints():
    for lib in LIBS:
        p = _leaf(lib, [1., 2.])
        opt = lib.optim.Adam([p])
        p.grad = lib.ones(2)
        opt.step()
        sd = opt.state_dict()
        for key in ("amsgrad", "maximize", "foreach", "capturable", "differentiable", "decoupled_weight_decay",
                    "fused"):
            del sd["param_groups"][0][key]
        sd["state"][0]["step"] = 7
        opt.load_state_dict(sd)
        assert opt.param_groups[0]["maximize"] is False and opt.param_groups[0]["fused"] is None
        assert isinstance(opt.state[p]["step"], lib.Tensor) and opt.state[p]["step"].item() == 7.
        w = lib.optim.AdamW([_leaf(lib, [1.])])
        sdw = w.state_dict()
        sdw["param_groups"][0]["decoupled_weight_decay"] = False
        w.load_state_dict(sdw)
        assert w.param_groups[0]["decoupled_weight_decay"] is True


@pytest.mark.parametrize("cls,keys", [("NAdam", ("step", "mu_product")), ("RMSprop", ("step",)),
                                      ("Adagrad", ("step",)), ("RAdam", ("step",))])
def test_numeric_counters_from_old_checkpoints_become_tensors(cls, keys):
    for lib in LIBS:
        p = _leaf(lib, [1., 2.])
        opt = getattr(lib.optim, cls)([p])
        p.grad = lib.ones(2)
        opt.step()
        sd = opt.state_dict()
        for key in keys:
            sd["state"][0][key] = 0.5
        opt.load_state_dict(sd)
        for key in keys:
            value = opt.state[p][key]
            assert isinstance(value, lib.Tensor) and value.item() == 0.5 and value.dtype == lib.float32


def test_lantern_state_dict_has_torch_shape_and_loads_from_torch_values():
    t_opt, _ = _two_group_optimizer(torch, "SGD", lr=0.1, momentum=0.9, nesterov=True)
    m_opt, _ = _two_group_optimizer(lantern, "SGD", lr=0.1, momentum=0.9, nesterov=True)
    t_sd = t_opt.state_dict()
    converted = {"state": {k: {n: lantern.tensor(v.numpy()) for n, v in s.items()} for k, s in t_sd["state"].items()},
                 "param_groups": copy.deepcopy(t_sd["param_groups"])}
    m_opt.load_state_dict(converted)
    _same_state_dict(m_opt.state_dict(), t_sd)


# ---- pickle, repr, hooks ----------------------------------------------------------------------------------------
def test_pickle_round_trip_keeps_state_and_hooks_are_reset():
    opt, (a, b, c) = _two_group_optimizer(lantern, "SGD", lr=0.1, momentum=0.9)
    opt.register_step_pre_hook(lambda *args: None)
    again = pickle.loads(pickle.dumps(opt))
    assert set(again.__getstate__()) == {"defaults", "state", "param_groups"}
    assert len(again._optimizer_step_pre_hooks) == 0
    p0 = again.param_groups[0]["params"][0]
    assert p0.tolist() == a.tolist() and again.state[p0]["momentum_buffer"].tolist() == \
        opt.state[a]["momentum_buffer"].tolist()
    assert repr(again) == repr(opt)


@pytest.mark.parametrize("cls", [c for c, _ in ALL] + ["LBFGS"])
def test_repr_matches_torch(cls):
    def make(lib):
        groups = [{"params": [_leaf(lib, [1.])]}]
        if cls != "LBFGS":
            groups.append({"params": [_leaf(lib, [2.])], "lr": 0.5})
        return getattr(lib.optim, cls)(groups)

    t, m = _both(make)
    assert repr(m) == repr(t)
    _same_state_dict(m.state_dict(), t.state_dict())


def _hook_trace(lib):
    w = _leaf(lib, [1.])
    opt = lib.optim.SGD([w], lr=0.1)
    log = []
    module = torch_optimizer if lib is torch else lantern_optimizer
    handles = [
        module.register_optimizer_step_pre_hook(lambda o, a, k: log.append("gpre")),
        module.register_optimizer_step_post_hook(lambda o, a, k: log.append("gpost")),
        opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", len(a), dict(k)))),
        opt.register_step_post_hook(lambda o, a, k: log.append("post")),
        opt.register_state_dict_pre_hook(lambda o: log.append("sd_pre")),
        opt.register_state_dict_pre_hook(lambda o: log.append("sd_pre_first"), prepend=True),
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1}),
        opt.register_load_state_dict_pre_hook(lambda o, sd: log.append(("load_pre", sorted(sd)))),
        opt.register_load_state_dict_post_hook(lambda o: log.append("load_post")),
    ]
    w.grad = lib.ones(1)
    opt.step(closure=None)
    sd = opt.state_dict()
    opt.load_state_dict(sd)
    for h in handles:
        h.remove()
    opt.step()
    log.append(sorted(opt.state_dict()))
    return log


def test_hooks_order_and_removal_match_torch():
    t, m = _both(_hook_trace)
    assert m == t
    handle = lantern.optim.SGD([_leaf(lantern, [1.])]).register_step_pre_hook(print)
    assert isinstance(handle, lantern.utils.hooks.RemovableHandle)
    assert m[:4] == ["gpre", ("pre", 1, {"closure": None}), "post", "gpost"]


def test_step_pre_hook_can_replace_arguments_or_fail():
    for lib in LIBS:
        w = _leaf(lib, [1.])
        opt = lib.optim.SGD([w], lr=0.1)
        calls = []
        h = opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": lambda: calls.append(1) or 3.}))
        assert opt.step() == 3. and calls == [1]
        h.remove()
        opt.register_step_pre_hook(lambda o, a, k: 5)
        with pytest.raises(RuntimeError, match="must return None or a tuple of"):
            opt.step()



def test_complex_parameters():
    def sgd(lib):
        w = lib.tensor([1 + 2j, -1j], requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        for _ in range(2):
            w.grad = lib.tensor([0.5 - 1j, 2 + 0j])
            opt.step()
        return w.detach()

    t, m = _both(sgd)
    assert_same(m, t)
    w = lantern.tensor([1 + 2j], requires_grad=True)
    w.grad = lantern.tensor([1j])
    for cls in ("Adam", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam"):
        with pytest.raises(NotImplementedError, match="complex parameters"):
            getattr(lantern.optim, cls)([w]).step()
    with pytest.raises(NotImplementedError, match="complex parameters"):
        lantern.optim.Adagrad([w])
