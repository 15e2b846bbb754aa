"""The backward engine against torch: seeds, retain_graph, create_graph, inputs=, allow_unused, broadcasting,
errors, long chains, freeing of the graph and saved tensors, hooks, requires_grad rules, detach/.data, version
checks, and the node names and graph structure of common ops.
"""
import gc
import warnings
import weakref

import numpy as np
import pytest

import lantern
from lantern.core.allocator import cpu_allocator
from test_autograd_function import both, errors


def leaf(lib, values, dtype=None):
    return lib.tensor(values, dtype=dtype or lib.float32, requires_grad=True)


# ---- spec case 15 and rows 34-39 -------------------------------------------------------------------------------
def test_retain_graph_accumulates_spec_case_15():
    def run(lib):
        a = leaf(lib, [1., 1.])
        c = (a * 2).sum()
        c.backward(retain_graph=True)
        c.backward()
        return a.grad
    assert both(run).tolist() == [4.0, 4.0]


def test_second_backward_raises():
    def run(lib):
        a = leaf(lib, [1., 1.])
        c = (a * a).sum()
        c.backward()
        c.backward()
    t, l = errors(run)
    assert l == t and l.startswith("Trying to backward through the graph a second time (or directly access saved "
                                   "tensors after they have already been freed).")


@pytest.mark.parametrize("expr", ["sum", "view_sum", "add_self", "mul_scalar", "exp"])
def test_second_backward_fails_only_where_tensors_were_saved(expr):
    def run(lib):
        a = leaf(lib, [1., 2.])
        c = {"sum": lambda: a.sum(), "view_sum": lambda: a.view(2, 1).sum(), "add_self": lambda: (a + a).sum(),
             "mul_scalar": lambda: (a * 2).sum(), "exp": lambda: a.exp().sum()}[expr]()
        c.backward()
        try:
            c.backward()
        except RuntimeError as e:
            return "error", str(e)[:40], a.grad
        return "ok", a.grad
    both(run)


def test_backward_with_gradient_spec_case_15():
    def run(lib):
        a = leaf(lib, [1., 1.])
        (a * 2).backward(lib.tensor([0.1, 1.]))
        return a.grad
    np.testing.assert_allclose(both(run).tolist(), [0.2, 2.0], rtol=1e-6)


def test_non_leaf_grad_warns_and_retain_grad_spec_case_15():
    def run(lib):
        w = leaf(lib, [1., 1.])
        h = w * 3
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = h.grad
        msg = str(caught[0].message)
        h.retain_grad()
        h.sum().backward()
        return first is None, msg[:120], h.retains_grad, h.grad, w.grad, h.is_leaf
    got = both(run)
    assert got[1].startswith("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed.")
    assert got[2] is True and got[3].tolist() == [1.0, 1.0]


def test_no_grad_outputs_spec_case_15():
    def run(lib):
        w = leaf(lib, [1., 1.])
        with lib.no_grad():
            y = w * 2
        return y.requires_grad, y.grad_fn is None, y.is_leaf
    assert both(run) == (False, True, True)


def test_leaves_and_requires_grad_propagation_row_34():
    def run(lib):
        a = lib.rand(2)
        b = lib.rand(2, requires_grad=True)
        c = b + 2
        d = a * 3
        return a.is_leaf, b.is_leaf, c.is_leaf, c.requires_grad, d.requires_grad, d.is_leaf, (a + c).requires_grad
    assert both(run) == (True, True, False, True, False, True, True)


def test_variable_is_tensor_row_33():
    def run(lib):
        v = lib.autograd.Variable(lib.ones(2), requires_grad=True)
        return type(v).__name__, v.requires_grad, v.is_leaf, isinstance(v, lib.Tensor)
    both(run)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
def test_requires_grad_on_integer_tensor_raises(dtype):
    t, l = errors(lambda lib: lib.ones(2, dtype=getattr(lib, dtype)).requires_grad_())
    assert l == t == "only Tensors of floating point dtype can require gradients"


def test_requires_grad_flag_on_non_leaf():
    t, l = errors(lambda lib: setattr(leaf(lib, [1.]) * 2, "requires_grad", False))
    assert l == t
    both(lambda lib: (leaf(lib, [1.]) * 2).requires_grad_(True).requires_grad)


def test_requires_grad_false_leaf_and_float_dtypes():
    def run(lib):
        out = []
        for name in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
            out.append(lib.ones(1, dtype=getattr(lib, name)).requires_grad_().requires_grad)
        x = leaf(lib, [1.])
        x.requires_grad_(False)
        return out, x.requires_grad
    both(run)


def test_int_ops_on_grad_tensors_do_not_require_grad():
    def run(lib):
        x = leaf(lib, [1.5, -2.5])
        return ((x > 0).requires_grad, x.argmax().requires_grad, (x > 0).grad_fn is None,
                x.isnan().requires_grad, x.floor_divide(2).requires_grad, x.sign().requires_grad)
    both(run)


# ---- backward / grad: seeds, errors -------------------------------------------------------------------------------
def test_non_scalar_without_gradient_raises_row_36():
    t, l = errors(lambda lib: (leaf(lib, [1., 2.]) * 2).backward())
    assert l == t == "grad can be implicitly created only for scalar outputs"


def test_complex_scalar_without_gradient_raises():
    t, l = errors(lambda lib: (lib.ones(2, dtype=lib.complex64, requires_grad=True) * 1).sum().backward())
    assert l.split(" but got")[0] == t.split(" but got")[0] == "grad can be implicitly created only for real scalar outputs"


def test_gradient_shape_mismatch_message_row_36():
    t, l = errors(lambda lib: (lib.ones(2, 3, requires_grad=True) * 2).backward(lib.ones(3)))
    assert l.replace("lantern.", "torch.") == t == ("Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) "
                                                    "and output[0] has a shape of torch.Size([2, 3]).")


@pytest.mark.parametrize("which", [0, 1])
def test_nothing_requires_grad_raises_row_36(which):
    def run(lib):
        y = (leaf(lib, [1.]) * 2).sum()
        tensors = [lib.ones(()), y] if which == 0 else [y, lib.ones(())]
        lib.autograd.backward(tensors)
    t, l = errors(run)
    assert l == t == f"element {which} of tensors does not require grad and does not have a grad_fn"


def test_backward_on_leaf_itself():
    def run(lib):
        x = leaf(lib, [3.])
        x.backward(lib.tensor([2.]))
        x.sum().backward()
        return x.grad
    both(run)


def test_autograd_backward_with_several_roots_and_seeds():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y1, y2 = x * 2, (x * x).sum()
        lib.autograd.backward([y1, y2], [lib.tensor([1., 10.]), None])
        return x.grad
    both(run)


def test_grad_returns_without_touching_dot_grad():
    def run(lib):
        x = leaf(lib, [1., 2.])
        g, = lib.autograd.grad((x * x).sum(), x)
        return g, x.grad is None, g.requires_grad
    both(run)


def test_grad_with_grad_outputs_and_several_outputs():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = leaf(lib, [3., 4.])
        outs = [x * y, (x + y).sum()]
        return lib.autograd.grad(outs, [x, y], grad_outputs=[lib.tensor([1., -1.]), lib.tensor(2.)])
    both(run)


def test_grad_output_none_is_ones_for_scalars():
    def run(lib):
        x = leaf(lib, [1., 2.])
        return lib.autograd.grad([(x * 3).sum(), (x * x).sum()], x, [None, lib.tensor(2.)])
    both(run)


def test_grad_output_of_other_dtype_is_accepted():
    def run(lib):
        x = leaf(lib, [1., 2.])
        return lib.autograd.grad((x * 2).sum(), x, grad_outputs=lib.tensor(3., dtype=lib.float64))
    both(run)


@pytest.mark.parametrize("case", ["unused", "no_grad_input", "empty_inputs", "not_in_graph", "materialize_false"])
def test_grad_errors(case):
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = (x * 2).sum()
        if case == "unused":
            lib.autograd.grad(y, [x, leaf(lib, [1.])])
        elif case == "no_grad_input":
            lib.autograd.grad(y, [x, lib.ones(2)])
        elif case == "empty_inputs":
            lib.autograd.grad(y, [])
        elif case == "not_in_graph":
            lib.autograd.grad(y, x * 3)
        else:
            lib.autograd.grad(y, [x], allow_unused=False, materialize_grads=True)
    t, l = errors(run)
    assert l == t


def test_allow_unused_and_materialize_grads():
    def run(lib):
        x, z = leaf(lib, [1., 2.]), leaf(lib, [5.])
        g1 = lib.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
        g2 = lib.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
        return g1[0], g1[1] is None, g2
    both(run)


def test_grad_with_respect_to_intermediate():
    def run(lib):
        x = leaf(lib, [1., 2.])
        h = x * x
        y = (h * 3).sum()
        return lib.autograd.grad(y, [h, x])
    both(run)


def test_backward_inputs_restricts_accumulation():
    def run(lib):
        a, b = leaf(lib, [1., 2.]), leaf(lib, [3., 4.])
        m = a * b
        n = (m * 2).sum()
        n.backward(inputs=[a], retain_graph=True)
        first = (a.grad.clone(), b.grad is None)
        n.backward(inputs=[m])
        return first, m.grad, a.grad, b.grad is None
    both(run)


@pytest.mark.parametrize("case", ["empty", "no_grad"])
def test_backward_inputs_errors(case):
    def run(lib):
        y = (leaf(lib, [1., 2.]) * 2).sum()
        y.backward(inputs=[] if case == "empty" else [lib.ones(2)])
    t, l = errors(run)
    assert l == t


def test_broadcast_inputs_get_reduced_gradients():
    def run(lib):
        a = leaf(lib, [[1.], [2.]])            # (2, 1)
        b = leaf(lib, [1., 2., 3.])            # (3,)
        c = lib.tensor(2., requires_grad=True)  # ()
        ((a * b + c) ** 2).sum().backward()
        return a.grad, b.grad, c.grad
    both(run)


def test_broadcast_with_in_place_op():
    def run(lib):
        a = leaf(lib, [[1., 2., 3.], [4., 5., 6.]])
        b = leaf(lib, [1., 2., 3.])
        h = a * 1
        h.mul_(b)
        h.sum().backward()
        return a.grad, b.grad
    both(run)


def test_mixed_dtype_gradients_are_cast_to_input_dtype():
    def run(lib):
        a = leaf(lib, [1., 2.], lib.float32)
        b = leaf(lib, [3., 4.], lib.float64)
        (a * b).sum().backward()
        return a.grad, b.grad
    both(run)


def test_same_tensor_used_many_times_sums_gradients():
    def run(lib):
        x = leaf(lib, [1., 2., 3.])
        y = x * x + x * 3 - x.exp() + x
        y.sum().backward()
        return x.grad
    both(run)


def test_diamond_graph_and_execution_order():
    def run(lib):
        order = []
        x = leaf(lib, [1., 2.])
        a = x * 2
        b = a.exp()
        c = a.sin()
        d = b * c
        for name, t in (("a", a), ("b", b), ("c", c), ("d", d)):
            t.register_hook(lambda g, name=name: order.append(name))
        d.sum().backward()
        return order, x.grad
    both(run)


def test_create_graph_double_and_triple_backward():
    def run(lib):
        x = leaf(lib, [0.5, 1.5], lib.float64)
        y = (x ** 3).sum()
        g1, = lib.autograd.grad(y, x, create_graph=True)
        g2, = lib.autograd.grad(g1.sum(), x, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), x)
        return g1, g2, g3, type(g1.grad_fn).__name__, g1.requires_grad
    got = both(run)
    assert got[2].tolist() == [6.0, 6.0]


def test_backward_create_graph_builds_differentiable_grad():
    def run(lib):
        x = leaf(lib, [0.5, 1.5], lib.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x.sin() * x).sum().backward(create_graph=True)
        g = x.grad
        facts = (g.requires_grad, type(g.grad_fn).__name__)
        gg, = lib.autograd.grad(g.sum(), x)
        return facts, g, gg
    both(run)


def test_double_backward_of_mixed_graph():
    def run(lib):
        x = leaf(lib, [[0.5, -1.0], [2.0, 0.3]], lib.float64)
        w = leaf(lib, [[1.0, 2.0], [3.0, -1.0]], lib.float64)
        y = (x.mm(w).tanh() * x.exp()).sum(1).pow(2).mean()
        gx, gw = lib.autograd.grad(y, (x, w), create_graph=True)
        return lib.autograd.grad((gx * gx).sum() + gw.sum(), (x, w))
    both(run)


def test_double_backward_when_a_formula_keeps_a_gradient_the_engine_sums():
    """Regression: the engine summed two gradients in place into one that a retained double-backward graph still
    held (logsumexp's output feeding an add). PyTorch adds in place only into a gradient nothing else holds."""
    def run(lib):
        e = leaf(lib, [[[0.3, -1.2, 0.8]], [[1.5, 0.1, -0.4]]], lib.float64)
        g, = lib.autograd.grad(((lib.logsumexp(e, [0]) + e.select(0, 1)) ** 2).sum(), e, create_graph=True)
        return lib.autograd.grad((g * g).sum(), e)
    both(run)
    e = lantern.randn(2, 1, 3, dtype=lantern.float64, requires_grad=True)
    assert lantern.autograd.gradgradcheck(lambda e: ((lantern.logsumexp(e, [0]) + e[1]) ** 2).sum(), (e,))


def test_long_chain_of_100k_ops():
    x = lantern.ones(1, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.tolist() == [1.0]


def test_long_chain_with_branches_uses_no_recursion():
    x = lantern.ones(1, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + y * 0.0
    y.backward()
    assert x.grad.tolist() == [1.0]


# ---- freeing -------------------------------------------------------------------------------------------------------
def test_node_dies_with_its_output():
    x = lantern.ones(2, requires_grad=True)
    y = (x * x).sum()
    node = weakref.ref(y.grad_fn)
    inner = weakref.ref(y.grad_fn.next_functions[0][0])
    y.backward()
    assert node() is not None
    del y
    gc.collect()
    assert node() is None and inner() is None


def test_saved_tensors_freed_by_backward():
    x = lantern.ones(3, requires_grad=True)
    h = x.exp()
    y = (h * h).sum()
    saved = weakref.ref(h)
    del h
    assert saved() is not None  # held by MulBackward0
    y.backward()
    gc.collect()
    assert saved() is None
    assert y.grad_fn is not None


def test_saved_tensors_kept_with_retain_graph():
    x = lantern.ones(3, requires_grad=True)
    h = x.exp()
    y = (h * h).sum()
    saved = weakref.ref(h)
    del h
    y.backward(retain_graph=True)
    gc.collect()
    assert saved() is not None
    y.backward()
    gc.collect()
    assert saved() is None


def test_graph_freed_when_output_dropped_without_backward():
    x = lantern.ones(3, requires_grad=True)
    y = (x.exp() * x).sum()
    node = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node() is None


def test_memory_does_not_grow_over_10000_training_steps():
    w = lantern.zeros(4, 3, requires_grad=True)
    b = lantern.zeros(3, requires_grad=True)
    x = lantern.ones(8, 4)
    target = lantern.ones(8, 3)

    def step():
        loss = ((x.mm(w) + b).tanh() - target).pow(2).mean()
        loss.backward()
        with lantern.no_grad():
            w.sub_(w.grad * 0.01)
            b.sub_(b.grad * 0.01)
        w.grad = None
        b.grad = None

    for _ in range(50):
        step()
    gc.collect()
    before = cpu_allocator.stats.allocated_bytes
    for _ in range(10_000):
        step()
    gc.collect()
    assert cpu_allocator.stats.allocated_bytes - before <= 0
    assert gc.collect() == 0  # the graph is freed by reference counting alone: no cycles


# ---- hooks ---------------------------------------------------------------------------------------------------------
def test_tensor_hooks_replace_grad_and_are_removable():
    def run(lib):
        log = []
        x = leaf(lib, [1., 2.])
        h1 = x.register_hook(lambda g: g * 10)
        h2 = x.register_hook(lambda g: log.append(g.tolist()))
        (x * 2).sum().backward()
        first = x.grad.clone()
        h1.remove()
        x.grad = None
        (x * 2).sum().backward()
        h2.remove()
        (x * 2).sum().backward()
        return first, x.grad, log
    both(run)


def test_hooks_on_non_leaf_and_retain_grad_order():
    def run(lib):
        log = []
        x = leaf(lib, [1., 2.])
        h = x * 3
        h.retain_grad()
        h.register_hook(lambda g: log.append(("hook1", g.tolist())) or g * 2)
        h.register_hook(lambda g: log.append(("hook2", g.tolist())))
        (h * h).sum().backward()
        return log, h.grad, x.grad
    both(run)


def test_hook_on_tensor_requiring_no_grad_raises():
    t, l = errors(lambda lib: lib.ones(2).register_hook(lambda g: g))
    assert l == t


def test_node_pre_and_post_hooks():
    def run(lib):
        log = []
        x = leaf(lib, [1., 2.])
        y = x * x
        node = y.grad_fn
        node.register_prehook(lambda gout: log.append(("pre", [g.tolist() for g in gout])))
        node.register_hook(lambda gin, gout: log.append(("post", [g.tolist() for g in gin if g is not None],
                                                        [g.tolist() for g in gout])))
        node.register_hook(lambda gin, gout: (gin[0] * 0 + 7, None))
        y.sum().backward()
        return log, x.grad
    both(run)


def test_node_prehook_replaces_grad_and_handle_removes():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = x * 2
        handle = y.grad_fn.register_prehook(lambda gout: (gout[0] * 100,))
        y.sum().backward(retain_graph=True)
        first = x.grad.clone()
        handle.remove()
        y.sum().backward()
        return first, x.grad
    both(run)


def test_post_accumulate_grad_hook():
    def run(lib):
        log = []
        x = leaf(lib, [1., 2.])
        x.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.tolist()))
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        return log
    assert both(run) == [[2.0, 2.0], [5.0, 5.0]]


def test_post_accumulate_grad_hook_on_non_leaf_raises():
    t, l = errors(lambda lib: (leaf(lib, [1.]) * 2).register_post_accumulate_grad_hook(lambda t: None))
    assert l == t


def test_accumulate_grad_node_hooks():
    def run(lib):
        log = []
        x = leaf(lib, [1., 2.])
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda gout: log.append(("pre", gout[0].tolist())))
        acc.register_hook(lambda gin, gout: log.append(("post", len(gin), gout[0].tolist())))
        y.sum().backward()
        return type(acc).__name__, acc.variable is x, log
    both(run)


# ---- detach, .data, versions, in-place checks --------------------------------------------------------------------
def test_detach_shares_storage_and_version_counter_row_39():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = x * 1
        d = y.detach()
        d.add_(1)
        facts = (d.requires_grad, d.is_leaf, d._version, y._version, d.data_ptr() == y.data_ptr(), y.tolist())
        return facts
    both(run)


def test_dot_data_escapes_version_checks_row_39():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = x * x
        x.data.add_(1)
        facts = (x._version, x.data.requires_grad, x.data.is_leaf)
        y.sum().backward()
        return facts, x.grad
    both(run)


def test_detach_then_in_place_trips_version_check_spec_case_8():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = x * x
        x.detach().add_(1)
        y.sum().backward()
    t, l = errors(run)
    assert l == t


def test_detach_in_place():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = x * 2
        y.detach_()
        return y.requires_grad, y.grad_fn is None, y.is_leaf
    both(run)


def test_detach_in_place_on_view_raises():
    t, l = errors(lambda lib: (leaf(lib, [1., 2.]) * 2).view(2, 1).detach_())
    assert t.startswith(l)


def test_data_setter_swaps_contents():
    def run(lib):
        x = leaf(lib, [1., 2.])
        x.data = lib.tensor([5., 6., 7.])
        (x * x).sum().backward()
        return x.grad, x.requires_grad, x.shape
    both(run)


def test_in_place_on_leaf_raises_row_40():
    t, l = errors(lambda lib: leaf(lib, [1., 2.]).mul_(2))
    assert l == t == "a leaf Variable that requires grad is being used in an in-place operation."


def test_in_place_on_leaf_allowed_under_no_grad():
    def run(lib):
        x = leaf(lib, [1., 2.])
        with lib.no_grad():
            x.mul_(2)
        return x, x._version, x.requires_grad, x.is_leaf
    both(run)


@pytest.mark.parametrize("case", ["input", "output", "view_input", "leaf"])
def test_version_check_message_names_node_shape_versions_row_40(case):
    def run(lib):
        x = leaf(lib, [[1., 2., 3.], [4., 5., 6.]])
        if case == "input":
            h = x * 2
            y = h * h
            h.add_(1)
        elif case == "output":
            h = x * 2
            y = h.sigmoid()
            y.add_(1)
        elif case == "view_input":
            h = x * 2
            v = h[0]
            y = v * v
            h.add_(1)
        else:
            y = x * x
            with lib.no_grad():
                x.add_(1)
        y.sum().backward()
    t, l = errors(run)
    assert l == t


def test_out_variant_with_grad_raises():
    def run(lib):
        x = leaf(lib, [1., 2.])
        lib.exp(x, out=lib.empty(2))
    t, l = errors(run)
    assert l == t


def test_in_place_records_and_rebases_history():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = x * 1
        y.mul_(2)
        y.add_(x)
        y.neg_()
        names = [type(y.grad_fn).__name__, type(y.grad_fn.next_functions[0][0]).__name__]
        y.sum().backward()
        return names, y._version, x.grad
    both(run)


def test_in_place_after_saving_result_raises():
    def run(lib):
        y = leaf(lib, [1., 2.]) * 1
        y.exp_()
        y.mul_(2)
        y.sum().backward()
    t, l = errors(run)
    assert l == t


def test_in_place_into_tensor_not_requiring_grad():
    def run(lib):
        x = leaf(lib, [1., 2.])
        a = lib.zeros(2)
        a.add_(x * 3)
        facts = (a.requires_grad, a.is_leaf, type(a.grad_fn).__name__)
        a.sum().backward()
        return facts, x.grad
    both(run)


def test_saved_self_and_saved_result_row_41():
    def run(lib):
        x = leaf(lib, [1., 2.])
        p = x.pow(2)
        e = x.exp()
        return (p.grad_fn._saved_self is x, p.grad_fn._saved_exponent, e.grad_fn._saved_result is e,
                e.grad_fn._saved_result.tolist() == e.tolist())
    assert both(run) == (True, 2, False, True)


def test_unsaved_tensor_is_none_and_freed_saved_tensor_raises():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = x * lib.ones(2)
        before = y.grad_fn._saved_self, y.grad_fn._saved_other is None
        y.sum().backward()
        return before
    assert both(run)[0] is None
    t, l = errors(lambda lib: (lambda y: (y.sum().backward(), y.grad_fn._saved_self))(leaf(lib, [1.]) * leaf(lib, [2.])))
    assert l == t


def test_calling_a_node_directly():
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = x * 3
        return y.grad_fn(lib.ones(2)), y.grad_fn.name()
    both(run)


# ---- node names and graph structure ------------------------------------------------------------------------------
NAMED = {
    "mul": lambda m, x, y: x * y,
    "mul_scalar": lambda m, x, y: x * 2,
    "add": lambda m, x, y: x + y,
    "sub": lambda m, x, y: x - y,
    "rsub": lambda m, x, y: 1 - x,
    "div": lambda m, x, y: x / y,
    "neg": lambda m, x, y: -x,
    "sum": lambda m, x, y: x.sum(),
    "sum_dim": lambda m, x, y: x.sum(0),
    "mean": lambda m, x, y: x.mean(),
    "mean_dim": lambda m, x, y: x.mean(1),
    "pow_scalar": lambda m, x, y: x ** 2,
    "pow_tensor": lambda m, x, y: x ** y,
    "rpow": lambda m, x, y: 2 ** x,
    "clamp": lambda m, x, y: x.clamp(0, 1),
    "clamp_min": lambda m, x, y: x.clamp(min=0),
    "max": lambda m, x, y: x.max(),
    "max_dim": lambda m, x, y: x.max(0)[0],
    "min_dim": lambda m, x, y: x.min(1)[0],
    "amax": lambda m, x, y: x.amax(0),
    "expand": lambda m, x, y: x[0:1].expand(3, 3),
    "view": lambda m, x, y: x.view(9),
    "reshape_view": lambda m, x, y: x.reshape(9),
    "reshape_copy": lambda m, x, y: x.t().reshape(9),
    "t": lambda m, x, y: x.t(),
    "transpose": lambda m, x, y: x.transpose(0, 1),
    "permute": lambda m, x, y: x.permute(1, 0),
    "select": lambda m, x, y: x[0],
    "slice": lambda m, x, y: x[1:],
    "narrow": lambda m, x, y: x.narrow(0, 1, 2),
    "unsqueeze": lambda m, x, y: x.unsqueeze(0),
    "squeeze": lambda m, x, y: x.unsqueeze(0).squeeze(),
    "squeeze_dim": lambda m, x, y: x.unsqueeze(0).squeeze(0),
    "cat": lambda m, x, y: m.cat([x, y]),
    "stack": lambda m, x, y: m.stack([x, y]),
    "mm": lambda m, x, y: x.mm(y),
    "matmul": lambda m, x, y: x @ y,
    "dot": lambda m, x, y: x[0].dot(y[0]),
    "mv": lambda m, x, y: x.mv(y[0]),
    "to_double": lambda m, x, y: x.to(m.float64),
    "double": lambda m, x, y: x.double(),
    "clone": lambda m, x, y: x.clone(),
    "contiguous": lambda m, x, y: x.t().contiguous(),
    "where": lambda m, x, y: m.where(x > 0, x, y),
    "exp": lambda m, x, y: x.exp(),
    "tanh": lambda m, x, y: x.tanh(),
    "sigmoid": lambda m, x, y: x.sigmoid(),
    "abs": lambda m, x, y: x.abs(),
    "diagonal": lambda m, x, y: x.diagonal(),
    "unfold": lambda m, x, y: x.unfold(0, 2, 1),
    "as_strided": lambda m, x, y: x.as_strided((2, 2), (1, 2)),
    "index": lambda m, x, y: x[m.tensor([0, 2])],
    "maximum": lambda m, x, y: m.maximum(x, y),
    "tril": lambda m, x, y: x.tril(),
    "prod": lambda m, x, y: x.prod(),
    "flatten": lambda m, x, y: x.flatten(),
    "alias_detach": lambda m, x, y: x.detach(),
}


@pytest.mark.parametrize("name", list(NAMED))
def test_node_names_and_edges_match_torch(name):
    fn = NAMED[name]

    def structure(node, depth=0):
        if node is None or depth > 3:
            return None
        return (type(node).__name__, [(structure(n, depth + 1), nr) for n, nr in node.next_functions])

    def run(lib):
        x = lib.tensor([[1., -2., 3.], [4., 5., -6.], [0.5, 2., 1.]], requires_grad=True)
        y = lib.tensor([[2., 1., 0.5], [1., 3., 2.], [1., 1., 1.]], requires_grad=True)
        out = fn(lib, x, y)
        return structure(out.grad_fn)
    both(run)


def test_in_place_node_names():
    def run(lib):
        x = leaf(lib, [1., 2., 3.])
        names = []
        for op in (lambda y: y.add_(1), lambda y: y.mul_(2), lambda y: y.exp_(), lambda y: y.clamp_(0, 1),
                   lambda y: y.copy_(x), lambda y: y.zero_(), lambda y: y.fill_(2.), lambda y: y.neg_(),
                   lambda y: y.eq_(1.), lambda y: y.lt_(x), lambda y: y.pow_(2), lambda y: y.div_(x)):
            y = x * 1
            names.append(type(op(y).grad_fn).__name__)
        return names
    both(run)


def test_gradients_seen_by_hooks_are_not_reused_as_dot_grad():
    def run(lib):
        seen = []
        x = leaf(lib, [1., 2.])
        h = x + 0
        x.register_hook(seen.append)
        h.register_hook(seen.append)
        (h * 2).sum().backward()
        (h * 3).sum().backward()
        return [s.tolist() for s in seen], x.grad
    both(run)


def test_seed_gradient_is_copied_not_kept():
    def run(lib):
        x = leaf(lib, [1., 2.])
        seed = lib.tensor([3., 4.])
        x.backward(seed)
        y = leaf(lib, [1., 2.])
        (y * 1).backward(seed)
        return x.grad is seed, x.grad.data_ptr() == seed.data_ptr(), y.grad is seed
    assert both(run) == (False, False, False)


@pytest.mark.parametrize("where", ["leaf", "non_leaf"])
@pytest.mark.parametrize("change", ["size", "dtype"])
def test_hook_changing_size_or_dtype_raises(where, change):
    def run(lib):
        x = leaf(lib, [1., 2.])
        t = x if where == "leaf" else x * 2
        t.register_hook(lambda g: lib.ones(3) if change == "size" else g.double())
        (t * 2).sum().backward()
    t, l = errors(run)
    assert l.split("'")[0] == t.split("'")[0] and l.split("'")[2] == t.split("'")[2]


def test_grad_of_non_contiguous_dense_leaf_has_its_strides():
    def run(lib):
        x = lib.ones(2, 3).t().detach().requires_grad_()
        y = lib.ones(3, 1, 4)[:, :, ::2].detach().requires_grad_()   # not dense: contiguous grad
        (x * 2).sum().backward()
        (y * 2).sum().backward()
        return x.grad.stride(), y.grad.stride(), x.grad
    both(run)


def test_real_input_of_complex_op_gets_real_gradient():
    def run(lib):
        x = leaf(lib, [1., 2.])
        z = lib.tensor([1 + 1j, 2 - 1j], requires_grad=True)
        (x * z).abs().sum().backward()
        return x.grad, z.grad
    both(run)


def test_in_place_on_detached_view_does_not_touch_base_history():
    def run(lib):
        x = leaf(lib, [1., 2., 3.])
        base = x * 1
        d = base[0:2].detach()
        d.add_(leaf(lib, [5., 5.]))
        return type(d.grad_fn).__name__, type(base.grad_fn).__name__, d._base is None
    both(run)


@pytest.mark.parametrize("case", ["number_seed", "number_in_list", "count_mismatch_backward", "count_mismatch_grad"])
def test_seed_argument_errors(case):
    def run(lib):
        x = leaf(lib, [1., 2.])
        y = (x * 2).sum()
        if case == "number_seed":
            y.backward(2.0)
        elif case == "number_in_list":
            lib.autograd.backward([y], [2.0])
        elif case == "count_mismatch_backward":
            lib.autograd.backward([y, x.sum()], [lib.tensor(1.)])
        else:
            lib.autograd.grad([y, x.sum()], x, [lib.tensor(1.)])
    t, l = errors(run)
    assert l == t
