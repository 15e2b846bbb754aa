"""The short paths small calls take (issue 8's per-call overhead) behave exactly as the general ones, against torch:
the dispatcher's generated entries, a pointwise op with a fully broadcast operand, `loss.backward()` straight to the
engine, the engine's leaf accumulation, ready order and shared gradients, and the int-list fast path of bindings.
"""
import pytest
import torch

import lantern
from lantern.ops import binding, dispatcher, registry
from test_autograd_function import both, errors


def test_generated_entry_is_the_dispatcher_call():
    op = registry.get("mul")
    x = lantern.tensor([1., 2., 3.])
    assert dispatcher.entry(op) is op.scan
    assert dispatcher.entry(op)((x, x)).tolist() == dispatcher.call(op, (x, x)).tolist() == [1., 4., 9.]
    assert "(op.scan or entry(op))((input, other, alpha))" in binding.binding_source("add")


def test_entry_falls_back_to_the_general_scan_for_mixed_and_missing_tensors():
    def run(lib):
        cpu0d = lib.tensor(2.)
        meta = lib.ones(3, device="meta")
        return [tuple((meta * cpu0d).shape), str((meta * cpu0d).device), (lib.tensor([1., 2.]) * 3).tolist()]
    assert both(run) == [(3,), "meta", [3., 6.]]
    _, lantern_msg = errors(lambda lib: lib.ones(3, device="meta") * lib.ones(3))  # a RuntimeError in both
    assert lantern_msg.startswith("Expected all tensors to be on the same device, but found at least two devices")


@pytest.mark.parametrize("make", [
    lambda lib: (lib.tensor(3.).expand(2, 3), lib.arange(6.).view(2, 3)),
    lambda lib: (lib.tensor(3.).expand(3, 2), lib.arange(6.).view(2, 3).t()),
    lambda lib: (lib.tensor(3.).expand(2, 3), lib.tensor(2.).expand(2, 3)),
])
def test_fully_broadcast_operand_keeps_the_other_operands_layout(make):
    def run(lib):
        a, b = make(lib)
        out = a * b
        return out.stride(), out.tolist(), (a + b).stride()
    both(run)


def test_backward_fast_path_seeds_checks_and_frees_like_torch():
    def run(lib):
        a = lib.tensor([1., 2.], requires_grad=True)
        b = lib.tensor([3., 4.], requires_grad=True)
        y = (a * b).sum()
        y.backward(retain_graph=True)
        y.backward()
        return a.grad.tolist(), b.grad.tolist()
    assert both(run) == ([6., 8.], [2., 4.])

    def twice(lib):
        y = (lib.ones(2, requires_grad=True) * 2).sum()
        y.backward()
        y.backward()
    torch_msg, lantern_msg = errors(twice)
    assert lantern_msg == torch_msg
    torch_msg, lantern_msg = errors(lambda lib: (lib.ones(2, requires_grad=True) * 2).backward())
    assert lantern_msg == torch_msg == "grad can be implicitly created only for scalar outputs"
    torch_msg, lantern_msg = errors(lambda lib: lib.ones(()).backward())
    assert lantern_msg == torch_msg


def test_leaf_gets_the_engines_gradient_only_when_no_one_else_holds_it():
    def run(lib):
        a = lib.ones(3, requires_grad=True)
        (a * lib.tensor([1., 2., 3.])).sum().backward()
        first = a.grad
        (a * 2).sum().backward()   # accumulates in place into the same tensor
        seen = []
        b = lib.ones(3, requires_grad=True)
        b.register_hook(lambda g: seen.append(g))
        (b * 3).sum().backward()
        return first is a.grad, a.grad.tolist(), seen[0] is b.grad, b.grad.tolist()
    assert both(run) == (True, [3., 4., 5.], False, [3., 3., 3.])


def test_one_gradient_on_two_edges_is_not_kept_by_either_leaf():
    def run(lib):
        a = lib.tensor([1., 2.], requires_grad=True)
        b = lib.tensor([3., 4.], requires_grad=True)
        (a + b).sum().backward()   # AddBackward0 sends one gradient object to both leaves
        a.grad.mul_(10)
        return a.grad.tolist(), b.grad.tolist(), a.grad.data_ptr() != b.grad.data_ptr()
    assert both(run) == ([10., 10.], [1., 1.], True)


def test_nodes_run_latest_first_when_both_are_ready():
    def run(lib):
        order = []
        x = lib.ones(2, requires_grad=True)
        early = x * 2
        late = x * 3
        early.grad_fn.register_hook(lambda gi, go: order.append("early"))
        late.grad_fn.register_hook(lambda gi, go: order.append("late"))
        (early + late).sum().backward()
        return order, x.grad.tolist()
    assert both(run) == (["late", "early"], [5., 5.])


def test_int_list_fast_path_and_its_errors():
    x = lantern.arange(6.)
    assert binding._int_list((2, 3)) == (2, 3) and binding._int_list(((2, 3),)) == (2, 3)
    assert x.view(2, 3).shape == x.view((2, 3)).shape == x.view(lantern.Size([2, 3])).shape == (2, 3)
    assert x.expand(2, 6).stride() == (0, 1)
    for bad in ((2.0, 3), (True, 6)):  # a TypeError in both
        _, lantern_msg = errors(lambda lib: lib.arange(6.).view(*bad))
        assert f"must be tuple of ints, but found element of type {type(bad[0]).__name__} at pos 0" in lantern_msg


def test_dtype_flags_are_plain_attributes():
    for name in ("float32", "float64", "complex64", "int64", "bool", "bfloat16"):
        assert getattr(lantern, name).is_floating_point == getattr(torch, name).is_floating_point
        assert getattr(lantern, name).is_complex == getattr(torch, name).is_complex
