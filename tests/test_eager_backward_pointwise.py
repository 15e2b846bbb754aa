"""mul's and sum's backward on arrays (their specialisations) and the engine's written-out common paths: the
gradients, and what hooks see on the way, match torch in values, dtypes, shapes and strides; create_graph still runs
the ops."""
import numpy as np
import pytest
import torch

import lantern


def _run(lib, build, arrays, seen):
    """Leaves from arrays, y = build(...), a hook on y recording the gradient it sees, then y.sum().backward()."""
    leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
    y = build(lib, *leaves)
    y.register_hook(lambda g: seen.append((g.detach().numpy().copy(), g.stride(), str(g.dtype).split(".")[-1])))
    y.sum().backward()
    return [(t.grad.numpy(), t.grad.stride(), t.grad.shape) for t in leaves]


_X = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
_Y = np.cos(np.arange(12, dtype=np.float32)).reshape(3, 4)

CASES = {
    "same shape": (lambda lib, a, b: a * b, [_X, _Y]),
    "float64": (lambda lib, a, b: a * b, [_X.astype(np.float64), _Y.astype(np.float64)]),
    "0-d operand": (lambda lib, a, b: a * b, [_X, np.float32(3)]),
    "broadcast row": (lambda lib, a, b: a * b, [_X, _Y[0]]),
    "transposed": (lambda lib, a, b: a.t() * b.t(), [_X, _Y]),
    "python scalar": (lambda lib, a: a * 2.5, [_X]),
    "mixed dtypes": (lambda lib, a, b: a * b, [_X, _Y.astype(np.float64)]),
    "float16": (lambda lib, a, b: a * b, [_X.astype(np.float16), _Y.astype(np.float16)]),
    "same leaf twice": (lambda lib, a: a * a, [_X]),
}


@pytest.mark.parametrize("name", CASES)
def test_gradients_and_hooked_gradient_match_torch(name):
    build, arrays = CASES[name]
    seen_l, seen_t = [], []
    got, want = _run(lantern, build, arrays, seen_l), _run(torch, build, arrays, seen_t)
    for (gv, gs, gshape), (wv, ws, wshape) in zip(got, want):
        assert gv.dtype == wv.dtype and tuple(gshape) == tuple(wshape) and gs == ws
        np.testing.assert_allclose(gv, wv, rtol=1e-6 if gv.dtype != np.float16 else 1e-3)
    # the sum's gradient as y's hook sees it: an expanded 0-d one (strides all 0), as torch's
    assert [(s, d) for _, s, d in seen_l] == [(s, d) for _, s, d in seen_t]
    np.testing.assert_array_equal(seen_l[0][0], seen_t[0][0])


def test_create_graph_runs_the_formulas_as_ops():
    results = []
    for lib in (lantern, torch):
        a = lib.tensor(_X, requires_grad=True)
        b = lib.tensor(_Y, requires_grad=True)
        (ga,) = lib.autograd.grad((a * b).sum(), a, create_graph=True)
        assert ga.requires_grad and ga.grad_fn is not None
        (gb,) = lib.autograd.grad((ga * ga).sum(), b)
        results.append(gb.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_the_step_accumulates_fresh_gradients_as_torch():
    """The benchmark's step, repeated: a fresh .grad each time (the engine keeps the gradient it made), then an
    accumulation into an existing one."""
    for lib in (lantern, torch):
        a = lib.arange(16, dtype=lib.float32).requires_grad_()
        b = lib.ones(16, dtype=lib.float32).requires_grad_()
        for _ in range(3):
            a.grad = b.grad = None
            (a * b).sum().backward()
        first = a.grad
        (a * b).sum().backward()
        assert a.grad is first
        assert a.grad.tolist() == [2.0] * 16 and b.grad.tolist() == [2.0 * i for i in range(16)]


def test_retain_graph_and_freed_graph_errors():
    a = lantern.arange(4, dtype=lantern.float32).requires_grad_()
    b = lantern.ones(4, dtype=lantern.float32).requires_grad_()
    loss = (a * b).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert a.grad.tolist() == [2.0] * 4
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_an_inplace_change_of_a_saved_input_is_still_caught():
    a = lantern.ones(3, requires_grad=True)
    b = lantern.ones(3) * 2
    loss = (a * b).sum()
    b.add_(1)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        loss.backward()


def test_node_hooks_see_the_gradients_and_may_replace_them():
    for lib in (lantern, torch):
        a = lib.ones(3, requires_grad=True)
        b = lib.full((3,), 2.0, requires_grad=True)
        y = a * b
        seen = []
        y.grad_fn.register_hook(lambda gi, go: (seen.append((gi[0].tolist(), go[0].stride())), (gi[0] * 10, None))[1])
        y.sum().backward()
        assert seen == [([2.0, 2.0, 2.0], (0,))]
        assert a.grad.tolist() == [20.0] * 3 and b.grad is None


def test_a_0d_loss_seed_is_a_fresh_one():
    for lib in (lantern, torch):
        x = lib.tensor(3.0, requires_grad=True)
        x.backward()
        assert x.grad.tolist() == 1.0 and x.grad.dtype == lib.float32
        x.grad = None
        y = x * 4
        y.backward()
        assert x.grad.tolist() == 4.0
