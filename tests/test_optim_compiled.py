"""The optimizers' compiled updates (numba kernels in lantern/optim/_updates_numba.py) give bitwise the NumPy
updates of their multi-tensor paths (`_sgd_arrays`), special values included, and the optimizers take them where
they apply, at 1 and 2 threads."""
import itertools

import numpy as np
import pytest

import lantern
from lantern.optim import _foreach, adam, sgd

pytest.importorskip("numba")

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e38, 3e38, 1.5, -2.25]


def _arrays(dtype, n=257, seed=0):
    """param, grad, buf: random values with the special ones spread over them."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(n).astype(dtype) for _ in range(3)]
    for k, a in enumerate(arrays):
        a[rng.choice(n, len(SPECIAL), replace=False)] = np.array(SPECIAL, dtype)[np.roll(np.arange(len(SPECIAL)), k)]
    return arrays


SGD_HYPER = [dict(momentum=m, dampening=d, lr=lr, weight_decay=wd, nesterov=n, maximize=False)
             for (m, d), lr, wd, n in itertools.product([(0.9, 0), (0.5, 0.25), (1, 0)], [0.1, 1e-3], [0, 0.01],
                                                        [False, True])]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("hyper", SGD_HYPER)
def test_compiled_sgd_equals_numpy_update(hyper, dtype):
    kernels = _foreach.compiled_kernels(_arrays(dtype))
    ours, theirs = _arrays(dtype), _arrays(dtype)
    for _ in range(3):
        sgd._sgd_compiled(kernels, *ours, **hyper)
        sgd._sgd_arrays(np, *theirs, **hyper)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_compiled_kernels_take_only_contiguous_numpy_arrays():
    a = np.zeros((4, 4), np.float32)
    assert _foreach.compiled_kernels([a, a]) is not None
    assert _foreach.compiled_kernels([a, a.T]) is None
    assert _foreach.compiled_kernels([a, a[:, ::2]]) is None
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert not sgd._compiled_sgd_applies(f32, 1e-50, False)  # rounds to 0 in float32
    assert sgd._compiled_sgd_applies(f64, 1e-50, False) and sgd._compiled_sgd_applies(f32, 0, False)
    assert not sgd._compiled_sgd_applies(f32, 0, True)


def _train(make, threads, shapes, transposed=False, state="momentum_buffer"):
    rng = np.random.default_rng(1)
    params = [lantern.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in shapes]
    if transposed:
        params = [lantern.tensor(p.detach().numpy().T.copy()).t().requires_grad_() for p in params]
    opt = make(params)
    before = lantern.get_num_threads()
    lantern.set_num_threads(threads)
    try:
        for _ in range(4):
            for p in params:
                p.grad = lantern.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
            opt.step()
    finally:
        lantern.set_num_threads(before)
    return [p.detach().numpy() for p in params] + [s[state].numpy() for s in opt.state.values()]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("transposed", [False, True])
def test_sgd_takes_the_compiled_update_and_gives_the_loops_bits(threads, transposed, monkeypatch):
    """Momentum SGD's multi-tensor path runs the kernel (by flat ranges on two threads) on contiguous params, the
    NumPy update on transposed ones (the 1-D one stays contiguous), and both give the single-tensor loop's bits."""
    shapes = ((300, 200), (100,), (2, 40000))
    make = lambda foreach: (lambda ps: lantern.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01,
                                                         foreach=foreach))
    calls, compiled = [], sgd._sgd_compiled
    monkeypatch.setattr(sgd, "_sgd_compiled", lambda *a, **k: (calls.append(a[1].size), compiled(*a, **k))[1])
    with lantern.reference_mode(False):
        loop = _train(make(False), 1, shapes, transposed)
        assert calls == []
        fast = _train(make(None), threads, shapes, transposed)
    assert sum(calls) == 3 * (100 if transposed else 60000 + 100 + 80000)  # step 1 makes the buffers
    assert (len(calls) > 3 * len(shapes)) == (threads == 2 and not transposed)  # large params split in ranges
    for a, b in zip(fast, loop):
        assert np.array_equal(a, b)


ADAM_HYPER = [dict(beta1=b1, beta2=b2, weight_decay=wd, eps=1e-8, maximize=False, decoupled_weight_decay=dec,
                   step_size=0.01, decay=1 - 0.01 * wd, bias_correction2_sqrt=0.3)
              for (b1, b2), wd, dec in itertools.product([(0.9, 0.999), (0.3, 0.9)], [0, 0.1], [False, True])]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("hyper", ADAM_HYPER)
def test_compiled_adam_equals_numpy_update(hyper, dtype):
    """The kernel with every lerp branch and weight decay mode, special values in params, grads and moments (the
    second moment made non-negative, as Adam keeps it)."""
    kernels = _foreach.compiled_kernels(_arrays(dtype))
    ours, theirs = ([*arrays, np.abs(arrays[0] + 1)] for arrays in (_arrays(dtype), _arrays(dtype)))
    for _ in range(3):
        adam._adam_compiled(kernels, *ours, **hyper)
        adam._adam_arrays(np, *theirs, **hyper)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name,kwargs", [("Adam", {}), ("AdamW", dict(lr=0.01)),
                                         ("Adam", dict(weight_decay=0.1, betas=(0.3, 0.9)))])
def test_adam_takes_the_compiled_update_and_gives_the_loops_bits(name, kwargs, threads, monkeypatch):
    shapes = ((300, 200), (100,), (2, 40000))
    make = lambda foreach: (lambda ps: getattr(lantern.optim, name)(ps, foreach=foreach, **kwargs))
    calls, compiled = [], adam._adam_compiled
    monkeypatch.setattr(adam, "_adam_compiled", lambda *a, **k: (calls.append(a[1].size), compiled(*a, **k))[1])
    with lantern.reference_mode(False):
        loop = _train(make(False), 1, shapes, state="exp_avg_sq")
        assert calls == []
        fast = _train(make(None), threads, shapes, state="exp_avg_sq")
    assert sum(calls) == 4 * (60000 + 100 + 80000)
    assert (len(calls) > 4 * len(shapes)) == (threads == 2)
    for a, b in zip(fast, loop):
        assert np.array_equal(a, b)
