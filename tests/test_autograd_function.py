"""autograd.Function against torch: the spec's examples (cases 7-14) and the ctx API, each run on both libraries.

Every Function here is built by a maker `make(lib)` so that the same class body runs on torch and on lantern.
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same

LIBS = pytest.mark.parametrize("lib", [torch, lantern], ids=["torch", "lantern"])


def both(fn):
    """fn(lib) on torch and on lantern: the same (nested) results."""
    expected = fn(torch)
    got = fn(lantern)
    assert_same(got, expected)
    return got


def square_function(lib):
    """x * x as an autograd.Function that saves its input (the tests' standard custom op)."""
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * x
    return Square


def errors(fn):
    """fn(lib) raises on both; the same class and the same message."""
    msgs = []
    for lib in (torch, lantern):
        with pytest.raises(Exception) as info:
            fn(lib)
        msgs.append((info.type, str(info.value)))
    assert msgs[0][0] is msgs[1][0], msgs
    return msgs[0][1], msgs[1][1]


def make_exp(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result
    return Exp


def make_linear(lib):
    class LinearFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, bias=None):
            ctx.save_for_backward(input, weight, bias)
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias
    return LinearFunction


# ---- case 7: Exp ----------------------------------------------------------------------------------------------
def test_exp_function_spec_case_7():
    def run(lib):
        x = lib.tensor([0., 1.], requires_grad=True)
        y = make_exp(lib).apply(x)
        y.sum().backward()
        return (x.grad, type(y.grad_fn).__name__, type(y.grad_fn.next_functions[0][0]).__name__, y.is_leaf,
                y.requires_grad)
    got = both(run)
    assert got[1] == "ExpBackward"
    np.testing.assert_allclose(got[0].tolist(), [1.0, 2.7183], atol=1e-4)


def test_exp_function_saved_result_modified_raises():
    def run(lib):
        y = make_exp(lib).apply(lib.tensor([0., 1.], requires_grad=True))
        y.add_(1)
        y.sum().backward()
    t, l = errors(run)
    assert "modified by an inplace operation" in l and "output 0 of Exp," in l and "is at version 1" in l
    assert t == l


def test_function_double_backward_through_differentiable_backward():
    def run(lib):
        x = lib.tensor([0.5, 1.5], requires_grad=True, dtype=lib.float64)
        y = make_exp(lib).apply(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return g, gg
    both(run)


# ---- case 8: saved result modified ----------------------------------------------------------------------------
@pytest.mark.parametrize("modify", ["mul_", "detach_zero_"])
def test_saved_result_modified_spec_case_8(modify):
    def run(lib):
        x = lib.tensor([0., 1.], requires_grad=True)
        z = x.exp()
        if modify == "mul_":
            z.mul_(2)
        else:
            z.detach().zero_()
        z.sum().backward()
    t, l = errors(run)
    assert l == t


# ---- case 9: LinearFunction --------------------------------------------------------------------------------------
def test_linear_function_gradcheck_spec_case_9():
    lin = make_linear(lantern)
    inputs = (lantern.randn(20, 20, dtype=lantern.float64, requires_grad=True),
              lantern.randn(30, 20, dtype=lantern.float64, requires_grad=True))
    assert lantern.autograd.gradcheck(lin.apply, inputs, eps=1e-6, atol=1e-4) is True


def test_linear_function_needs_input_grad():
    def run(lib):
        x = lib.ones(2, 3)
        w = lib.ones(4, 3, requires_grad=True)
        b = lib.ones(4, requires_grad=True)
        out = make_linear(lib).apply(x, w, b)
        out.sum().backward()
        return out.grad_fn.needs_input_grad, w.grad, x.grad is None, b.grad, type(out.grad_fn).__name__
    got = both(run)
    assert got[0] == (False, True, True)
    assert got[1].tolist() == [[2.0] * 3] * 4


def test_linear_function_needs_input_grad_two_args():
    def run(lib):
        out = make_linear(lib).apply(lib.ones(2, 3), lib.ones(4, 3, requires_grad=True))
        return out.grad_fn.needs_input_grad
    assert both(run) == (False, True)


# ---- case 10: mark_non_differentiable ------------------------------------------------------------------------------
def make_sort(lib, log):
    class Sort(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argsort()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            return x[idx], idx

        @staticmethod
        def backward(ctx, g_sorted, g_idx):
            log.append((g_idx.dtype, g_idx.tolist()))
            idx, = ctx.saved_tensors
            g = lib.zeros_like(g_sorted)
            g[idx] = g_sorted
            return g
    return Sort


def make_minmax(lib, log):
    """mark_non_differentiable on a float output (no argsort needed)."""
    class MinMax(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            mn, mx = x.min(), x.max()
            ctx.mark_non_differentiable(mx)
            return mn, mx

        @staticmethod
        def backward(ctx, g_min, g_max):
            log.append(g_max.tolist())
            return g_min.expand(3) * 0 + 1
    return MinMax


def test_mark_non_differentiable_spec_case_10():
    def run(lib):
        log = []
        x = lib.tensor([3., 1., 2.], requires_grad=True)
        mn, mx = make_minmax(lib, log).apply(x)
        flags = (mn.requires_grad, mx.requires_grad, mx.grad_fn is None, mx.is_leaf)
        mn.backward()
        return flags, log, x.grad
    got = both(run)
    assert got[0] == (True, False, True, True)
    assert got[1] == [0.0]  # backward still got a (zero) grad for the non-differentiable output


def test_mark_non_differentiable_sort_example():
    def run(lib):
        log = []
        s, i = make_sort(lib, log).apply(lib.tensor([3., 1., 2.], requires_grad=True))
        s.sum().backward()
        return s.requires_grad, i.requires_grad, log
    assert both(run)[:2] == (True, False)


# ---- case 11: mark_dirty ------------------------------------------------------------------------------------------
def make_mark_dirty(lib):
    class MD(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return MD


def test_mark_dirty_spec_case_11():
    def run(lib):
        leaf = lib.ones(2, requires_grad=True)
        cl = leaf.clone()
        out = make_mark_dirty(lib).apply(cl)
        facts = (out is cl, cl._version, type(out.grad_fn).__name__,
                 [type(n).__name__ for n, _ in out.grad_fn.next_functions], out.tolist())
        out.sum().backward()
        return facts, leaf.grad
    got = both(run)
    assert got[0][:3] == (True, 2, "MDBackward")


def test_mark_dirty_on_leaf_raises():
    t, l = errors(lambda lib: make_mark_dirty(lib).apply(lib.ones(2, requires_grad=True)))
    assert l == t == "a leaf Variable that requires grad has been used in an in-place operation."


def test_mark_dirty_on_view_rebases_base():
    def run(lib):
        leaf = lib.ones(4, requires_grad=True)
        base = leaf * 1
        out = make_mark_dirty(lib).apply(base.narrow(0, 1, 2))
        base.sum().backward()
        return leaf.grad, type(base.grad_fn).__name__, out.tolist(), base.tolist()
    both(run)


# ---- case 12: set_materialize_grads / setup_context -------------------------------------------------------------
def make_two_clones(lib, log):
    class TwoClones(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            log.append(g2 is None)
            grad = g1.clone() if g1 is not None else None
            if g2 is not None:
                grad = grad + g2 if grad is not None else g2.clone()
            return grad
    return TwoClones


def test_set_materialize_grads_spec_case_12():
    def run(lib):
        log = []
        x = lib.ones(2, requires_grad=True)
        m1, m2 = make_two_clones(lib, log).apply(x)
        m1.sum().backward()
        return log, x.grad
    got = both(run)
    assert got[0] == [True] and got[1].tolist() == [1.0, 1.0]


def test_materialized_grads_are_zeros_by_default():
    def run(lib):
        log = []

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                log.append(g2)
                return g1 * 2 + g2 * 3
        x = lib.ones(2, requires_grad=True)
        Two.apply(x)[0].sum().backward()
        return log, x.grad
    both(run)


def make_mul_constant(lib):
    class MulConstant(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, k = inputs
            ctx.k = k

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k, None
    return MulConstant


def test_setup_context_spec_case_12():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        y = make_mul_constant(lib).apply(x, 3)
        y.sum().backward()
        return x.grad, y.grad_fn.k, type(y.grad_fn).__name__
    assert both(run)[0].tolist() == [3.0, 3.0]


# ---- case 13: wrong number of grads ------------------------------------------------------------------------------
def test_wrong_number_of_grads_spec_case_13():
    def run(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x + y

            @staticmethod
            def backward(ctx, g):
                return g
        Bad.apply(lib.ones(2, requires_grad=True), lib.ones(2)).sum().backward()
    t, l = errors(run)
    assert l == t == "function BadBackward returned an incorrect number of gradients (expected 2, got 1)"


def test_extra_trailing_none_grads_allowed():
    def run(lib):
        class Extra(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2, None, None
        x = lib.ones(2, requires_grad=True)
        Extra.apply(x).sum().backward()
        return x.grad
    both(run)


def test_grad_for_non_tensor_input_raises():
    def run(lib):
        class NonTensor(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g, g
        NonTensor.apply(lib.ones(2, requires_grad=True), 2.0).sum().backward()
    t, l = errors(run)
    assert l == t


# ---- case 14: once_differentiable --------------------------------------------------------------------------------
def make_once(lib):
    class F2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * x
    return F2


def test_once_differentiable_spec_case_14():
    def run(lib):
        x = lib.ones(1, requires_grad=True)
        gg, = lib.autograd.grad(make_once(lib).apply(x), x, grad_outputs=lib.ones(1, requires_grad=True),
                                create_graph=True)
        facts = (gg.requires_grad, type(gg.grad_fn).__name__, [type(n).__name__ for n, _ in gg.grad_fn.next_functions])
        return facts, gg

    assert both(run)[0] == (True, "Error", ["AccumulateGrad"])

    def run_twice(lib):
        gg = run(lib)[1]
        gg.sum().backward()
    t, l = errors(run_twice)
    assert l == t == "trying to differentiate twice a function that was marked with @once_differentiable"


def test_once_differentiable_first_order_works():
    def run(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        make_once(lib).apply(x).sum().backward()
        return x.grad
    both(run)


def test_once_differentiable_without_grad_requiring_inputs_gives_plain_tensor():
    def run(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        g, = lib.autograd.grad(make_once(lib).apply(x).sum(), x, create_graph=True)
        return g.requires_grad, g
    both(run)


# ---- the rest of the Function protocol ----------------------------------------------------------------------------
def test_returning_an_input_unchanged_gives_a_new_tensor():
    def run(lib):
        class Id(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3
        a = lib.ones(2, requires_grad=True)
        b = Id.apply(a)
        facts = (b is a, type(b.grad_fn).__name__, b._base is a, b.data_ptr() == a.data_ptr())
        b.sum().backward()
        return facts, a.grad
    both(run)


def test_non_tensor_outputs_and_arguments():
    def run(lib):
        log = []

        class Tw(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k, name):
                ctx.k = k
                return x * k, name, 5

            @staticmethod
            def backward(ctx, g, g_name, g_int):
                log.append((g_name, g_int))
                return g * ctx.k, None, None
        x = lib.ones(2, requires_grad=True)
        y, name, five = Tw.apply(x, 3, "n")
        y.sum().backward()
        return name, five, log, x.grad, [type(n).__name__ for n, _ in y.grad_fn.next_functions]
    assert both(run)[2] == [(None, None)]


def test_tensors_nested_in_lists_are_not_tracked():
    def run(lib):
        class Nested(lib.autograd.Function):
            @staticmethod
            def forward(ctx, xs, y):
                return xs[0] * y

            @staticmethod
            def backward(ctx, g):
                return None, g
        a = lib.ones(2, requires_grad=True)
        y = lib.ones(2, requires_grad=True)
        out = Nested.apply([a], y)
        out.sum().backward()
        return a.grad is None, y.grad, out.grad_fn.needs_input_grad
    both(run)


def test_inside_forward_nothing_is_recorded():
    def run(lib):
        log = []

        class Probe(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                log.append((y.requires_grad, lib.is_grad_enabled()))
                return y

            @staticmethod
            def backward(ctx, g):
                log.append(lib.is_grad_enabled())
                return g
        x = lib.ones(2, requires_grad=True)
        Probe.apply(x).sum().backward()
        return log
    assert both(run) == [(False, False), False]


def test_no_graph_when_no_input_requires_grad():
    def run(lib):
        y = make_exp(lib).apply(lib.tensor([0., 1.]))
        return y.requires_grad, y.grad_fn is None
    assert both(run) == (False, True)


def test_no_graph_under_no_grad():
    def run(lib):
        with lib.no_grad():
            y = make_exp(lib).apply(lib.tensor([0., 1.], requires_grad=True))
        return y.requires_grad, y.grad_fn is None
    assert both(run) == (False, True)


def test_save_for_backward_accepts_none_and_rejects_other_types():
    def run(lib):
        seen = []

        class SV(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                seen.append(ctx.saved_tensors)
                return g
        x = lib.ones(2, requires_grad=True)
        SV.apply(x).sum().backward()
        return seen[0][0] is x, seen[0][1]
    assert both(run) == (True, None)

    def bad(lib):
        class SV2(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(3)
                return x * 2
        SV2.apply(lib.ones(2, requires_grad=True))
    t, l = errors(bad)
    assert l == t


def test_saved_tensors_freed_after_backward():
    def run(lib):
        y = make_exp(lib).apply(lib.tensor([0., 1.], requires_grad=True))
        y.sum().backward()
        y.grad_fn.saved_tensors
    t, l = errors(run)
    assert l == t and l.startswith("Trying to backward through the graph a second time")


def test_saved_input_modified_in_place_raises():
    def run(lib):
        Square = square_function(lib)
        x = lib.ones(2, requires_grad=True)
        h = x * 1
        y = Square.apply(h)
        h.add_(1)
        y.sum().backward()
    t, l = errors(run)
    assert l == t


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_legacy_instance_call_raises():
    def run(lib):
        class Legacy(lib.autograd.Function):
            def forward(self, x):
                return x
        Legacy()(lib.ones(1))
    t, l = errors(run)
    assert l == t and l.startswith("Legacy autograd function with non-static forward method is deprecated")


def test_function_node_in_engine_ordering_with_multiple_uses():
    def run(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        e = make_exp(lib).apply(x * 2)
        out = (e * x + e.sum()).sum()
        out.backward()
        return x.grad
    both(run)


def test_function_ctx_attributes_are_visible_on_grad_fn():
    def run(lib):
        y = make_mul_constant(lib).apply(lib.ones(2, requires_grad=True), 4)
        return y.grad_fn.k, y.grad_fn.name() if hasattr(y.grad_fn, "name") else None
    both(run)


def test_gradcheck_and_gradgradcheck_on_a_function():
    x = lantern.tensor([0.3, -0.7, 1.1], dtype=lantern.float64, requires_grad=True)
    assert lantern.autograd.gradcheck(make_exp(lantern).apply, (x,))
    assert lantern.autograd.gradgradcheck(make_exp(lantern).apply, (x,))
