"""Views and in-place ops under autograd, against torch: CopySlices on the base, AsStridedBackward0 on the view,
stale views regenerating their grad_fn, chains of in-place ops on views, and the errors.
"""
import pytest

from test_autograd_function import both, errors


def names(t):
    node = t.grad_fn
    return type(node).__name__, [type(n).__name__ if n is not None else None for n, _ in node.next_functions]


def leaf(lib, n=4, dtype=None):
    return lib.arange(1., n + 1, dtype=dtype or lib.float32).requires_grad_()


def test_in_place_on_slice_of_non_leaf_issue_example():
    def run(lib):
        x = lib.ones(4, requires_grad=True)
        y = x * 1
        y[1:3].mul_(10)
        facts = names(y)
        y.sum().backward()
        return facts, x.grad
    got = both(run)
    assert got[0][0] == "CopySlices" and got[1].tolist() == [1, 10, 10, 1]


@pytest.mark.parametrize("make_view", ["narrow", "select", "slice_step", "diagonal", "t_row", "view", "unsqueeze",
                                       "as_strided", "transpose_col"])
def test_in_place_through_each_view_kind(make_view):
    def run(lib):
        x = leaf(lib, 6)
        y = x * 1
        m = y.view(2, 3)
        v = {"narrow": lambda: y.narrow(0, 1, 3), "select": lambda: y[2], "slice_step": lambda: y[::2],
             "diagonal": lambda: m[:, :2].diagonal(), "t_row": lambda: m.t()[1], "view": lambda: y.view(3, 2),
             "unsqueeze": lambda: y.unsqueeze(0), "as_strided": lambda: y.as_strided((2, 2), (1, 3), 1),
             "transpose_col": lambda: m.transpose(0, 1)[:, 1]}[make_view]()
        v.mul_(x[0] * 3)
        facts = names(y), names(v), v.tolist(), y.tolist()
        (y * lib.arange(6.)).sum().backward()
        return facts, x.grad
    both(run)


def test_view_grad_fn_after_in_place_is_as_strided():
    def run(lib):
        x = leaf(lib)
        y = x * 2
        v = y.narrow(0, 1, 2)
        before = names(v)
        v.add_(1)
        return before, names(v), names(y), v.is_leaf, v._version, y._version
    both(run)


def test_other_views_of_modified_base_see_new_history():
    def run(lib):
        x = leaf(lib)
        y = x * 1
        a = y[0:2]          # overlaps the modified region
        b = y[2:]           # does not
        y[1:3].mul_(10)
        facts = names(a), names(b)
        (a.sum() + 2 * b.sum()).backward()
        return facts, x.grad
    both(run)


def test_views_see_in_place_op_on_their_base():
    def run(lib):
        x = leaf(lib)
        y = x * 1
        v = y.view(2, 2)
        y.mul_(x)
        facts = names(v), v.tolist()
        v.sum().backward()
        return facts, x.grad
    both(run)


def test_view_of_view_in_place():
    def run(lib):
        x = leaf(lib, 6)
        y = x * 1
        y.view(2, 3)[1].narrow(0, 0, 2).mul_(5)
        facts = names(y)
        y.pow(2).sum().backward()
        return facts, x.grad
    both(run)


def test_chain_of_in_place_ops_on_views():
    def run(lib):
        x = leaf(lib, 6)
        w = lib.tensor([2., 3.], requires_grad=True)
        y = x * 1
        y[0].add_(1)
        y[1:3].mul_(w)
        y.view(2, 3)[:, 2].sub_(x[:2])
        y[4:].sin_()
        y.neg_()
        facts = names(y)
        (y * y).sum().backward()
        return facts, x.grad, w.grad
    both(run)


def test_in_place_on_view_of_base_not_requiring_grad():
    def run(lib):
        x = leaf(lib, 2)
        base = lib.zeros(4)
        base[1:3].copy_(x * 3)
        facts = base.requires_grad, names(base)
        (base * lib.arange(4.)).sum().backward()
        return facts, x.grad
    both(run)


def test_setitem_with_slice_records_copy_slices():
    def run(lib):
        x = leaf(lib)
        y = x * 1
        y[1:3] = x[:2] * 2
        facts = names(y)
        y.sum().backward()
        return facts, x.grad
    both(run)


def test_in_place_on_view_of_leaf_raises():
    t, l = errors(lambda lib: leaf(lib)[1:3].mul_(2))
    assert l == t == "a view of a leaf Variable that requires grad is being used in an in-place operation."


def test_in_place_on_view_of_leaf_allowed_under_no_grad():
    def run(lib):
        x = leaf(lib)
        with lib.no_grad():
            x[1:3].mul_(2)
        (x * x).sum().backward()
        return x.grad, x._version
    both(run)


def test_in_place_on_detached_view_changes_base_values_only():
    def run(lib):
        x = leaf(lib)
        y = x * 2
        y.detach()[0:2].zero_()
        return y.tolist(), names(y), y._version
    both(run)


def test_double_backward_through_copy_slices():
    def run(lib):
        x = leaf(lib, dtype=lib.float64)
        y = x * x
        y[1:3].mul_(x[:2])
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.pow(2).sum(), x)
        return g, gg
    both(run)


def test_saved_view_modified_through_base_raises():
    def run(lib):
        x = leaf(lib)
        y = x * 1
        v = y[0:2]
        z = v * v
        y.add_(1)
        z.sum().backward()
    t, l = errors(run)
    assert l == t


def test_saved_base_modified_through_view_raises():
    def run(lib):
        x = leaf(lib)
        y = x * 1
        z = y * y
        y[0:2].add_(1)
        z.sum().backward()
    t, l = errors(run)
    assert l == t


def test_in_place_on_expanded_view_raises():
    def run(lib):
        x = leaf(lib, 3)
        (x * 1).expand(2, 3).add_(1)
    t, l = errors(run)
    assert type(t) is type(l)


def test_multiple_in_place_ops_on_the_same_view():
    def run(lib):
        x = leaf(lib)
        y = x * 1
        v = y[1:3]
        v.mul_(2)
        v.add_(x[:2])
        v.mul_(3)
        facts = names(y), names(v)
        y.sum().backward()
        return facts, x.grad
    both(run)


def test_base_in_place_then_view_in_place():
    def run(lib):
        x = leaf(lib)
        y = x * 1
        v = y[::2]
        y.mul_(2)
        v.mul_(x[:2])
        facts = names(y), names(v)
        (y * lib.arange(4.)).sum().backward()
        return facts, x.grad
    both(run)


def test_in_place_on_view_with_dtype_promotion_in_op():
    def run(lib):
        x = leaf(lib, dtype=lib.float64)
        w = lib.tensor([2., 3.], requires_grad=True)
        y = x * 1
        y[1:3].mul_(w)
        y.sum().backward()
        return x.grad, w.grad
    both(run)


def test_version_counters_shared_between_base_and_views():
    def run(lib):
        x = leaf(lib)
        y = x * 1
        v = y[1:3]
        d = v.detach()
        v.mul_(2)
        d.add_(1)
        return y._version, v._version, d._version, y.tolist()
    both(run)
