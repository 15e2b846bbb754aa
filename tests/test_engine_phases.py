"""The backward engine's phases (GraphTask) and the autograd kernel's: the named fast paths give what the phases
give, the hidden invariants are named helpers that hold (and are refused when they do not), and the callbacks
queued with queue_callback run as in torch.
"""
import numpy as np
import pytest
import torch

import lantern
from lantern.autograd import engine, kernel
from lantern.autograd.graph import InputMeta, Node, gradient_edge
from lantern.core.contiguity import has_cached_contiguous_strides
from lantern.core.reference import SPECIALISATIONS
from lantern.core.tensor_impl import _STRIDES_CACHE, contiguous_strides
from lantern.ops import dispatcher
from lantern.ops.registry import get
from test_autograd_function import both


# ---- the specialisations run where they say, and give what the phases give ----------------------------------------
def _graphs(lib):
    """Backward passes that touch every phase: broadcasting, a gradient sent along two edges, hooks of every kind,
    retain_grad, views and in-place ops, a custom Function, multiple roots, a dead branch, double backward."""
    calls = []
    x = lib.tensor([[1., -2., 3.], [0.5, 4., -1.]], requires_grad=True)
    w = lib.tensor([2., 3., -1.], requires_grad=True)
    b = lib.tensor(0.5, requires_grad=True)
    h = (x * w + b).tanh()
    h.retain_grad()
    h.register_hook(lambda g: calls.append(("h", g.sum().item())))
    u = h * 1
    v = u[:, 1:]
    v.mul_(2)
    y = (v * v).sum() + (u + h).mean() + x.exp().sum()
    y.grad_fn.register_prehook(lambda go: calls.append(("root pre", len(go))))
    y.grad_fn.register_hook(lambda gi, go: calls.append(("root", len(gi))))
    w.register_post_accumulate_grad_hook(lambda p: calls.append(("w acc", p.grad.sum().item())))
    b.register_hook(lambda g: g * 3)
    z = lib.stack([x.sum(0), w]).pow(2).sum()
    lib.autograd.backward([y, z], retain_graph=True)
    y.backward()
    g, = lib.autograd.grad((x * x * w).sum(), x, create_graph=True)
    g.sum().backward()
    return calls, x.grad, w.grad, b.grad, h.grad


def _custom_function_graph(lib):
    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = lib.tensor([1., 2.], requires_grad=True)
    (Twice.apply(x) * Twice.apply(x)).sum().backward()
    return x.grad


@pytest.mark.parametrize("graph", [_graphs, _custom_function_graph])
def test_fused_loop_matches_the_phases(graph, monkeypatch):
    fused_runs = []
    fused = engine._fused_run_ready_nodes
    monkeypatch.setattr(engine, "_fused_run_ready_nodes", lambda task: fused_runs.append(1) or fused(task))
    with lantern.reference_mode(False):  # fast paths on (also in make test's reference tier), checked against torch
        expected = both(graph)
    assert fused_runs, "the plain passes took the fused loop"
    fused_runs.clear()
    with lantern.reference_mode():
        got = graph(lantern)
    assert not fused_runs, "reference mode runs only GraphTask's phases"
    _assert_same(got, expected)


def _assert_same(got, expected):
    if isinstance(got, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e)
    elif isinstance(got, lantern.Tensor):
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    else:
        assert got == expected


_EXPRESSIONS = {
    "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b, "sub_alpha": lambda a, b:
    lantern.sub(a, b, alpha=2) if isinstance(a, lantern.Tensor) else torch.sub(a, b, alpha=2),
    "mul_number": lambda a, b: a * 3, "exp": lambda a, b: a.exp(), "tanh": lambda a, b: a.tanh(),
    "sum": lambda a, b: a.sum(), "sum_dim": lambda a, b: a.sum(1), "mean": lambda a, b: a.mean(),
    "matmul": lambda a, b: a @ b.t(), "transpose": lambda a, b: a.t(), "view": lambda a, b: a.view(6),
    "select": lambda a, b: a[1], "pow": lambda a, b: a.pow(3), "maximum": lambda a, b: a.maximum(b),
    "where": lambda a, b: (a > 0).float() * b, "max": lambda a, b: a.max(1)[0], "cat": lambda a, b:
    (lantern if isinstance(a, lantern.Tensor) else torch).cat([a, b]), "mul_": lambda a, b: (a * 1).mul_(b),
}


def _record_and_differentiate(lib, name):
    a = lib.tensor([[1., -2., 3.], [0.5, 4., -1.5]], requires_grad=True)
    b = lib.tensor([[2., 1., -1.], [3., 0.25, 2.]], requires_grad=True)
    out = _EXPRESSIONS[name](a, b)
    node = out.grad_fn
    edges = [(None if n is None else type(n).__name__, nr) for n, nr in node.next_functions]
    ga, gb = lib.autograd.grad(out.sum(), (a, b), create_graph=True, allow_unused=True)
    first = ga if ga is not None else gb
    second = (lib.autograd.grad(first.pow(2).sum(), (a, b), allow_unused=True) if first.requires_grad else
              "no second order")
    return node.name(), edges, out, ga, gb, second


@pytest.fixture
def fast_calls(monkeypatch):
    """The ops the one-output kernel records, as the dispatcher calls it (it holds the function itself)."""
    calls = []
    fast = kernel._one_output_autograd_kernel
    monkeypatch.setattr(kernel, "_one_output_autograd_kernel",
                        lambda op, args, backend: calls.append(op.name) or fast(op, args, backend))
    dispatcher.set_autograd_kernel(kernel.autograd_entry())
    yield calls
    monkeypatch.undo()
    dispatcher.set_autograd_kernel(kernel.autograd_entry())


@pytest.mark.parametrize("name", sorted(_EXPRESSIONS))
def test_one_output_kernel_matches_the_phases(name, fast_calls):
    with lantern.reference_mode(False):  # fast paths on, also in make test's reference tier
        expected = both(lambda lib: _record_and_differentiate(lib, name))
    with lantern.reference_mode():
        calls_before = len(fast_calls)
        got = _record_and_differentiate(lantern, name)
        assert len(fast_calls) == calls_before, "reference mode records through the phases only"
    _assert_same(got, expected)
    if name in ("add", "mul", "exp", "matmul"):
        assert fast_calls, "a plain op records through the one-output kernel outside reference mode"


def test_one_output_kernel_declines_what_it_does_not_record(monkeypatch):
    fits = kernel._FITS_ONE_OUTPUT_KERNEL
    assert fits[get("mul")] and fits[get("exp")]
    assert not fits[get("mul_")]          # in-place: self's history is rebased
    assert not fits[get("cat")]           # a list of tensors: one edge per element
    assert not fits[get("max.dim")]       # two outputs
    a = lantern.ones(2, requires_grad=True)
    phases = []
    record = kernel.autograd_kernel
    monkeypatch.setattr(kernel, "autograd_kernel", lambda *call: phases.append(call[0].name) or record(*call))
    out = kernel._one_output_autograd_kernel(get("mul"), (a, 3), a._backend)  # a number where mul takes a tensor
    assert phases == ["mul"] and out.grad_fn.name() == "MulBackward0"


def test_the_dispatcher_calls_the_kernel_of_the_mode():
    with lantern.reference_mode():
        assert dispatcher._AUTOGRAD_KERNEL[0] is kernel.autograd_kernel
    with lantern.reference_mode(False):
        assert dispatcher._AUTOGRAD_KERNEL[0] is kernel._one_output_autograd_kernel


def test_specialisations_are_declared_with_their_parity_tests():
    names = {s.name: s for s in SPECIALISATIONS.values()}
    for name in ("_fused_plain_pass", "_one_output_autograd_kernel"):
        spec = names[name]
        path, test = spec.parity_test.split("::")
        assert path == "tests/test_engine_phases.py" and test in globals()


# ---- hidden invariant 1: the in-place add into a gradient buffer -------------------------------------------------
def test_grad_buffer_is_unshared_says_what_it_tests():
    buf = [lantern.ones(3) * 2]
    assert engine._grad_buffer_is_unshared(buf, 0, set())
    someone = buf[0]  # a second reference: a formula, a node or a caller holds it
    assert not engine._grad_buffer_is_unshared(buf, 0, set())
    del someone
    assert engine._grad_buffer_is_unshared(buf, 0, set())
    assert not engine._grad_buffer_is_unshared(buf, 0, {id(buf[0])})  # a hook or the caller has seen it
    buf = [(lantern.ones(2, 3) * 2)[0]]
    assert not engine._grad_buffer_is_unshared(buf, 0, set())  # a view: its memory is another tensor's
    buf = [(lantern.ones(2, 3) * 2).t()]
    assert not engine._grad_buffer_is_unshared(buf, 0, set())


def test_refcount_of_a_slot_only_object_is_measured_not_assumed():
    buf = [object()]
    assert engine._only_the_slot_refers_to(buf, 0)
    extra = buf[0]
    assert not engine._only_the_slot_refers_to(buf, 0)
    del extra


class _Emit(Node):
    """A node that sends grad * value to one leaf and, if `keep`, keeps what it sent (as a saved tensor of a
    retained graph would)."""

    def __init__(self, leaf, value, keep):
        super().__init__((gradient_edge(leaf),))
        self.value, self.keep, self.kept, self.sent_id = value, keep, None, None

    def apply(self, grads):
        out = grads[0] * self.value
        self.sent_id = id(out)
        if self.keep:
            self.kept = out
        return (out,)


def _two_emitters_into_one_leaf(keep):
    x = lantern.zeros(2, requires_grad=True)
    roots = []
    for value in (1., 10.):
        r = lantern.ones(2)
        r._requires_grad, r._grad_fn, r._output_nr = True, _Emit(x, value, keep), 0
        r._grad_fn._input_meta = (InputMeta(r),)
        roots.append(r)
    lantern.autograd.backward(roots, [lantern.ones(2), lantern.ones(2)])
    return x, roots[1].grad_fn  # the node made last runs first: its gradient is the one added into


@pytest.mark.parametrize("reference", [False, True])
def test_in_place_add_only_into_a_gradient_nothing_else_holds(reference):
    with lantern.reference_mode(reference):
        x, first = _two_emitters_into_one_leaf(keep=False)
    assert x.grad.tolist() == [11., 11.]
    assert id(x.grad) == first.sent_id  # nothing else held it: added into in place and kept as .grad

    with lantern.reference_mode(reference):
        x, first = _two_emitters_into_one_leaf(keep=True)
    assert x.grad.tolist() == [11., 11.]
    assert first.kept.tolist() == [10., 10.]  # someone else held it: it is left alone, the sum is a new tensor
    assert x.grad is not first.kept


def test_hooks_see_gradients_the_engine_then_leaves_alone():
    def run(lib):
        seen = []
        x = lib.tensor([1., 2.], requires_grad=True)
        h = x * 1
        h.register_hook(lambda g: seen.append(g))
        (h * 2 + h * 3).sum().backward()
        return [s.tolist() for s in seen], x.grad
    both(run)


# ---- hidden invariant 2: contiguity by the identity of the cached strides tuple ----------------------------------
def test_cached_contiguous_strides_is_a_one_sided_test():
    x = lantern.ones(2, 3) * lantern.arange(3.)
    assert has_cached_contiguous_strides(x) and x.is_contiguous()
    y = x.as_strided((2, 3), (3, 1))
    assert y.stride() == x.stride() and y.is_contiguous()
    assert not has_cached_contiguous_strides(y)  # equal strides, another tuple: False proves nothing
    assert not has_cached_contiguous_strides(x.t())
    np.testing.assert_array_equal((y + y).numpy(), (x + x).numpy())  # the general path gives the same values
    assert (y + y).is_contiguous()


def test_sizes_the_bounded_cache_does_not_hold_read_false(monkeypatch):
    size = (7, 11, 13)
    monkeypatch.setattr("lantern.core.tensor_impl._STRIDES_CACHE", _FullCache(_STRIDES_CACHE))
    monkeypatch.setattr("lantern.core.contiguity._STRIDES_CACHE", _FullCache(_STRIDES_CACHE))
    t = lantern.ones(size) if size not in _STRIDES_CACHE else lantern.ones(size).as_strided(size, (143, 13, 1))
    assert t.is_contiguous() and t.stride() == contiguous_strides(size)
    assert not has_cached_contiguous_strides(t)
    np.testing.assert_array_equal((t * 2).numpy(), np.full(size, 2.))


class _FullCache(dict):
    """A strides cache that is full: it keeps what it had and takes nothing more."""

    def __setitem__(self, key, value):
        pass

    def __len__(self):
        return 1 << 20


# ---- finish: callbacks queued with queue_callback -----------------------------------------------------------------
def test_queue_callback_runs_after_the_leaves_accumulate():
    def run(lib):
        order = []
        x = lib.tensor([1., 2.], requires_grad=True)

        def hook(g):
            lib.autograd.Variable._execution_engine.queue_callback(lambda: order.append(("cb", x.grad.tolist())))
            order.append("hook")
        x.register_hook(hook)
        (x * 2).sum().backward()
        return order
    assert both(run) == ["hook", ("cb", [2., 2.])]


def test_queue_callback_nested_backward_and_callbacks_that_queue_more():
    def run(lib):
        engine_ = lib.autograd.Variable._execution_engine
        order = []
        x = lib.tensor([1., 2.], requires_grad=True)

        def outer(g):
            engine_.queue_callback(lambda: (order.append("outer"),
                                            engine_.queue_callback(lambda: order.append("queued by outer"))))
            z = lib.ones(1, requires_grad=True)
            z.register_hook(lambda g2: engine_.queue_callback(lambda: order.append("inner")))
            with lib.enable_grad():
                (z * 3).sum().backward()
            order.append("inner backward done")
        x.register_hook(outer)
        (x * 2).sum().backward()
        return order
    assert both(run) == ["inner", "inner backward done", "outer", "queued by outer"]


def test_queue_callback_outside_backward_and_after_a_failed_backward():
    def run(lib):
        engine_ = lib.autograd.Variable._execution_engine
        ran, errors = [], []
        x = lib.tensor([1., 2.], requires_grad=True)

        def failing(g):
            engine_.queue_callback(lambda: ran.append("cb"))
            raise ValueError("boom")
        x.register_hook(failing)
        for call in (lambda: (x * 2).sum().backward(), lambda: engine_.queue_callback(lambda: None)):
            try:
                call()
            except (ValueError, RuntimeError) as e:
                errors.append((type(e).__name__, str(e)))
        return ran, errors
    assert both(run) == ([], [("ValueError", "boom"),
                              ("RuntimeError", "Final callbacks can only be installed during backward pass.")])


def test_callbacks_run_in_the_pass_grad_mode():
    def run(lib):
        modes = []
        x = lib.tensor([1., 2.], requires_grad=True)
        x.register_hook(lambda g: lib.autograd.Variable._execution_engine.queue_callback(
            lambda: modes.append(lib.is_grad_enabled())))
        (x * 2).sum().backward()
        lib.autograd.grad((x * x).sum(), x, create_graph=True)
        return modes
    assert both(run) == [False, True]


def test_a_leaf_keeps_a_row_major_gradient_the_quick_test_does_not_recognise():
    from lantern.autograd.accumulate import accumulate_grad
    x = lantern.zeros(2, 3, requires_grad=True)
    g = (lantern.ones(2, 3) * 2).as_strided((2, 3), (3, 1))
    assert not has_cached_contiguous_strides(g)
    with lantern.no_grad():  # as the engine runs it without create_graph
        accumulate_grad(x, g, owned=True)
    assert x.grad is g  # the layout contract, checked in full, holds: kept as it is
    y = lantern.zeros(2, 3, requires_grad=True)
    gt = (lantern.ones(3, 2) * 2).t()
    with lantern.no_grad():
        accumulate_grad(y, gt, owned=True)
    assert y.grad is not gt and y.grad.stride() == (3, 1)  # not laid out like the leaf: copied into its strides
