"""The optimizers' array fast path (lantern/optim/_foreach.py) gives bitwise the results, state and version counters
of their per-parameter loop, and stays close to torch."""
import numpy as np
import pytest
import torch

import lantern
from lantern.optim import _foreach, adam, sgd

SGD_CASES = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
             dict(lr=0.1, momentum=0.5, dampening=0.25, maximize=True)]
ADAM_CASES = [("Adam", {}), ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)), ("Adam", dict(maximize=True)),
              ("AdamW", dict(lr=0.01)), ("AdamW", dict(betas=(0.3, 0.9), amsgrad=True))]


def _run(lib, make, steps, dtype):
    rng = np.random.default_rng(0)
    params = [lib.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in ((3, 4), (4,), (2, 1, 3))]
    opt = make(params)
    for _ in range(steps):
        for p in params:
            p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(dtype))
        opt.step()
    return params, opt


def _loop_only(monkeypatch):
    monkeypatch.setattr(sgd, "sgd_group", lambda opt, group: False)
    monkeypatch.setattr(adam, "adam_group", lambda opt, group: False)


def _same(fast, loop):
    (fp, fo), (lp, lo) = fast, loop
    for a, b in zip(fp, lp):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy()) and a._version == b._version
    for a, b in zip(fo.state.values(), lo.state.values()):
        assert a.keys() == b.keys()
        for key in a:
            assert np.array_equal(a[key].numpy(), b[key].numpy()) and a[key]._version == b[key]._version


@pytest.mark.parametrize("kwargs", SGD_CASES)
def test_sgd_fast_path_equals_loop_and_matches_torch(kwargs, monkeypatch):
    make = lambda lib: (lambda ps: lib.optim.SGD(ps, **kwargs))
    fast = _run(lantern, make(lantern), 4, np.float32)
    theirs = _run(torch, make(torch), 4, np.float32)
    for a, b in zip(fast[0], theirs[0]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    _loop_only(monkeypatch)
    _same(fast, _run(lantern, make(lantern), 4, np.float32))


@pytest.mark.parametrize("name,kwargs", ADAM_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_fast_path_equals_loop_and_matches_torch(name, kwargs, dtype, monkeypatch):
    make = lambda lib: (lambda ps: getattr(lib.optim, name)(ps, **kwargs))
    fast = _run(lantern, make(lantern), 4, dtype)
    theirs = _run(torch, make(torch), 4, dtype)
    for a, b in zip(fast[0], theirs[0]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert fast[1].state_dict()["state"][0].keys() == theirs[1].state_dict()["state"][0].keys()
    _loop_only(monkeypatch)
    _same(fast, _run(lantern, make(lantern), 4, dtype))


def test_fast_path_runs_only_where_it_applies():
    w = lantern.tensor([1.0, 2.0], requires_grad=True)
    opt = lantern.optim.Adam([w])
    w.grad = lantern.ones(2)
    with lantern.no_grad():
        assert not _foreach.adam_group(opt, opt.param_groups[0])  # no state yet: the loop makes it
        opt.step()
        assert _foreach.adam_group(opt, opt.param_groups[0])
    assert not _foreach.adam_group(opt, opt.param_groups[0])  # grad mode on (differentiable steps)
    half = lantern.tensor([1.0], dtype=lantern.float16, requires_grad=True)
    half.grad = lantern.ones(1, dtype=lantern.float16)
    opt = lantern.optim.SGD([half], lr=0.1)
    with lantern.no_grad():
        assert not _foreach.sgd_group(opt, opt.param_groups[0])
    opt = lantern.optim.SGD([w], lr=lantern.tensor(0.1))
    with lantern.no_grad():
        assert not _foreach.sgd_group(opt, opt.param_groups[0])
