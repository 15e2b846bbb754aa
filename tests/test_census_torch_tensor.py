"""Tensor methods of the census (tools/census.py): the in-place view methods (t_, transpose_, squeeze_, ...), the
predicates, the element-by-element Python maps, fill_diagonal_, as_subclass, module_load and the legacy methods,
compared with torch: values, geometry, version counters, autograd and errors."""
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import check, noncontig, raises_like

rng = np.random.default_rng(1)

# (method, arguments, shape of the input)
INPLACE_VIEWS = [
    ("t_", (), (3, 4)), ("t_", (), (5,)), ("transpose_", (0, 2), (2, 3, 4)), ("swapaxes_", (-1, 0), (2, 3)),
    ("swapdims_", (1, 0), (2, 3)), ("squeeze_", (), (1, 3, 1)), ("squeeze_", (2,), (2, 3, 1)),
    ("squeeze_", ((0, 2),), (1, 3, 1)), ("unsqueeze_", (1,), (2, 3)), ("unsqueeze_", (-1,), (2, 3)),
    ("as_strided_", ((2, 2), (1, 2), 1), (3, 4)),
]


def _ids(cases):
    return [f"{name}{args}" for name, args, _ in cases]


def test_every_inplace_view_method_is_covered():
    torch_methods = {n for n in dir(torch.Tensor) if n.endswith("_") and not n.startswith("_")
                     and n[:-1] in dir(torch.Tensor) and n[:-1] in {"t", "transpose", "swapaxes", "swapdims",
                                                                    "squeeze", "unsqueeze", "as_strided"}}
    assert torch_methods == {name for name, _, _ in INPLACE_VIEWS}


@pytest.mark.parametrize("name,args,shape", INPLACE_VIEWS, ids=_ids(INPLACE_VIEWS))
def test_inplace_view_takes_the_views_geometry(name, args, shape):
    def run(lib, x):
        result = getattr(x, name)(*args)
        return result, x.shape, x.stride(), x.storage_offset(), x._version
    check(run, noncontig(rng.standard_normal(shape)))


@pytest.mark.parametrize("name,args,shape", INPLACE_VIEWS, ids=_ids(INPLACE_VIEWS))
def test_inplace_view_under_autograd(name, args, shape):
    def non_leaf(lib, x):
        leaf = x.clone().requires_grad_()
        y = leaf * 2
        getattr(y, name)(*args)
        (y * lib.arange(y.numel(), dtype=y.dtype).view(y.shape)).sum().backward()
        return leaf.grad, y.requires_grad, y.is_leaf

    def view_of_non_leaf(lib, x):
        leaf = x.clone().requires_grad_()
        base = leaf * 2
        v = base[:]
        getattr(v, name)(*args)
        (v * lib.arange(v.numel(), dtype=v.dtype).view(v.shape)).sum().backward()
        return leaf.grad, v._base is base

    x = noncontig(rng.standard_normal(shape))
    check(non_leaf, x)
    check(view_of_non_leaf, x)
    raises_like(lambda lib, x: getattr(x.requires_grad_(), name)(*args), x)
    check(lambda lib, x: _under_no_grad(lib, x.requires_grad_(), name, args), x)


def _under_no_grad(lib, leaf, name, args):
    with lib.no_grad():
        getattr(leaf, name)(*args)
    return leaf.shape, leaf._version, leaf.requires_grad, leaf.grad_fn is None


def test_inplace_view_errors_and_inference_tensors():
    x = np.zeros((2, 3, 4))
    raises_like(lambda lib, x: x.t_(), x)
    raises_like(lambda lib, x: x.squeeze_(5), x)
    raises_like(lambda lib, x: x.transpose_(0, 3), x)
    raises_like(lambda lib, x: x.unsqueeze_(4), x)
    for lib in (torch, lantern):
        with lib.inference_mode():
            made = lib.zeros(2, 3)
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
            made.t_()
        with lib.inference_mode():
            assert lib.zeros(2, 3).t_().shape == (3, 2)


def test_a_saved_tensor_moved_by_an_inplace_view_is_refused():
    def run(lib, x):
        leaf = x.clone().requires_grad_()
        y = leaf * 1
        z = y * y
        y.t_()
        z.sum().backward()
    raises_like(run, rng.standard_normal((2, 3)))


def test_predicates():
    x = noncontig(rng.standard_normal((2, 3)))
    check(lambda lib, x: (x.is_same_size(x + 1), x.is_same_size(x.t()), x.is_distributed(),
                          x.is_set_to(x), x.is_set_to(x[:]), x.is_set_to(x.clone()), x.is_set_to(x[1:]),
                          x.const_data_ptr() == x.data_ptr(), x[1].const_data_ptr() - x.data_ptr()), x)
    check(lambda lib: (lib.empty(0).is_set_to(lib.empty(0)), lib.tensor([3]).is_nonzero(),
                       lib.tensor(0.0).is_nonzero(), lib.tensor([[True]]).is_nonzero()))
    raises_like(lambda lib: lib.tensor([1, 2]).is_nonzero())
    raises_like(lambda lib: lib.tensor([]).is_nonzero())


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int16", "bool", "complex128", "float16"])
def test_apply_map_map2(dtype):
    values = noncontig(rng.uniform(-3, 3, (2, 3)))

    def run(lib, x):
        x = x.to(getattr(lib, dtype))
        other = (x * 0 + 1).to(x.dtype)
        x.apply_(lambda v: v * 1.7 if not isinstance(v, bool) else not v)
        x.map_(other[0], lambda a, b: a + b)
        x.map2_(other, other, lambda a, b, c: a * b - c)
        return x, x._version
    check(run, values)


def test_apply_map_errors():
    x = rng.standard_normal(3)
    raises_like(lambda lib, x: x.requires_grad_().apply_(lambda v: v), x)
    raises_like(lambda lib, x: x.apply_(lambda v: "text"), x)
    raises_like(lambda lib, x: x.apply_(3), x)
    raises_like(lambda lib, x: x.map_(x.long(), lambda a, b: a), x)
    raises_like(lambda lib, x: x.map_(lib.ones(2), lambda a, b: a), x)
    raises_like(lambda lib, x: x.map2_(x, x.int(), lambda a, b, c: a), x)


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((5, 3), True), ((5, 3), False), ((4, 3), True),
                                        ((11, 3), True), ((2, 5), True), ((3, 3, 3), False), ((1, 1), True)])
def test_fill_diagonal(shape, wrap):
    check(lambda lib, x: (x.fill_diagonal_(2.5, wrap=wrap), x._version), noncontig(np.zeros(shape)))
    check(lambda lib, x: x.long().fill_diagonal_(2.7, wrap), np.zeros(shape))


def test_fill_diagonal_transposed_autograd_and_errors():
    check(lambda lib, x: x.t().fill_diagonal_(1, wrap=True), np.zeros((3, 7)))

    def grad(lib, x):
        leaf = x.requires_grad_()
        y = leaf * 1
        y.fill_diagonal_(2.0)
        y.sum().backward()
        return leaf.grad, y
    check(grad, rng.standard_normal((3, 3)))
    raises_like(lambda lib, x: x.fill_diagonal_(1), np.zeros(3))
    raises_like(lambda lib, x: x.fill_diagonal_(1), np.zeros((2, 3, 3)))


def test_as_subclass():
    def run(lib, x):
        cls = type("Mine", (lib.Tensor,), {})
        leaf = x.requires_grad_()
        y = leaf * 3
        s = y.as_subclass(cls)
        (s * 2).sum().backward()
        return type(s).__name__, s.grad_fn.name(), s._base is y, leaf.grad
    check(run, rng.standard_normal(3))
    raises_like(lambda lib: lib.ones(2).as_subclass(int))


def test_module_load():
    def run(lib, a, b):
        a.requires_grad_()
        assigned = a.module_load(b, assign=True)
        with lib.no_grad():
            copied = a.module_load(b)
        return assigned, copied, assigned is b, copied is a, a
    check(run, rng.standard_normal(3), rng.standard_normal(3))


def test_new():
    x = noncontig(rng.standard_normal((2, 3)).astype(np.float32))
    check(lambda lib, x: (x.new(2, 3).shape, x.new([1, 2]), x.new((2, 3)), x.new().shape, x.new(lib.Size([2])).shape,
                          x.int().new([1.7, 2]), x.new(x).dtype), x)
    raises_like(lambda lib, x: x.new(x.long()), x)
    raises_like(lambda lib, x: x.new("ab"), x)
    raises_like(lambda lib, x: x.new(2.5), x)


def test_resize_and_resize_as():
    def run(lib, x):
        leaf = x.requires_grad_()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = (leaf * 2).resize(3, 2)
            s = (leaf * 2).resize_as(lib.ones(6))
        (r.sum() + s.sum()).backward()
        return r, s, leaf.grad, [str(w.message) for w in caught]
    check(run, noncontig(rng.standard_normal((2, 3))))
    raises_like(lambda lib, x: x.resize(4), np.zeros((2, 3)))


def test_volatile_and_reinforce():
    def run(lib, x):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = x.volatile
            x.volatile = True
        return value, x.volatile, [str(w.message) for w in caught]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(run, np.zeros(2))
    raises_like(lambda lib: lib.ones(2).reinforce(1))


def _coo(lib):
    return lib.sparse_coo_tensor(lib.tensor([[0, 1], [2, 0]]), lib.tensor([3.0, 4.0]), (2, 3))


def test_sparse_resize():
    def describe(s):
        return (tuple(s.shape), s.sparse_dim(), s.dense_dim(), s._indices(), s._values(), s.is_coalesced(),
                s._version, s.to_dense())

    def run(lib):
        grown = _coo(lib)
        same = grown.sparse_resize_((4, 5), 2, 0)
        cleared = _coo(lib)
        cleared.sparse_resize_and_clear_((2, 3, 4), 1, 2)
        empty = lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.int64), lib.zeros(0), (2, 3))
        empty.sparse_resize_((5, 2), 1, 1)
        return same is grown, describe(grown), describe(cleared), describe(empty)
    check(run)


@pytest.mark.parametrize("size,sparse_dim,dense_dim", [((1, 5), 2, 0), ((4, 5, 2), 2, 1), ((4, 5, 2), 3, 0),
                                                       ((4,), 1, 0), ((4, 5), 1, 0)])
def test_sparse_resize_errors(size, sparse_dim, dense_dim):
    raises_like(lambda lib: _coo(lib).sparse_resize_(size, sparse_dim, dense_dim))


def test_sparse_resize_of_a_dense_tensor():
    raises_like(lambda lib: lib.ones(2).sparse_resize_((3,), 1, 0))
    raises_like(lambda lib: lib.ones(2).sparse_resize_and_clear_((3,), 1, 0))
