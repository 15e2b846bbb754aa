"""torch's sparse-times-dense products with sparse results (torch.hspmm, smm, sspaddmm and the old names hsmm,
saddmm, dsmm), native_norm (a sparse tensor's norm), plus slice_inverse.

A sparse (n, k) matrix times a dense (k, m) one gives nonzeros only in the rows where the sparse matrix has any:
hspmm returns those rows as a hybrid COO tensor (one sparse dim over rows, a dense dim of m values), smm and
sspaddmm list every (row, column) pair of them, as ATen does (uncoalesced, in row-major order after the entries of
sspaddmm's input).

>>> import lantern as torch
>>> s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([3.0, 4.0, 5.0]), (3, 3))
>>> h = torch.hspmm(s, torch.ones(3, 2))
>>> h._indices().tolist(), h._values().tolist(), (h.sparse_dim(), h.dense_dim())
([[0, 1]], [[3.0, 3.0], [9.0, 9.0]], (1, 1))
"""
from .core.layout import sparse_coo
from .core.tensor_impl import TensorImpl
from .ops.dispatcher import call
from .ops.registry import get
from .core.overridable import overridable

__all__ = ["hspmm", "hsmm", "smm", "sspaddmm", "saddmm", "dsmm", "native_norm", "slice_inverse"]


def _check_product(name, mat1, mat2):
    if mat1.layout is not sparse_coo or mat1.dim() != 2 or mat1.dense_dim() != 0:
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                  f"'{'CPU' if mat1.layout is not sparse_coo else 'SparseCPU'}' backend: {name} "
                                  "takes a 2-D sparse COO matrix first")
    if mat2.dim() != 2:
        raise RuntimeError(f"{name}: Argument #3: Expected dim 2, got {mat2.dim()}")
    if mat2._size[0] != mat1._size[1]:
        raise RuntimeError(f"{name}: Argument #3: Expected dim 0 size {mat1._size[1]}, got {mat2._size[0]}")


def _product_rows(mat1, mat2):
    """(rows of mat1 that hold an entry, sorted; those rows of mat1 @ mat2)."""
    rows = mat1.coalesce()._indices()[0].unique()
    return rows, mat1.mm(mat2)[rows]


@overridable
def hspmm(mat1, mat2, *, out=None):
    """mat1 @ mat2 as a hybrid COO tensor: the rows of mat1 that hold entries, each a dense row of the result."""
    _check_product("hspmm", mat1, mat2)
    rows, values = _product_rows(mat1, mat2)
    result = _coo(rows.unsqueeze(0), values, (mat1._size[0], mat2._size[1]))
    return result if out is None else out.copy_(result)


hsmm = hspmm


@overridable
def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat1 @ mat2), sparse: input's entries, then every (row, column) of the product's
    nonzero rows (uncoalesced)."""
    if input.layout is not sparse_coo:
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    _check_product("sspaddmm", mat1, mat2)
    if input._size != (mat1._size[0], mat2._size[1]):
        raise RuntimeError(f"sspaddmm: Argument #1: Expected dim 0 size {mat1._size[0]} and dim 1 size "
                           f"{mat2._size[1]}, got {list(input._size)}")
    rows, values = _product_rows(mat1, mat2)
    columns = call(get("arange"), (mat2._size[1], None, 1, rows.dtype, None, rows.device, None, False))
    product_indices = call(get("stack"), ([rows.repeat_interleave(mat2._size[1]), columns.repeat(rows.numel())], 0))
    indices = call(get("cat"), ([input._indices(), product_indices], 1))
    entries = call(get("cat"), ([input._values() * beta, values.reshape(-1) * alpha], 0))
    result = _coo(indices, entries, input._size)
    return result if out is None else out.copy_(result)


saddmm = sspaddmm


@overridable
def smm(input, mat):
    """input @ mat for a sparse input, as a sparse result listing every entry of the product's nonzero rows."""
    if input.layout is not sparse_coo:
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    empty = call(get("zeros"), ((input._size[0], mat._size[1]), mat.dtype, None, mat.device, None, False, None))
    return sspaddmm(empty.to_sparse(), input, mat)


@overridable
def dsmm(input, mat2, *, out=None):
    """A matrix product with a dense result: torch's old name for mm."""
    return call(get("mm"), (input, mat2)) if out is None else call(get("mm.out"), (input, mat2, out))


@overridable
def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The p-norm of all of a sparse tensor's elements (its coalesced values: duplicates add up first). torch has
    it for sparse tensors only, and only as a full reduction."""
    if input.layout is not sparse_coo:
        raise NotImplementedError("Could not run 'aten::native_norm' with arguments from the 'CPU' backend: "
                                  "native_norm takes sparse tensors only (use linalg.vector_norm)")
    if dim is not None and sorted(input._wrap_dim(d) for d in dim) != list(range(input.dim())):
        raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' must either be empty or "
                           "contain all dimensions of the input")
    if keepdim:
        raise RuntimeError("norm_sparse currently does not support keepdim=True")
    if dtype is not None:
        raise RuntimeError("norm_sparse currently does not support 'dtype' argument")
    return call(get("linalg_vector_norm"), (input.coalesce()._values(), p, None, False, None))


@overridable
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """The view of `input`'s memory that `src` is of its own: input (a slice of some base) turned back into the
    base's geometry, which src gives (functionalization's inverse of slice)."""
    if not isinstance(input, TensorImpl) or not isinstance(src, TensorImpl):
        raise TypeError("slice_inverse(): arguments 'input' and 'src' must be Tensors")
    return input.as_strided(src._size, src._stride, src._offset)


def _coo(indices, values, size):
    """An uncoalesced COO tensor over these indices and values (its sparse dims are the indices' rows)."""
    sparse_dims = indices._size[0]
    return call(get("_sparse_coo_tensor_with_dims_and_tensors"),
                (sparse_dims, values.dim() - 1, tuple(size), indices, values, False))
