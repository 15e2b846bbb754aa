"""The CSR layout against torch: construction, conversions to and from dense and COO, parts, products, printing,
errors and gradients."""
import numpy as np
import pytest
import torch

import lantern
from test_sparse_coo import raises_same, same

CROW, COL, VALUES = [0, 1, 3], [2, 0, 2], [3.0, 4.0, 5.0]
DENSE = [[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]
MATRIX = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def csr(lib, **kwargs):
    return lib.sparse_csr_tensor(CROW, COL, VALUES, (2, 3), **kwargs)


def describe(t):
    if t is None or t.layout in (torch.strided, lantern.strided):
        return None if t is None else {"layout": "strided", "dense": t.detach().tolist(), "dtype": str(t.dtype)[-7:]}
    return {"layout": str(t.layout).split(".")[-1], "shape": list(t.shape), "dtype": str(t.dtype).split(".")[-1],
            "nnz": t._nnz(), "crow": t.crow_indices().tolist(), "col": t.col_indices().tolist(),
            "values": t.values().detach().tolist(), "dense": t.detach().to_dense().tolist(),
            "sparse_csr": t.is_sparse_csr, "sparse": t.is_sparse, "dims": (t.sparse_dim(), t.dense_dim())}


def same_csr(fn):
    ours, theirs = fn(lantern), fn(torch)
    pairs = zip(ours, theirs) if isinstance(theirs, tuple) else [(ours, theirs)]
    for a, b in pairs:
        assert describe(a) == describe(b), f"\nlantern: {describe(a)}\ntorch:   {describe(b)}"


@pytest.mark.parametrize("fn", [
    lambda m: csr(m),
    lambda m: m.sparse_csr_tensor(CROW, COL, VALUES),
    lambda m: csr(m, dtype=m.float64),
    lambda m: m.sparse_csr_tensor(m.tensor(CROW, dtype=m.int32), m.tensor(COL, dtype=m.int32), m.tensor(VALUES)),
    lambda m: m.tensor(DENSE).to_sparse_csr(),
    lambda m: m.tensor(DENSE).to_sparse(layout=m.sparse_csr),
    lambda m: m.tensor(DENSE).to_sparse().to_sparse_csr(),
    lambda m: csr(m).to_sparse_csr(),
    lambda m: csr(m).to(m.float64),
    lambda m: csr(m).clone(),
    lambda m: -csr(m),
    lambda m: csr(m) * 2,
    lambda m: csr(m) + csr(m),
    lambda m: m.zeros_like(csr(m)),
], ids=["size", "inferred", "dtype", "int32", "to_sparse_csr", "to_sparse-layout", "from-coo", "csr-to-csr", "to",
        "clone", "neg", "mul", "csr+csr", "zeros_like"])
def test_csr_tensors(fn):
    same_csr(fn)


@pytest.mark.parametrize("fn", [
    lambda m: csr(m).to_dense(),
    lambda m: csr(m).to_sparse(),
    lambda m: csr(m) @ m.tensor(MATRIX),
    lambda m: m.mm(csr(m), m.tensor(MATRIX)),
    lambda m: csr(m).matmul(m.ones(3)),
    lambda m: m.addmm(m.ones(2, 4), csr(m), m.tensor(MATRIX), beta=0.5),
    lambda m: m.ones(2, 3) + csr(m),
    lambda m: csr(m).sum(),
])
def test_csr_to_dense_and_products(fn):
    same(fn)


@pytest.mark.parametrize("fn, message", [
    (lambda m: csr(m).exp(), None),
    (lambda m: m.sparse_csr_tensor(CROW, COL, VALUES, (2, 2), check_invariants=True), "0 <= col_indices < ncols"),
    (lambda m: m.ones(2, 2).crow_indices(), "crow_indices expected sparse row compressed tensor layout but got Strided"),
    (lambda m: m.ones(2, 2).values(), "values expected sparse tensor layout but got Strided"),
    (lambda m: csr(m).indices(), "indices expected sparse coordinate tensor layout but got SparseCsr"),
    (lambda m: m.ones(2, 2).to_sparse().crow_indices(), "got Sparse$"),
])
def test_csr_errors(fn, message):
    raises_same(fn, message)


def test_csr_repr_matches_torch():
    for make in (csr, lambda m: csr(m, dtype=m.float64), lambda m: m.tensor(DENSE).to_sparse_csr()):
        assert repr(make(lantern)).replace("lantern.", "torch.") == repr(make(torch))


def test_csr_gradients():
    def run(lib):
        x = lib.tensor(MATRIX, requires_grad=True)
        v = lib.tensor(VALUES, requires_grad=True)
        c = lib.sparse_csr_tensor(CROW, COL, v, (2, 3))
        leaf = csr(lib).requires_grad_()
        ((c @ x) * lib.arange(8.0).view(2, 4)).sum().backward()
        (leaf.to_dense() * 2).sum().backward()
        return x.grad, v.grad, leaf.grad
    same_csr(run)


def test_the_dispatch_trace_names_the_csr_layout():
    from lantern.core.dispatch_keys import DispatchKey
    from lantern.ops import dispatcher, registry
    keys = dispatcher.explain_keys(registry.get("mm"), (csr(lantern), lantern.ones(3, 2)))
    assert keys == [(DispatchKey.SparseCsrCPU, "input 0 has layout sparse_csr")]
