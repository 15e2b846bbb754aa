"""torch.sparse.mm's reductions over a CSR matrix's entries and torch.sparse.sampled_addmm, against torch: values,
ties and NaNs of amax/amin, empty rows, both gradients (the CSR one in its pattern) and the errors."""
import numpy as np
import pytest
from oracle import check, raises_like

import lantern

REDUCTIONS = ["sum", "mean", "amax", "amin"]

# rows with two entries, an empty row, a row with one entry; columns 1 and 2 of `OTHER` tie under amax/amin
MATRIX = np.array([[0., 1., 1.], [0., 0., 0.], [3., 0., 4.], [0., -2., 0.]])
OTHER = np.array([[1., 2.], [1., -1.], [1., 7.]])


def _grads(m, dense, other, reduce):
    a = dense.to_sparse_csr().requires_grad_()
    b = other.clone().requires_grad_()
    out = m.sparse.mm(a, b, reduce)
    weights = m.arange(out.numel(), dtype=out.dtype).reshape(out.shape) - 3
    grad_a, grad_b = m.autograd.grad(out, (a, b), weights)
    return out, grad_a.layout == m.sparse_csr, grad_a.to_dense(), grad_b


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_mm_reduce_values_and_gradients(reduce):
    check(lambda m, a, b: _grads(m, a, b, reduce), MATRIX, OTHER)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_mm_reduce_nan_wins(reduce):
    other = OTHER.copy()
    other[2, 0] = np.nan
    check(lambda m, a, b: _grads(m, a, b, reduce), MATRIX, other)


@pytest.mark.parametrize("case", [
    lambda m, a, b: m.sparse.mm(a.to_sparse_csr(), b, "prod"),          # not enabled
    lambda m, a, b: m.sparse.mm(a.to_sparse_csr(), b, "max_"),          # no such reduction
    lambda m, a, b: m.sparse.mm(a.to_sparse_csr(), b[:2], "mean"),      # sizes
    lambda m, a, b: m.sparse.mm(a.to_sparse_csr(), b.float(), "mean"),   # dtypes
    lambda m, a, b: m.sparse.mm(a.to_sparse_csr().long(), b.long(), "sum"),
    lambda m, a, b: m.sparse.mm(a.to_sparse(), b, "sum"),               # COO: no reduce kernel
])
def test_mm_reduce_errors(case):
    raises_like(case, MATRIX, OTHER)


def _sampled(m, dense, mat1, mat2, beta, alpha):
    a = dense.to_sparse_csr().requires_grad_()
    x, y = mat1.clone().requires_grad_(), mat2.clone().requires_grad_()
    out = m.sparse.sampled_addmm(a, x, y, beta=beta, alpha=alpha)
    weights = (m.arange(out.numel(), dtype=m.float64).reshape(out.shape) - 2).to(out.dtype)
    grads = m.autograd.grad(out, (a, x, y), weights)
    return out.layout == m.sparse_csr, out.to_dense(), grads


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_sampled_addmm(dtype):
    rng = np.random.default_rng(0)
    mat1, mat2 = rng.standard_normal((4, 2)).astype(dtype), rng.standard_normal((2, 3)).astype(dtype)
    beta, alpha = (0.5, -2.0) if dtype is np.float64 else (1 + 2j, 2 - 1j)
    check(lambda m, a, x, y: _sampled(m, a, x, y, beta, alpha), MATRIX.astype(dtype), mat1, mat2)


@pytest.mark.parametrize("case", [
    lambda m, a, x, y: m.sparse.sampled_addmm(a.to_sparse_csr(), x, y.float()),    # mixed dtypes
    lambda m, a, x, y: m.sparse.sampled_addmm(a.to_sparse_csr(), x, y.t()),        # shapes
    lambda m, a, x, y: m.sparse.sampled_addmm(a.to_sparse_csr().long(), x.long(), y.long()),
    lambda m, a, x, y: m.sparse.sampled_addmm(a, x, y),                            # a strided input
])
def test_sampled_addmm_errors(case):
    raises_like(case, MATRIX, np.ones((4, 2)), np.ones((2, 3)))


def _csr64(v):
    """MATRIX's pattern with the values v (float64, differentiable through the constructor)."""
    return lantern.sparse_csr_tensor([0, 2, 2, 4, 5], [1, 2, 0, 2, 1], v, (4, 3))


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_mm_reduce_to_second_order(reduce):
    """Both operands at once: the dense gradient reads the CSR values through values(), so its own gradient reaches
    them (values() of a CSR tensor differentiates back into a CSR tensor of the same pattern)."""
    v = lantern.tensor([1., 1.2, 3., 4., -2.], dtype=lantern.float64, requires_grad=True)
    w = lantern.tensor([[1., 2.], [1.5, -1.], [0.5, 7.]], dtype=lantern.float64, requires_grad=True)
    assert lantern.autograd.gradgradcheck(lambda v, w: lantern.sparse.mm(_csr64(v * v), w * w, reduce), (v, w))


def test_sampled_addmm_to_second_order():
    rng = np.random.default_rng(1)
    v = lantern.tensor([1., 1.2, 3., 4., -2.], dtype=lantern.float64, requires_grad=True)
    x, y = (lantern.tensor(rng.standard_normal(shape), requires_grad=True) for shape in ((4, 2), (2, 3)))
    assert lantern.autograd.gradgradcheck(
        lambda v, x, y: lantern.sparse.sampled_addmm(_csr64(v * v), x * x, y, beta=0.5, alpha=-2.0).to_dense(),
        (v, x, y))
