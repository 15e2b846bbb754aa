"""Products of a CSR matrix that keep to its sparsity: torch.sparse.mm's reductions (`_sparse_mm_reduce_impl`) and
torch.sparse.sampled_addmm.

`torch.sparse.mm(csr, dense, reduce)` reduces, for each row i and column j of the result, the products
csr[i, k] * dense[k, j] over the row's specified entries k only: their sum, mean, largest (amax) or smallest (amin).
A row with no entries gives 0. amax and amin also return, for each result element, the entry (its position in
`values`, nnz for an empty row) that gave it: the gradient flows to that entry alone, the first one on ties, as in
PyTorch's CPU kernel. Every gradient of the CSR operand has its pattern.

`sampled_addmm(input, mat1, mat2)` computes beta * input + alpha * (mat1 @ mat2) at input's specified entries only.

>>> c = lantern.tensor([[0., 1., 2.], [0., 0., 0.], [3., 0., 4.]]).to_sparse_csr()
>>> b = lantern.tensor([[1., 2.], [3., -1.], [5., 7.]])
>>> lantern.sparse.mm(c, b, "amax").tolist()
[[10.0, 14.0], [0.0, 0.0], [20.0, 28.0]]
>>> lantern.sparse.sampled_addmm(c, lantern.ones(3, 2), lantern.ones(2, 3)).values().tolist()
[3.0, 4.0, 5.0, 6.0]
"""
import numpy as np

from ..backends.cpu import cpu
from ..backends.sparse import make_csr, register_kernel
from ..core.layout import sparse_csr, strided
from .derivative import derivative
from .dispatcher import call
from .meta_util import shape_str
from .registry import custom, get
from .sparse_coo import dense_from_array
from .sparse_csr import _rows_of

xp = cpu.xp  # the sparse kernels compute on their dense parts, tensors of the CPU backend (backends/sparse.py)
_array = cpu.array

REDUCTIONS = ("sum", "mean", "amax", "amin")


# ---- torch.sparse.mm(..., reduce) ------------------------------------------------------------------------------------

def _check_mm_reduce(self, other, reduce):
    if reduce not in REDUCTIONS + ("prod",):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if reduce == "prod":
        raise RuntimeError("sparse_mm_reduce: reduce type of prod has not been enabled.")
    if other.layout is not strided:
        raise RuntimeError(f"Expected tensor to have Strided Layout, but got tensor with "
                           f"{'SparseCsr' if other.layout is sparse_csr else 'Sparse'} Layout (while checking "
                           "arguments for sparse_mm_reduce)")
    if other.dim() != 2 or other._size[0] != self._size[1]:
        raise RuntimeError(f"Expected a tensor of dimension 2 and tensor.size[0] == {self._size[1]} but got: "
                           f"dimension {other.dim()} and tensor.size[0] = {other._size[0] if other.dim() else 0}")
    if other.dtype is not self.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'other' to have scalar type {self.dtype.legacy}; but got "
                           f"torch.{other.dtype.legacy}Tensor instead (while checking arguments for sparse_mm_reduce)")
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise NotImplementedError(f'"spmm_reduce_kernel" not implemented for \'{self.dtype.legacy}\'')


def _entry_products(self, other):
    """(row of each entry, its products with other's rows: values[e] * other[col[e], :], shape (nnz, m))."""
    parts = self._storage
    values, columns = _array(parts.values), _array(parts.col_indices)
    return _rows_of(self), values[:, None] * _array(other)[columns]


def _arg_of_extremum(products, rows, out, nnz):
    """For each result element, the entry that gave it: the first in its row equal to the extremum (the last NaN
    when the row has one, since each NaN replaces what came before, as PyTorch's kernel updates); nnz for an empty
    row."""
    position = xp.arange(nnz)[:, None]
    hit = (products == out[rows]) | xp.isnan(products)
    first = xp.full(out.shape, nnz, dtype=np.int64)
    xp.minimum.at(first, rows, xp.where(hit & ~xp.isnan(products), position, nnz))
    last_nan = xp.full(out.shape, -1, dtype=np.int64)
    xp.maximum.at(last_nan, rows, xp.where(xp.isnan(products), position, -1))
    return xp.where(last_nan >= 0, last_nan, first)


def _mm_reduce_kernel(self, other, reduce):
    _check_mm_reduce(self, other, reduce)
    n, m = self._size[0], other._size[1]
    nnz = int(_array(self._storage.col_indices).shape[0])
    rows, products = _entry_products(self, other)
    counts = xp.diff(_array(self._storage.crow_indices))[:, None]
    arg_out = xp.zeros(0, dtype=np.int64)
    if reduce in ("sum", "mean"):
        out = xp.zeros((n, m), dtype=products.dtype)
        xp.add.at(out, rows, products)
        if reduce == "mean":
            out = out / xp.maximum(counts, 1)
    else:
        extremum = xp.maximum if reduce == "amax" else xp.minimum
        out = xp.full((n, m), -xp.inf if reduce == "amax" else xp.inf, dtype=products.dtype)
        extremum.at(out, rows, products)
        out = xp.where(counts > 0, out, 0)
        arg_out = _arg_of_extremum(products, rows, out, nnz)
    return dense_from_array(out.astype(self.dtype.np), self.dtype), dense_from_array(arg_out)


custom("_sparse_mm_reduce_impl(Tensor self, Tensor other, str reduce) -> (Tensor, Tensor)", None, backends=(),
       method=False)
register_kernel(get("_sparse_mm_reduce_impl"), sparse_csr, _mm_reduce_kernel)


def _entry_rows_and_columns(self):
    parts = self._storage
    return dense_from_array(_rows_of(self)), parts.col_indices


def _csr_like(self, values):
    """A CSR matrix with self's pattern holding `values` (differentiable in them)."""
    parts = self._storage
    return call(get("_sparse_csr_tensor_unsafe"), (parts.crow_indices, parts.col_indices, values, self._size))


def _row_counts(self, rows):
    """Each entry's number of entries in its row (at least 1), as a column to divide by."""
    counts = self._storage.crow_indices.diff().clamp(min=1)
    return counts[rows].unsqueeze(1).to(self.dtype)


def mm_reduce_self_backward(grad, self, other, reduce, arg_out):
    """The CSR operand's gradient (its pattern): for each entry e = (i, k), the sum over j of grad[i, j] *
    other[k, j], over the j whose result entry e gave (amax/amin), divided by row i's entry count (mean)."""
    rows, columns = _entry_rows_and_columns(self)
    nnz = rows.numel()
    if reduce in ("sum", "mean"):
        contributions = grad[rows] * other[columns]
        if reduce == "mean":
            contributions = contributions / _row_counts(self, rows)
        return _csr_like(self, contributions.sum(1))
    chosen = arg_out.clamp(max=max(nnz - 1, 0))
    contributions = grad * other.gather(0, columns[chosen])
    totals = grad.new_zeros((nnz + 1,)).scatter_add(0, arg_out.flatten(), contributions.flatten())
    return _csr_like(self, totals[:nnz])


def mm_reduce_other_backward(grad, self, other, reduce, arg_out):
    """The dense operand's gradient: each entry (i, k)'s value times grad[i, :], added into row k (sum, mean: over
    all entries; amax, amin: into the elements each entry gave)."""
    rows, columns = _entry_rows_and_columns(self)
    values = self.values()
    if reduce in ("sum", "mean"):
        contributions = values.unsqueeze(1) * grad[rows]
        if reduce == "mean":
            contributions = contributions / _row_counts(self, rows)
        return other.new_zeros(other.shape).index_add(0, columns, contributions)
    nnz = rows.numel()
    given = arg_out < nnz
    chosen = arg_out.clamp(max=max(nnz - 1, 0))
    contributions = (grad * values[chosen]).where(given, 0)
    return other.new_zeros(other.shape).scatter_add(0, columns[chosen].where(given, 0), contributions)


derivative("_sparse_mm_reduce_impl", name="SparseMmReduceImplBackward0",
           self="mm_reduce_self_backward(grads[0], self, other, reduce, result1)",
           other="mm_reduce_other_backward(grads[0], self, other, reduce, result1)",
           helpers={"mm_reduce_self_backward": mm_reduce_self_backward,
                    "mm_reduce_other_backward": mm_reduce_other_backward})


# ---- torch.sparse.sampled_addmm ---------------------------------------------------------------------------------------

def _check_sampled_addmm(self, mat1, mat2):
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError(f"sparse_sampled_addmm: Expected self to be a floating-point or complex tensor, but got "
                           f"{self.dtype.legacy}")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same dtype, but got "
                           f"{mat1.dtype.legacy} and {mat2.dtype.legacy}")
    if mat1.dtype is not self.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and self to have the same dtype, but got "
                           f"{mat1.dtype.legacy} and {self.dtype.legacy}")
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"sampled_addmm: lantern takes 2-D mat1 and mat2 (got {mat1.dim()}-D and {mat2.dim()}-D)")
    if mat1._size[1] != mat2._size[0]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied "
                           f"({mat1._size[0]}x{mat1._size[1]} and {mat2._size[0]}x{mat2._size[1]})")
    if self._size != (mat1._size[0], mat2._size[1]):
        raise RuntimeError(f"sampled_addmm: self.shape[-2] must match mat1.shape[-2] and self.shape[-1] must match "
                           f"mat2.shape[-1] (self {shape_str(self._size)}, mat1 {shape_str(mat1._size)}, mat2 "
                           f"{shape_str(mat2._size)})")


def _sampled_addmm_kernel(self, mat1, mat2, beta=1, alpha=1):
    _check_sampled_addmm(self, mat1, mat2)
    rows, columns = _rows_of(self), _array(self._storage.col_indices)
    sampled = (_array(mat1)[rows] * _array(mat2).T[columns]).sum(axis=1)
    values = beta * _array(self._storage.values) + alpha * sampled
    parts = self._storage
    return make_csr(parts.crow_indices, parts.col_indices, dense_from_array(values.astype(self.dtype.np)),
                    self._size)


custom("sparse_sampled_addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
       None, backends=(), method=False)
register_kernel(get("sparse_sampled_addmm"), sparse_csr, _sampled_addmm_kernel)


def sampled_grad(grad, self):
    """grad read at self's entries only (dense, zeros elsewhere): what the product's gradient sees."""
    rows, columns = _entry_rows_and_columns(self)
    return _csr_like(self, grad.to_dense()[rows, columns]).to_dense()


derivative("sparse_sampled_addmm", name="SparseSampledAddmmBackward0",
           self="grad * beta.conjugate() if beta != 1 else grad",
           mat1="sampled_grad(grad, self).mm(mat2.mH) * alpha.conjugate()",
           mat2="mat1.mH.mm(sampled_grad(grad, self)) * alpha.conjugate()",
           helpers={"sampled_grad": sampled_grad})
