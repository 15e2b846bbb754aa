"""The CSR layout: compressed sparse rows of a matrix, and its SparseCsrCPU kernels.

A CSR matrix (n, m) is `crow_indices` (n + 1,), `col_indices` (nnz,) and `values` (nnz,): row i's entries are
positions crow_indices[i]:crow_indices[i + 1] of the other two. Products run on SciPy's csr_matrix, which keeps
the same three arrays.

PyTorch transposes a CSR matrix into the CSC layout, which lantern does not build: lantern's `t()` of a CSR matrix
gives the same matrix transposed in COO (what the derivative of CSR @ dense needs).

>>> c = lantern.tensor([[0., 1., 0.], [2., 0., 3.]]).to_sparse_csr()
>>> c.crow_indices().tolist(), c.col_indices().tolist(), (c @ lantern.ones(3)).tolist()
([0, 1, 3], [1, 0, 2], [1.0, 5.0])
"""
import numpy as np
from scipy import sparse as sp

from ..backends.cpu import cpu
from ..backends.sparse import make_csr, refuse_other_layouts, register_kernel
from ..core import dtype as dt
from ..core.layout import sparse_coo, sparse_csr, strided
from ..core.tensor_impl import TensorImpl
from .derivative import derivative, nondifferentiable
from .dispatcher import call
from .meta_util import operands_result_type, shape_str
from .registry import custom, get
from .sparse_invariants import checks_invariants
from .sparse_coo import coo_from_arrays, dense_from_array, empty_sparse_like
from .sparse_math import scipy_matrix, sparse_sum_kernel, transpose_kernel
from ..core.overridable import overridable

xp = cpu.xp  # the sparse kernels compute on their dense parts, tensors of the CPU backend (backends/sparse.py)

_array = cpu.array
_host = cpu.host_array  # SciPy's sparse matrices compute on NumPy arrays: the host arrays of the parts


def csr_from_arrays(crow, col, values, size, dtype=None):
    """A CSR tensor over copies of its three arrays."""
    return make_csr(dense_from_array(xp.asarray(crow, np.int64)), dense_from_array(xp.asarray(col, np.int64)),
                    dense_from_array(values, dtype), size)


def scipy_csr(t):
    """A CSR tensor as SciPy's csr_matrix over the same three arrays."""
    p = t._storage
    return sp.csr_matrix((_host(p.values), _host(p.col_indices), _host(p.crow_indices)), shape=t._size)


def _from_scipy(matrix, dtype):
    matrix = sp.csr_matrix(matrix)
    return csr_from_arrays(matrix.indptr, matrix.indices, matrix.data.astype(dtype.np), matrix.shape, dtype)


def _rows_of(t):
    """Each entry's row number (the expanded crow_indices)."""
    crow = _array(t._storage.crow_indices)
    return xp.repeat(xp.arange(len(crow) - 1), xp.diff(crow))


# ---- building, converting, reading ----------------------------------------------------------------------------------

def _csr_kernel(backend, crow_indices, col_indices, values, size):
    return make_csr(crow_indices.detach(), col_indices.detach(), values.detach(), tuple(size))


custom("_sparse_csr_tensor_unsafe(Tensor crow_indices, Tensor col_indices, Tensor values, int[] size) -> Tensor",
       _csr_kernel, backends=("cpu",))


def _csr_to_dense_kernel(self, dtype=None, masked_grad=None):
    return dense_from_array(scipy_csr(self).toarray(), dtype or self.dtype)


register_kernel(get("_to_dense"), sparse_csr, _csr_to_dense_kernel)


def _dense_to_csr_kernel(backend, self, dense_dim=None):
    if self.dim() != 2:
        raise RuntimeError(f"to_sparse_csr: expected a 2-D tensor, got {self.dim()}-D (lantern builds CSR matrices "
                           "without batch or dense dims)")
    return _from_scipy(backend.host_array(self), self.dtype)


def _coo_to_csr_kernel(self, dense_dim=None):
    return _from_scipy(scipy_matrix(self), self.dtype)


custom("_to_sparse_csr(Tensor self, int? dense_dim=None) -> Tensor", _dense_to_csr_kernel, backends=("cpu",))
register_kernel(get("_to_sparse_csr"), sparse_coo, _coo_to_csr_kernel)
register_kernel(get("_to_sparse_csr"), sparse_csr, lambda self, dense_dim=None: self)


def _csr_to_coo_kernel(self):
    indices = xp.stack([_rows_of(self), _array(self._storage.col_indices)])
    return coo_from_arrays(indices, _array(self._storage.values), self._size, True, self.dtype)


custom("_csr_to_coo(Tensor self) -> Tensor", None, backends=())
register_kernel(get("_csr_to_coo"), sparse_csr, _csr_to_coo_kernel)


def _csr_part(name):
    return lambda self: getattr(self._storage, name).detach()


for _name in ("crow_indices", "col_indices"):
    custom(f"{_name}(Tensor(a) self) -> Tensor(a)", None, backends=())
    register_kernel(get(_name), sparse_csr, _csr_part(_name))
    nondifferentiable(_name)
    refuse_other_layouts(get(_name), "sparse row compressed tensor layout")
register_kernel(get("values"), sparse_csr, _csr_part("values"))
refuse_other_layouts(get("values"), "sparse tensor layout")


# ---- math -----------------------------------------------------------------------------------------------------------

def _same_layout_result(self, values, dtype):
    p = self._storage
    return make_csr(p.crow_indices, p.col_indices, dense_from_array(values, dtype), self._size)


def _csr_mm_kernel(self, mat2):
    if self.dim() != 2 or mat2.dim() != 2 or self._size[1] != mat2._size[0]:
        raise RuntimeError(f"mm: CSR matrix of size {shape_str(self._size)} and matrix of size "
                           f"{shape_str(mat2._size)} cannot be multiplied")
    if mat2.layout is not strided:
        raise RuntimeError("mm: lantern multiplies a CSR matrix by a dense one only; convert the other with "
                           ".to_dense()")
    return dense_from_array(xp.asarray(scipy_csr(self) @ _host(mat2), dtype=self.dtype.np), self.dtype)


def _csr_mv_kernel(self, vec):
    return dense_from_array(xp.asarray(scipy_csr(self) @ _host(vec), dtype=self.dtype.np), self.dtype)


def _csr_addmm_kernel(self, mat1, mat2, beta=1, alpha=1):
    product = _array(_csr_mm_kernel(mat1, mat2))
    result = product * alpha if beta == 0 else xp.broadcast_to(_array(self), product.shape) * beta + product * alpha
    return dense_from_array(xp.asarray(result, dtype=mat1.dtype.np), mat1.dtype)


def _csr_add_kernel(self, other, alpha=1):
    dtype = operands_result_type((self, other))
    if self.layout is strided:
        if self._size != other._size:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                               f"{list(self._size)} while other has size {list(other._size)}")
        return dense_from_array(_host(self) + alpha * scipy_csr(other).toarray(), dtype)
    if other.layout is not sparse_csr:
        raise RuntimeError("add: lantern adds a CSR matrix to a dense one (dense + csr) or to a CSR one")
    return _from_scipy(scipy_csr(self) + alpha * scipy_csr(other), dtype)


def _csr_mul_kernel(self, other):
    csr, factor = (self, other) if isinstance(self, TensorImpl) and self.layout is sparse_csr else (other, self)
    if isinstance(factor, TensorImpl) and factor.dim():
        raise RuntimeError("mul: lantern multiplies a CSR matrix by a scalar only")
    dtype = operands_result_type((self, other))
    scalar = _array(factor) if isinstance(factor, TensorImpl) else factor
    return _same_layout_result(csr, (_array(csr._storage.values) * scalar).astype(dtype.np), dtype)


def _csr_to_copy_kernel(self, dtype=None, device=None, memory_format=None):
    dtype = dtype or self.dtype
    return _same_layout_result(self, _array(self._storage.values).astype(dtype.np), dtype)


def _csr_transpose_kernel(self, dim0=0, dim1=1):
    return transpose_kernel(_csr_to_coo_kernel(self), dim0, dim1)


def _csr_zero_kernel(self):
    """zero_: no specified elements left (every row empty)."""
    self._storage = empty_sparse_like(self)._storage
    self._bump_version()
    return self


def _csr_sum_kernel(self, dim=None, keepdim=False, dtype=None):
    return sparse_sum_kernel(_csr_to_coo_kernel(self), dim, keepdim, dtype)


for _name, _kernel in (("mm", _csr_mm_kernel), ("mv", _csr_mv_kernel), ("addmm", _csr_addmm_kernel),
                       ("add", _csr_add_kernel), ("mul", _csr_mul_kernel), ("_to_copy", _csr_to_copy_kernel),
                       ("t", lambda self: _csr_transpose_kernel(self)), ("transpose", _csr_transpose_kernel),
                       ("sum", _csr_sum_kernel), ("zero_", _csr_zero_kernel),
                       ("neg", lambda self: _same_layout_result(self, -_array(self._storage.values), self.dtype)),
                       ("clone", lambda self, memory_format=None: _csr_to_copy_kernel(self))):
    register_kernel(get(_name), sparse_csr, _kernel)


# ---- the Python-level constructor ----------------------------------------------------------------------------------

def _check_csr(crow, col, values, size):
    if crow.dim() != 1 or col.dim() != 1 or values.dim() != 1:
        raise RuntimeError("sparse_csr_tensor: lantern builds CSR matrices from 1-D crow_indices, col_indices and "
                           f"values (got {crow.dim()}-D, {col.dim()}-D and {values.dim()}-D)")
    if col._size[0] != values._size[0]:
        raise RuntimeError(f"col_indices and values must have the same number of elements, but got "
                           f"{col._size[0]} and {values._size[0]}")
    if len(size) != 2:
        raise RuntimeError(f"sparse_csr_tensor: expected a 2-D size, got {list(size)}")


def _check_csr_invariants(crow, col, size):
    crow_a, col_a = _array(crow), _array(col)
    if crow_a.shape[0] != size[0] + 1:
        raise RuntimeError(f"`crow_indices.size(-1) == nrows + 1` is not satisfied ({crow_a.shape[0]} != "
                           f"{size[0] + 1})")
    steps = xp.diff(crow_a)
    for failed, condition in ((crow_a[0] != 0, "`crow_indices[..., 0] == 0`"),
                              (crow_a[-1] != col_a.shape[0], "`crow_indices[..., -1] == nnz`"),
                              ((steps < 0).any() or (steps > size[1]).any(),
                               "`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols`"),
                              (col_a.size and (col_a.min() < 0 or col_a.max() >= size[1]),
                               "`0 <= col_indices < ncols`"),
                              (any((xp.diff(col_a[crow_a[i]:crow_a[i + 1]]) <= 0).any() for i in range(size[0])),
                               "`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, "
                               "..., nrows are sorted and distinct along the last dimension values`")):
        if failed:
            raise RuntimeError(f"{condition} is not satisfied.")


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A CSR matrix from its three parts; size defaults to (len(crow_indices) - 1, max column + 1).

    >>> lantern.sparse_csr_tensor([0, 1, 2], [1, 0], [5., 6.]).to_dense().tolist()
    [[0.0, 5.0], [6.0, 0.0]]
    """
    from .._construct import as_tensor
    crow, col = (as_tensor(x, device=device).to(dt.int64) for x in (crow_indices, col_indices))
    values = as_tensor(values, dtype=dtype, device=device)
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if size is None:
        size = (crow._size[0] - 1, int(_array(col).max()) + 1 if col.numel() else 0)
    size = tuple(size)
    _check_csr(crow, col, values, size)
    if checks_invariants(check_invariants):
        _check_csr_invariants(crow, col, size)
    result = call(get("_sparse_csr_tensor_unsafe"), (crow, col, values, size))
    if requires_grad:
        result.requires_grad_()
    return result


class SparseCsrMethods:
    """The CSR tensor methods lantern.Tensor inherits."""

    __slots__ = ()

    @overridable
    def to_sparse_csr(self, dense_dim=None):
        """A CSR matrix with the same elements (self if it is one)."""
        return call(get("_to_sparse_csr"), (self, dense_dim))


# ---- derivatives ----------------------------------------------------------------------------------------------------

def csr_values_backward(grad, crow_indices, col_indices):
    """The gradient of a CSR matrix's values: grad read at each entry's (row, column)."""
    crow = _array(crow_indices)
    rows = dense_from_array(xp.repeat(xp.arange(len(crow) - 1), xp.diff(crow)))
    return grad.to_dense()[rows, col_indices]


def to_dense_backward(grad, self):
    """grad read at self's entries, in self's layout and with its indices (COO ones left unmarked as coalesced, as
    PyTorch leaves them)."""
    dense = grad.to_dense()
    if self.layout is sparse_csr:
        p = self._storage
        return call(get("_sparse_csr_tensor_unsafe"),
                    (p.crow_indices, p.col_indices, csr_values_backward(dense, p.crow_indices, p.col_indices),
                     self._size))
    indices = self._indices()
    picked = dense[tuple(indices.unbind(0))]
    return call(get("_sparse_coo_tensor_with_dims_and_tensors"),
                (indices._size[0], picked.dim() - 1, self._size, indices, picked, indices._size[1] <= 1))


derivative("_to_dense", name="ToDenseBackward0", self="to_dense_backward(grad, self)",
           helpers={"to_dense_backward": to_dense_backward})
derivative("_sparse_csr_tensor_unsafe", name="SparseCsrTensorUnsafeBackward0",
           values="csr_values_backward(grad, crow_indices, col_indices)",
           helpers={"csr_values_backward": csr_values_backward})
derivative("_to_sparse_csr", name="ToSparseCsrBackward0", self="grad.to_dense()")
derivative("_csr_to_coo", name="ToSparseBackward0", self="grad.to_dense()")
