"""optim.lr_scheduler (lantern/optim/lr_scheduler.py) against torch: every scheduler runs the same schedule for
30 steps on torch.optim.SGD/Adam and lantern.optim.SGD/Adam (two param groups); the lr and momentum (or beta1)
sequences, get_last_lr() and the state_dict contents must equal torch's. Warnings and errors are compared too.
"""
import inspect
import math
import warnings

import pytest
import torch

import lantern

STEPS = 30


def make_optimizer(lib, kind="SGD"):
    params = [lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(3))]
    groups = [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.05}]
    if kind == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib.optim.Adam(groups, lr=0.1, betas=(0.9, 0.99))


def _momentum(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def _plain(value):
    """A state_dict value with functions and partials dropped (they cannot be compared across libraries)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not callable(v)}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def _assert_close(got, expected, path="state"):
    if isinstance(expected, dict):
        assert set(got) == set(expected), f"{path}: keys {sorted(got)} != {sorted(expected)}"
        for k in expected:
            _assert_close(got[k], expected[k], f"{path}.{k}")
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected), f"{path}: {got!r} != {expected!r}"
        for i, (g, e) in enumerate(zip(got, expected)):
            _assert_close(g, e, f"{path}[{i}]")
    elif isinstance(expected, float):
        assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-15) or (got == expected), \
            f"{path}: {got!r} != {expected!r}"
    else:
        assert got == expected, f"{path}: {got!r} != {expected!r}"


def run_schedule(make, kind="SGD", metrics=None, epochs=None, steps=STEPS):
    """The per-step (lrs, momentums, get_last_lr) of make(lr_scheduler, optimizer) in both libraries, plus the final
    state_dict; asserts they agree and returns both libraries' (scheduler, optimizer)."""
    records, built = [], []
    for lib in (torch, lantern):
        opt = make_optimizer(lib, kind)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = make(lib.optim.lr_scheduler, opt)
            trace = [([g["lr"] for g in opt.param_groups], [_momentum(g) for g in opt.param_groups],
                      list(sched.get_last_lr()))]
            for i in range(steps):
                opt.step()
                if metrics is not None:
                    sched.step(metrics[i])
                elif epochs is not None:
                    sched.step(epochs[i])
                else:
                    sched.step()
                trace.append(([g["lr"] for g in opt.param_groups], [_momentum(g) for g in opt.param_groups],
                              list(sched.get_last_lr())))
        records.append((trace, _plain(sched.state_dict()), [_plain(dict(g, params=None)) for g in opt.param_groups]))
        built.append((sched, opt))
    _assert_close(records[1], records[0])
    return built


def _decay(epoch):
    return 0.95 ** epoch


class Warmup:
    """A callable object: LambdaLR saves its __dict__ in state_dict (plain functions are saved as None)."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.steps)


SCHEDULES = {
    "LambdaLR": lambda S, o: S.LambdaLR(o, lambda e: 0.9 ** e),
    "LambdaLR_list": lambda S, o: S.LambdaLR(o, [lambda e: 1.0 / (e + 1), _decay]),
    "LambdaLR_object": lambda S, o: S.LambdaLR(o, [Warmup(4), _decay]),
    "MultiplicativeLR": lambda S, o: S.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 1.02),
    "StepLR": lambda S, o: S.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, milestones=[3, 8, 8, 20], gamma=0.3),
    "ConstantLR": lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=4),
    "LinearLR": lambda S, o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=10),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, gamma=0.9),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o, total_iters=12, power=2.0),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.001),
    "CyclicLR": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4),
    "CyclicLR_triangular2": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5,
                                                    mode="triangular2", base_momentum=[0.7, 0.75]),
    "CyclicLR_exp_range": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4, mode="exp_range", gamma=0.95),
    "CyclicLR_scale_fn": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4, scale_fn=lambda x: 0.9 ** x,
                                                 scale_mode="iterations", cycle_momentum=False),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=STEPS + 1),
    "OneCycleLR_linear": lambda S, o: S.OneCycleLR(o, max_lr=1.0, epochs=4, steps_per_epoch=8, pct_start=0.25,
                                                   anneal_strategy="linear", div_factor=10.0),
    "OneCycleLR_three_phase": lambda S, o: S.OneCycleLR(o, max_lr=0.8, total_steps=STEPS, three_phase=True,
                                                        base_momentum=0.8, max_momentum=[0.9, 0.95]),
    "SequentialLR": lambda S, o: S.SequentialLR(o, [S.ConstantLR(o, 0.5, 3), S.ExponentialLR(o, 0.9),
                                                    S.StepLR(o, 3)], milestones=[5, 12]),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler([S.ConstantLR(o, 0.5, 6), S.ExponentialLR(o, 0.9),
                                                         S.CosineAnnealingLR(o, 10)]),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_matches_torch(name):
    run_schedule(SCHEDULES[name])


# The arguments a scheduler cannot do without (every other one keeps its default in the test below).
REQUIRED = {"T_max": 7, "T_0": 5, "base_lr": 0.01, "max_lr": 0.1, "gamma": 0.9, "lr_lambda": _decay,
            "milestones": [5, 12], "step_size": 4}


def _schedulers_of_torch():
    S = torch.optim.lr_scheduler
    return [name for name, c in vars(S).items() if inspect.isclass(c) and c.__module__ == S.__name__
            and not name.startswith("_") and name != "LRScheduler"
            and (issubclass(c, S.LRScheduler) or c is S.ReduceLROnPlateau)]


def _with_defaults(name):
    """make(S, optimizer) passing only the required arguments (OneCycleLR also needs its length)."""
    def make(S, o):
        params = inspect.signature(getattr(torch.optim.lr_scheduler, name)).parameters
        kwargs = {p: REQUIRED[p] for p, v in params.items() if v.default is inspect.Parameter.empty and p in REQUIRED}
        if name == "OneCycleLR":
            kwargs["total_steps"] = STEPS + 1
        if name in ("SequentialLR", "ChainedScheduler"):
            kwargs["schedulers"] = [S.ConstantLR(o), S.LinearLR(o), S.ExponentialLR(o, 0.9)]
        args = () if name == "ChainedScheduler" else (o,)
        return getattr(S, name)(*args, **kwargs)
    return make


@pytest.mark.parametrize("name", _schedulers_of_torch())
def test_defaults_match_torch(name):
    """Every scheduler with only its required arguments: the same schedule, so the same defaults."""
    torch_params = inspect.signature(getattr(torch.optim.lr_scheduler, name)).parameters
    lantern_params = inspect.signature(getattr(lantern.optim.lr_scheduler, name)).parameters
    assert {p: v.default for p, v in lantern_params.items()} == {p: v.default for p, v in torch_params.items()}
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.9, 0.5, 0.6] * 4 if name == "ReduceLROnPlateau" else None
    run_schedule(_with_defaults(name), metrics=metrics)


@pytest.mark.parametrize("name", ["CyclicLR", "OneCycleLR", "OneCycleLR_three_phase", "StepLR"])
def test_schedule_with_adam_betas_matches_torch(name):
    run_schedule(SCHEDULES[name], kind="Adam")


@pytest.mark.parametrize("kw", [dict(), dict(mode="max", threshold_mode="abs", threshold=0.5, cooldown=2),
                                dict(patience=1, factor=0.5, min_lr=[0.02, 0.001], eps=1e-3),
                                dict(mode="max", patience=0, cooldown=1, min_lr=0.004)], ids=str)
def test_reduce_lr_on_plateau_matches_torch(kw):
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.9, 0.5, 0.6] * 4
    (t, _), (m, _) = run_schedule(lambda S, o: S.ReduceLROnPlateau(o, **kw), metrics=metrics)
    assert m.best == t.best and m.num_bad_epochs == t.num_bad_epochs and m.in_cooldown == t.in_cooldown


def test_closed_form_steps_with_epoch():
    epochs = [0, 3, 4, 10, 7, 20, 21, 2, 15, 30] * 3
    for name in ("StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR", "PolynomialLR",
                 "CosineAnnealingLR", "LambdaLR", "CyclicLR"):
        run_schedule(SCHEDULES[name], epochs=epochs)


def test_warm_restarts_with_fractional_epochs():
    epochs = [i / 3 for i in range(STEPS)] + [4.5, 17.25, 0.5, 40.0]
    for make in (SCHEDULES["CosineAnnealingWarmRestarts"],
                 lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=4)):
        run_schedule(make, epochs=epochs, steps=len(epochs))


def test_state_dict_round_trip_continues_the_schedule():
    for name in ("CosineAnnealingLR", "OneCycleLR", "SequentialLR", "CyclicLR", "LambdaLR_object"):
        sequences = []
        for lib in (torch, lantern):
            opt = make_optimizer(lib)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sched = SCHEDULES[name](lib.optim.lr_scheduler, opt)
                for _ in range(10):
                    opt.step()
                    sched.step()
                state = sched.state_dict()
                assert "optimizer" not in state
                opt2 = make_optimizer(lib)
                opt2.load_state_dict(opt.state_dict())
                resumed = SCHEDULES[name](lib.optim.lr_scheduler, opt2)
                resumed.load_state_dict(state)
                lrs = []
                for _ in range(10):
                    opt2.step()
                    resumed.step()
                    lrs.append(resumed.get_last_lr())
            sequences.append(lrs)
        _assert_close(sequences[1], sequences[0])


def test_base_lrs_and_initial_lr():
    for lib in (torch, lantern):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        assert sched.base_lrs == [0.1, 0.05] and sched.last_epoch == 0 and sched._step_count == 1
        assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
        assert isinstance(sched, lib.optim.lr_scheduler.LRScheduler)
        resumed = lib.optim.lr_scheduler.ExponentialLR(opt, 0.5, last_epoch=4)  # initial_lr present: allowed
        assert resumed.last_epoch == 5 and resumed.base_lrs == [0.1, 0.05]


def _warning_texts(fn):
    texts = []
    for lib in (torch, lantern):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(lib)
        texts.append([(w.category, str(w.message)) for w in caught])
    assert texts[1] == texts[0]
    return texts[0]


def test_warnings_match_torch():
    def scheduler_first(lib):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        sched.step()
        opt.step()
        sched.step()
    assert "before `optimizer.step()`" in _warning_texts(scheduler_first)[0][1]

    def get_lr_outside_step(lib):
        sched = lib.optim.lr_scheduler.ExponentialLR(make_optimizer(lib), 0.5)
        sched.get_lr()
    assert "get_last_lr()" in _warning_texts(get_lr_outside_step)[0][1]

    def overridden_step(lib):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        opt.step = lambda *a: None
        opt.step()
        sched.step()
    assert "has been overridden" in _warning_texts(overridden_step)[0][1]

    def with_epoch(lib):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        opt.step()
        sched.step(3)
        lib.optim.lr_scheduler.ReduceLROnPlateau(opt).step(1.0, 5)
    assert "epoch parameter" in _warning_texts(with_epoch)[0][1]

    def in_order(lib):
        opt = make_optimizer(lib)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=5)
        for _ in range(5):
            opt.step()
            sched.step()
    assert _warning_texts(in_order) == []


def _step_times(scheduler, n):
    for _ in range(n):
        scheduler.step()


ERRORS = [
    lambda S, o: S.StepLR(3, 2),
    lambda S, o: S.StepLR(o, 2, last_epoch=3),
    lambda S, o: S.LambdaLR(o, [lambda e: 1.0]),
    lambda S, o: S.MultiplicativeLR(o, 0.5),
    lambda S, o: S.ConstantLR(o, factor=2.0),
    lambda S, o: S.LinearLR(o, start_factor=0.0),
    lambda S, o: S.LinearLR(o, end_factor=1.5),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=1.5),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2).step(-1),
    lambda S, o: S.CyclicLR(o, 0.1, 1.0, mode="bad"),
    lambda S, o: S.CyclicLR(o, [0.1], 1.0),
    lambda S, o: S.OneCycleLR(o, 1.0),
    lambda S, o: S.OneCycleLR(o, 1.0, total_steps=0),
    lambda S, o: S.OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=0),
    lambda S, o: S.OneCycleLR(o, 1.0, total_steps=5, pct_start=1),
    lambda S, o: S.OneCycleLR(o, 1.0, total_steps=5, anneal_strategy="exp"),
    lambda S, o: _step_times(S.OneCycleLR(o, 1.0, total_steps=2), 3),
    lambda S, o: S.ReduceLROnPlateau(o, factor=1.0),
    lambda S, o: S.ReduceLROnPlateau(o, mode="avg"),
    lambda S, o: S.ReduceLROnPlateau(o, threshold_mode="x"),
    lambda S, o: S.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda S, o: S.SequentialLR(o, [], []),
    lambda S, o: S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(o, 3)], [1, 2]),
    lambda S, o: S.SequentialLR(o, [S.ReduceLROnPlateau(o)], []),
    lambda S, o: S.ChainedScheduler([]),
    lambda S, o: S.ChainedScheduler([S.StepLR(o, 2), 5]),
    lambda S, o: S.LRScheduler(o),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_torch(index):
    messages = []
    for lib in (torch, lantern):
        opt = make_optimizer(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                ERRORS[index](lib.optim.lr_scheduler, opt)
        messages.append((info.type, str(info.value).replace("torch.optim.sgd.SGD", "SGD")))
    assert messages[1] == messages[0]


def test_cycle_momentum_needs_momentum():
    for lib in (torch, lantern):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1)  # defaults hold momentum=0: allowed
        lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1)
        assert opt.param_groups[0]["momentum"] == 0.9 and opt.param_groups[0]["base_momentum"] == 0.8


def test_plateau_after_a_new_param_group():
    messages = []
    for lib in (torch, lantern):
        for min_lr in (0.001, [0.01, 0.02]):
            opt = make_optimizer(lib)
            sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=min_lr)
            opt.add_param_group({"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.5})
            sched.step(1.0)
            try:
                sched.step(2.0)
                messages.append([g["lr"] for g in opt.param_groups])
            except RuntimeError as e:
                messages.append(str(e))
    assert messages[2:] == messages[:2]
    assert messages[0] == [0.010000000000000002, 0.005000000000000001, 0.05] and "differs" in messages[1]
