"""The optimizers' named fast paths, `_multi_tensor_sgd` and `_multi_tensor_adam` (AdamW too), give bitwise the
params, state and version counters of their readable `_single_tensor_*` loops over several steps, stay close to
torch, and run only where torch's `foreach` rule (and lantern's documented default) says: never with
foreach=False, never in reference mode.

These tests check the fast paths themselves, so they switch reference mode off for their own duration (the
`fast_paths` fixture); under `LANTERN_REFERENCE=1` they still run and still test the fast paths."""
import importlib

import numpy as np
import pytest
import torch

import lantern
from lantern.core import intra_op
from lantern.optim import adam, sgd

SGD_CASES = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
             dict(lr=0.1, momentum=0.5, dampening=0.25, maximize=True),
             dict(lr=0.05, momentum=0.9, weight_decay=0.1, maximize=True, nesterov=True)]
ADAM_CASES = [("Adam", {}), ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)), ("Adam", dict(maximize=True)),
              ("Adam", dict(lr=0.02, weight_decay=0.3, decoupled_weight_decay=True, amsgrad=True, maximize=True)),
              ("AdamW", dict(lr=0.01)), ("AdamW", dict(betas=(0.3, 0.9), amsgrad=True)),
              ("AdamW", dict(lr=0.01, weight_decay=0.5, maximize=True))]
STEPS = 5


@pytest.fixture
def fast_paths():
    """Reference mode off for this test (it checks the fast paths), whatever the session runs in."""
    with lantern.reference_mode(False):
        yield


def _run(lib, make, dtype, steps=STEPS, shapes=((3, 4), (4,), (2, 1, 3))):
    rng = np.random.default_rng(0)
    params = [lib.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in shapes]
    opt = make(params)
    for _ in range(steps):
        for p in params:
            p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(dtype))
        opt.step()
    return params, opt


def _counting(monkeypatch, module, name):
    """Count the calls of `module.name` (a fast path), still running it."""
    calls = []
    original = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args, **kwargs: (calls.append(1), original(*args, **kwargs))[1])
    return calls


def _same(fast, loop):
    (fp, fo), (lp, lo) = fast, loop
    for a, b in zip(fp, lp):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy()) and a._version == b._version
    for a, b in zip(fo.state.values(), lo.state.values()):
        assert a.keys() == b.keys()
        for key in a:
            assert np.array_equal(a[key].numpy(), b[key].numpy()) and a[key]._version == b[key]._version


@pytest.mark.parametrize("kwargs", SGD_CASES)
def test_multi_tensor_sgd_equals_single_tensor(kwargs, fast_paths, monkeypatch):
    make = lambda lib, foreach: (lambda ps: lib.optim.SGD(ps, foreach=foreach, **kwargs))
    loop = _run(lantern, make(lantern, False), np.float32)
    calls = _counting(monkeypatch, sgd, "_multi_tensor_sgd")
    fast = _run(lantern, make(lantern, None), np.float32)
    assert len(calls) == (STEPS if kwargs.get("momentum", 0) == 0 else STEPS - 1)  # step 1 makes the buffers
    _same(fast, loop)
    theirs = _run(torch, make(torch, None), np.float32)
    for a, b in zip(fast[0], theirs[0]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,kwargs", ADAM_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_multi_tensor_adam_equals_single_tensor(name, kwargs, dtype, fast_paths, monkeypatch):
    make = lambda lib, foreach: (lambda ps: getattr(lib.optim, name)(ps, foreach=foreach, **kwargs))
    loop = _run(lantern, make(lantern, False), dtype)
    calls = _counting(monkeypatch, adam, "_multi_tensor_adam")
    fast = _run(lantern, make(lantern, True), dtype)
    assert len(calls) == STEPS  # step() makes the state before the update, so step 1 takes the fast path too
    _same(fast, loop)
    theirs = _run(torch, make(torch, True), dtype)
    for a, b in zip(fast[0], theirs[0]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert fast[1].state_dict()["state"][0].keys() == theirs[1].state_dict()["state"][0].keys()


@pytest.mark.parametrize("make", [
    lambda ps, foreach: lantern.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=foreach),
    lambda ps, foreach: lantern.optim.AdamW(ps, lr=0.01, amsgrad=True, weight_decay=0.1, foreach=foreach),
    lambda ps, foreach: lantern.optim.Adam(ps, weight_decay=0.1, maximize=True, foreach=foreach)])
def test_multi_tensor_updates_on_the_intra_op_threads_equal_the_loop(make, fast_paths, monkeypatch):
    """Large parameters' updates run by flat ranges on two threads and give the loop's bits."""
    shapes = ((300, 200), (100,), (2, 40000))
    loop = _run(lantern, lambda ps: make(ps, False), np.float32, shapes=shapes)
    before = lantern.get_num_threads()
    lantern.set_num_threads(2)
    try:
        ranges = []
        run = intra_op.run_on_pool
        monkeypatch.setattr(intra_op, "run_on_pool", lambda r, fn: (ranges.append(len(r)), run(r, fn)))
        fast = _run(lantern, lambda ps: make(ps, None), np.float32, shapes=shapes)
    finally:
        lantern.set_num_threads(before)
    assert ranges and set(ranges) == {2}
    _same(fast, loop)


@pytest.mark.parametrize("make", [lambda ps: lantern.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=False),
                                  lambda ps: lantern.optim.Adam(ps, foreach=False),
                                  lambda ps: lantern.optim.AdamW(ps, foreach=False)])
def test_foreach_false_runs_only_the_single_tensor_loop(make, fast_paths, monkeypatch):
    calls = _counting(monkeypatch, sgd, "_multi_tensor_sgd") + _counting(monkeypatch, adam, "_multi_tensor_adam")
    _run(lantern, make, np.float32)
    assert calls == []


def test_reference_mode_runs_only_the_single_tensor_loop(monkeypatch):
    calls = _counting(monkeypatch, sgd, "_multi_tensor_sgd")
    with lantern.reference_mode():
        _run(lantern, lambda ps: lantern.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=True), np.float32)
    assert calls == []


def test_multi_tensor_paths_run_only_where_they_apply(fast_paths):
    w = lantern.tensor([1.0, 2.0], requires_grad=True)
    w.grad = lantern.ones(2)
    opt = lantern.optim.Adam([w])
    group = opt.param_groups[0]
    state = lambda: ([opt.state[w]["exp_avg"]], [opt.state[w]["exp_avg_sq"]], [], [opt.state[w]["step"]])
    hyper = dict(lr=group["lr"], beta1=0.9, beta2=0.999)
    with lantern.no_grad():
        opt.step()  # makes the state
        assert adam._multi_tensor_adam_applies([w], [w.grad], *state(), **hyper)
        assert not adam._multi_tensor_adam_applies([w], [w.grad], *state(), **dict(hyper, lr=lantern.tensor(0.1)))
    assert not adam._multi_tensor_adam_applies([w], [w.grad], *state(), **hyper)  # grad mode on (differentiable)
    half = lantern.tensor([1.0], dtype=lantern.float16, requires_grad=True)
    half.grad = lantern.ones(1, dtype=lantern.float16)
    with lantern.no_grad():
        assert not sgd._multi_tensor_sgd_applies([half], [half.grad], [], 0.1, 0)
        assert not sgd._multi_tensor_sgd_applies([w], [w.grad], [], lantern.tensor(0.1), 0)
        assert not sgd._multi_tensor_sgd_applies([w], [w.grad], [None], 0.1, 0.9)  # no buffer before step 1
        assert sgd._multi_tensor_sgd_applies([w], [w.grad], [lantern.zeros(2)], 0.1, 0.9)


def test_functional_forms_match_torch():
    """lantern.optim.sgd.sgd and adam.adam take torch's functional arguments and give its values."""
    def run(lib):
        sgd, adam = (importlib.import_module(f"{lib.__name__}.optim.{name}") for name in ("sgd", "adam"))
        p = lib.tensor([1.0, -2.0, 3.0])
        bufs = [None]
        sgd.sgd([p], [lib.tensor([0.5, 0.25, -1.0])], bufs, weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.0,
                nesterov=True, maximize=False)
        q, avg, sq, step = lib.tensor([1.0, 2.0]), lib.zeros(2), lib.zeros(2), lib.tensor(0.0)
        adam.adam([q], [lib.tensor([0.3, -0.7])], [avg], [sq], [], [step], amsgrad=False, beta1=0.9, beta2=0.999,
                  lr=0.01, weight_decay=0.0, eps=1e-8, maximize=False)
        return [t.numpy() for t in (p, bufs[0], q, avg, sq, step)]
    for ours, theirs in zip(run(lantern), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_functional_forms_refuse_the_fused_grad_scaler_hand_off():
    p = lantern.tensor([1.0])
    with pytest.raises(NotImplementedError, match="grad_scale and found_inf"):
        sgd.sgd([p], [lantern.tensor([0.5])], [None], grad_scale=lantern.tensor(2.0), weight_decay=0.0, momentum=0.0,
                lr=0.1, dampening=0.0, nesterov=False, maximize=False)
