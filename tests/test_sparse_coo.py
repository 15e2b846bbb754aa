"""The sparse COO layout against torch: construction, parts, conversions, printing, dispatch, errors.

Every case runs the same lambda on torch and lantern (`lib` is either module) and compares what is observable of a
sparse result: layout, size, dtype, nnz, is_coalesced, indices and values (the order of the entries included), the
dense elements, and the grad_fn's name.
"""
import re

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same

INDICES = [[0, 1, 1, 0], [2, 0, 2, 2]]   # (0, 2) twice: uncoalesced
VALUES = [3.0, 4.0, 5.0, 6.0]


def _layout_name(t):
    return str(t.layout).split(".")[-1]


def _node_name(t):
    fn = t.grad_fn
    return None if fn is None else fn.name()


def describe(t):
    """Everything compared of a tensor (sparse or dense), in library-neutral Python values."""
    if t is None:
        return None
    if t.layout in (torch.strided, lantern.strided):
        return {"layout": "strided", "dense": t.detach().tolist(), "dtype": str(t.dtype).split(".")[-1],
                "shape": list(t.shape), "grad_fn": _node_name(t)}
    return {"layout": _layout_name(t), "shape": list(t.shape), "dtype": str(t.dtype).split(".")[-1],
            "nnz": t._nnz(), "coalesced": t.is_coalesced(), "sparse_dim": t.sparse_dim(),
            "dense_dim": t.dense_dim(), "indices": t._indices().tolist(), "values": t._values().detach().tolist(),
            "dense": t.detach().to_dense().tolist(), "grad_fn": _node_name(t)}


def _close(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return (a != a and b != b) or abs(a - b) <= 1e-5 + 1e-5 * abs(b)   # nan matches nan
    return a == b


def same(fn):
    """fn(lib) on both libraries describes the same tensor(s)."""
    ours, theirs = fn(lantern), fn(torch)
    if isinstance(theirs, tuple):
        ours_d, theirs_d = [describe(t) for t in ours], [describe(t) for t in theirs]
    else:
        ours_d, theirs_d = describe(ours), describe(theirs)
    assert _close(ours_d, theirs_d), f"\nlantern: {ours_d}\ntorch:   {theirs_d}"


def raises_same(fn, message=None):
    """torch raises; lantern raises the same class (and a message matching `message` when given)."""
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(theirs.type) as ours:
        fn(lantern)
    if message:
        assert re.search(message, str(ours.value)), str(ours.value)
        assert re.search(message, str(theirs.value)), str(theirs.value)


def coo(lib, indices=INDICES, values=VALUES, size=(2, 3), **kwargs):
    return lib.sparse_coo_tensor(indices, values, size, **kwargs)


# ---- construction -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda m: coo(m),
    lambda m: m.sparse_coo_tensor(INDICES, VALUES),
    lambda m: coo(m, size=(4, 5)),
    lambda m: coo(m, dtype=m.float64),
    lambda m: coo(m, values=[1, 2, 3, 4]),
    lambda m: coo(m, is_coalesced=False),
    lambda m: m.sparse_coo_tensor(m.tensor(INDICES, dtype=m.int32), m.tensor(VALUES)),
    lambda m: m.sparse_coo_tensor(np.array(INDICES, dtype=np.int32), np.ones(4), (2, 3), dtype=m.int64),
    lambda m: m.sparse_coo_tensor([[0, 1, 1]], m.arange(6.).view(3, 2)),               # hybrid: a dense dim
    lambda m: m.sparse_coo_tensor([[1]], [5.0], (3,)),
    lambda m: m.sparse_coo_tensor(m.empty(2, 0, dtype=m.int64), [], (2, 3)),
    lambda m: m.sparse_coo_tensor((2, 3)),
    lambda m: m.sparse_coo_tensor(size=(2, 3), dtype=m.float64),
], ids=["size", "inferred", "larger", "dtype", "ints", "is_coalesced", "int32-indices", "numpy", "hybrid", "1d",
        "empty", "size-only", "size-keyword"])
def test_construction(make):
    same(make)


def test_invariants_are_unchecked_by_default():
    for lib in (torch, lantern):
        s = coo(lib, size=(1, 3))
        assert list(s.shape) == [1, 3] and s._nnz() == 4


@pytest.mark.parametrize("make, message", [
    (lambda m: m.sparse_coo_tensor([0, 1], [1.0, 2.0]), "indices must be sparse_dim x nnz"),
    (lambda m: coo(m, values=VALUES[:3]), "indices and values must have same nnz"),
    (lambda m: coo(m, size=(2, 3, 4)), "len\\(size\\) == sparse_dim \\+ dense_dim"),
    (lambda m: coo(m, size=(1, 3), check_invariants=True), "size is inconsistent with indices"),
    (lambda m: coo(m, indices=[[0, -1, 1, 0], [2, 0, 2, 2]], check_invariants=True), "found negative index -1"),
    (lambda m: m.sparse_coo_tensor([[0, 1]], m.ones(2, 2), (2, 3)), "values has incorrect size"),
])
def test_construction_errors(make, message):
    raises_same(make, message)


def test_sparse_metadata():
    for lib in (torch, lantern):
        s = coo(lib)
        assert s.is_sparse and not s.is_sparse_csr and s.layout is lib.sparse_coo
        assert s.stride() == (0, 0) and s.dim() == 2 and s.numel() == 6
        assert not s.is_coalesced() and s.coalesce().is_coalesced()
    assert not lantern.ones(2).is_sparse and lantern.ones(2).layout is lantern.strided


# ---- conversions and parts ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda m: coo(m).coalesce(),
    lambda m: coo(m).to_dense(),
    lambda m: coo(m).coalesce().indices(),
    lambda m: coo(m).coalesce().values(),
    lambda m: coo(m)._indices(),
    lambda m: coo(m)._values(),
    lambda m: m.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]).to_sparse(),
    lambda m: m.tensor([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0]]).to_sparse(1),
    lambda m: m.tensor([[[0.0, 1.0], [0.0, 0.0]], [[2.0, 0.0], [3.0, 0.0]]]).to_sparse(2),
    lambda m: m.tensor([[0, 7], [1, 0]]).to_sparse(),
    lambda m: m.diag(m.tensor([1.0, 0.0, 2.0])).to_sparse(),
    lambda m: m.ones(2).to_dense(),
    lambda m: coo(m).to_sparse(),
    lambda m: coo(m).to(m.float64),
    lambda m: coo(m).double(),
    lambda m: coo(m).to("cpu"),
    lambda m: coo(m).detach(),
    lambda m: coo(m).clone(),
    lambda m: coo(m).t(),
    lambda m: coo(m).transpose(0, 1),
    lambda m: coo(m).coalesce().sparse_mask(coo(m).coalesce()),
    lambda m: m.arange(6.).view(2, 3).sparse_mask(coo(m).coalesce()),
    lambda m: m.zeros_like(m.sparse_coo_tensor([[0, 1]], m.ones(2, 2), (3, 2))),
    lambda m: m.empty_like(coo(m), dtype=m.float64),
    lambda m: m.zeros_like(m.ones(2, 3), layout=m.sparse_coo),
], ids=["coalesce", "to_dense", "indices", "values", "_indices", "_values", "to_sparse", "to_sparse-1",
        "to_sparse-hybrid", "to_sparse-int", "diag", "dense-to_dense", "sparse-to_sparse", "to-dtype", "double",
        "to-cpu", "detach", "clone", "t", "transpose", "sparse_mask-sparse", "sparse_mask", "zeros_like-hybrid",
        "empty_like", "zeros_like-layout"])
def test_conversions_and_parts(fn):
    same(fn)


@pytest.mark.parametrize("fn, message", [
    (lambda m: coo(m).indices(), "Cannot get indices on an uncoalesced tensor"),
    (lambda m: coo(m).values(), "Cannot get values on an uncoalesced tensor"),
    (lambda m: m.ones(2).is_coalesced(), "is_coalesced expected sparse coordinate tensor layout"),
    (lambda m: m.ones(2)._values(), None),
    (lambda m: coo(m).untyped_storage().nbytes(), "Cannot access storage"),
    (lambda m: coo(m).data_ptr(), "Cannot access data pointer of Tensor that doesn't have storage"),
    (lambda m: coo(m).numpy(), "can't convert Sparse layout tensor to numpy"),
    (lambda m: coo(m).view(6), "with arguments from the 'SparseCPU' backend"),
    (lambda m: coo(m).exp(), "with arguments from the 'SparseCPU' backend"),
    (lambda m: coo(m) + m.ones(2, 3), "add\\(sparse, dense\\) is not supported"),
    (lambda m: m.ones(3) + coo(m), "expected 'self' and 'other' to have same size"),
    (lambda m: coo(m).coalesce().to_sparse(1), "to_sparse: conversion from Sparse to Sparse with sparse_dim"),
])
def test_errors(fn, message):
    raises_same(fn, message)


def test_dense_metadata_of_a_dense_tensor():
    for lib in (torch, lantern):
        t = lib.ones(2, 3)
        assert (t.sparse_dim(), t.dense_dim()) == (0, 2)


# ---- printing -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda m: coo(m),
    lambda m: coo(m, dtype=m.float64),
    lambda m: coo(m, values=[1, 2, 3, 4]),
    lambda m: m.sparse_coo_tensor([[0, 1, 1]], m.ones(3, 2), (2, 2), requires_grad=True),
    lambda m: m.ones(2, 3, requires_grad=True).to_sparse(),
    lambda m: m.sparse_coo_tensor(m.empty(2, 0, dtype=m.int64), [], (2, 3)),
    lambda m: m.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (20000,)),
])
def test_repr_matches_torch(make):
    assert repr(make(lantern)).replace("lantern.", "torch.") == repr(make(torch))


# ---- dispatch -----------------------------------------------------------------------------------------------------

def test_the_dispatch_trace_names_the_layout():
    from lantern.ops import dispatcher, registry
    s = coo(lantern)
    keys = dispatcher.explain_keys(registry.get("add"), (lantern.ones(2, 3), s, 1))
    assert keys == [(lantern.core.dispatch_keys.DispatchKey.SparseCPU, "input 1 has layout sparse_coo")]


def test_a_missing_sparse_kernel_names_the_op_and_the_backend():
    with pytest.raises(NotImplementedError, match="Could not run 'exp' with arguments from the 'SparseCPU' backend"):
        coo(lantern).exp()


# ---- autograd through construction and conversion ----------------------------------------------------------------

def _grads(lib, build):
    values = lib.tensor(VALUES, requires_grad=True)
    weight = lib.arange(6.0).view(2, 3)
    out = build(lib, values)
    (out.to_dense() * weight).sum().backward()
    return out, values.grad


@pytest.mark.parametrize("build", [
    lambda m, v: m.sparse_coo_tensor(INDICES, v, (2, 3)),
    lambda m, v: m.sparse_coo_tensor(INDICES, v, (2, 3)).coalesce(),
    lambda m, v: m.sparse_coo_tensor(INDICES, v, (2, 3)) * 3,
    lambda m, v: -m.sparse_coo_tensor(INDICES, v, (2, 3)).t().t(),
    lambda m, v: m.sparse_coo_tensor(INDICES, v, (2, 3)).double(),
], ids=["constructor", "coalesce", "mul", "neg-t", "to-dtype"])
def test_gradients_reach_the_values(build):
    same(lambda m: _grads(m, build))


def test_to_sparse_and_values_gradients():
    def run(lib):
        x = lib.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]], requires_grad=True)
        s = x.to_sparse()
        (s.values() * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return s, x.grad
    same(run)


def test_a_sparse_leaf_gets_a_sparse_grad():
    def run(lib):
        s = coo(lib).coalesce().requires_grad_()
        (s.to_dense() * lib.arange(6.0).view(2, 3)).sum().backward()
        (s.to_dense() * 2).sum().backward()    # accumulates
        return s.grad
    same(run)
