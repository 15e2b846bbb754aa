"""torch.sparse: products, sums and softmaxes over a sparse tensor's specified elements.

The layouts themselves (what a COO or CSR tensor is, their dispatch keys) are in lantern.backends.sparse; their ops
in lantern.ops.sparse_coo, sparse_csr and sparse_math. This module is the namespace programs call.

>>> s = lantern.tensor([[0., 2.], [3., 0.]]).to_sparse().requires_grad_()
>>> y = lantern.sparse.mm(s, lantern.ones(2, 1))
>>> y.sum().backward()
>>> y.grad_fn.name(), s.grad.layout, s.grad.coalesce().values().tolist()
('SparseAddmmBackward0', lantern.sparse_coo, [1.0, 1.0])
"""
from ..ops.dispatcher import call as _call
from ..ops.registry import get as _get
from ._checks import as_sparse_gradcheck, check_sparse_tensor_invariants  # noqa: F401


def mm(mat1, mat2, reduce=None):
    """mat1 @ mat2 with mat1 sparse (COO) and mat2 dense or sparse; mat1's gradient is sparse, in mat1's pattern.
    With `reduce` ('sum', 'mean', 'amax', 'amin'; a CSR mat1 and a dense mat2 only), each result element reduces
    the products over the specified entries of mat1's row (lantern.ops.sparse_csr_products)."""
    if reduce is not None:
        return _call(_get("_sparse_mm_reduce_impl"), (mat1, mat2, reduce))[0]
    if mat1.layout.name == "sparse_csr":
        return mat1 @ mat2
    zeros = mat1.new_zeros((mat1.shape[0], mat2.shape[-1])) if mat1.dim() == 2 else None
    return _call(_get("_sparse_addmm"), (zeros, mat1, mat2, 0, 1))


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2), mat1 sparse; mat1's gradient is sparse."""
    return _call(_get("_sparse_addmm"), (mat, mat1, mat2, beta, alpha))


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """beta * input + alpha * (mat1 @ mat2) at the specified entries of `input` (a CSR matrix) only: a CSR result
    with input's pattern."""
    result = _call(_get("sparse_sampled_addmm"), (input, mat1, mat2, beta, alpha))
    return result if out is None else out.copy_(result)


def sum(input, dim=None, dtype=None):
    """The sum of a sparse tensor's elements: all of them (a dense 0-dim tensor), or over `dim` (sparse while
    sparse dims are left)."""
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        return input.sum()
    return _call(_get("_sparse_sum"), (input, [dim] if isinstance(dim, int) else list(dim)))


def softmax(input, dim, *, dtype=None):
    """softmax along `dim` over the specified elements only (the others count as -inf and stay unspecified)."""
    if dtype is not None:
        input = input.to(dtype)
    return _call(_get("_sparse_softmax"), (input, dim, False))


def log_softmax(input, dim, *, dtype=None):
    """log(softmax(input, dim)) over the specified elements only."""
    if dtype is not None:
        input = input.to(dtype)
    return _call(_get("_sparse_log_softmax"), (input, dim, False))
