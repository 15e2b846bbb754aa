"""The COO layout's own ops: building a sparse tensor, converting between layouts, reading its parts.

A COO tensor (lantern.backends.sparse) is `indices` (sparse_dim, nnz) and `values` (nnz, *dense sizes). These ops
make one (`_sparse_coo_tensor_with_dims_and_tensors`, behind lantern.sparse_coo_tensor; `_to_sparse`), turn one
back into a dense tensor (`_to_dense`), sort and merge its entries (`_coalesce`) and hand out its parts
(`_indices`, `_values`, `indices`, `values`). The kernels of dense ops on sparse inputs (add, mm, sum, ...) are in
lantern.ops.sparse_math.

>>> s = lantern.sparse_coo_tensor([[1, 0, 1]], [1., 2., 3.], (3,))
>>> s.coalesce().indices().tolist(), s.coalesce().values().tolist(), s.to_dense().tolist()
([[0, 1]], [2.0, 4.0], [2.0, 4.0, 0.0])
"""
import numpy as np

from ..backends.cpu import cpu
from ..backends.sparse import LAYOUT_TITLES, make_coo, make_csr, refuse_other_layouts, register_kernel
from ..core import dtype as dt
from ..core.layout import sparse_coo, sparse_csr, strided
from ..core.tensor_impl import TensorImpl
from .derivative import derivative, nondifferentiable
from .dispatcher import call
from .meta_util import shape_str
from .registry import custom, get
from .sparse_invariants import checks_invariants
from ..core.overridable import overridable

xp = cpu.xp  # the sparse kernels compute on their dense parts, tensors of the CPU backend (backends/sparse.py)


# ---- dense tensors <-> NumPy arrays, for the kernels ----------------------------------------------------------------

def dense_from_array(arr, dtype=None):
    """A new contiguous CPU tensor holding a copy of `arr` (in `dtype`, or the array's own)."""
    dtype = dtype or dt.from_numpy_dtype(arr.dtype)
    out = cpu.empty(tuple(int(n) for n in arr.shape), dtype)
    cpu.array(out)[...] = arr
    return out


def parts(t):
    """(indices, values) arrays of a COO tensor."""
    p = t._storage
    return cpu.array(p.indices), cpu.array(p.values)


def coo_from_arrays(indices, values, size, coalesced, dtype=None):
    """A COO tensor over copies of the arrays `indices` (sparse_dim, nnz) and `values` (nnz, ...)."""
    return make_coo(dense_from_array(xp.asarray(indices, dtype=np.int64)), dense_from_array(values, dtype),
                    size, coalesced)


# ---- building and checking ------------------------------------------------------------------------------------------

def check_coo_invariants(indices, values, size):
    """The checks PyTorch runs with check_invariants=True: every index in [0, size) of its dim."""
    idx = cpu.array(indices)
    for d in range(idx.shape[0]):
        if idx.shape[1] == 0:
            break
        low, high = idx[d].min(), idx[d].max()
        if low < 0:
            raise RuntimeError(f"found negative index {low} for dim {d}")
        if high >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index "
                               f"{high}")


def _coo_with_dims_kernel(backend, sparse_dim, dense_dim, size, indices, values, is_coalesced=None):
    size = tuple(size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    if tuple(values._size[1:]) != size[sparse_dim:]:
        expected = [values._size[0], *size[sparse_dim:]]
        raise RuntimeError(f"values has incorrect size, expected {expected}, got {list(values._size)}")
    nnz = indices._size[1]
    coalesced = nnz <= 1 if is_coalesced is None else is_coalesced
    return make_coo(indices.detach(), values.detach(), size, coalesced)


custom("_sparse_coo_tensor_with_dims_and_tensors(int sparse_dim, int dense_dim, int[] size, Tensor indices, "
       "Tensor values, *, bool? is_coalesced=None) -> Tensor", _coo_with_dims_kernel, backends=("cpu",))


def dense_array(t):
    """A COO tensor's elements as a NumPy array (entries at one position summed)."""
    indices, values = parts(t)
    out = xp.zeros(t._size, dtype=values.dtype)
    xp.add.at(out, tuple(indices), values)
    return out


def _to_dense_kernel(self, dtype=None, masked_grad=None):
    return dense_from_array(dense_array(self), dtype or self.dtype)


custom("_to_dense(Tensor self, ScalarType? dtype=None, bool? masked_grad=None) -> Tensor", None, backends=())
register_kernel(get("_to_dense"), sparse_coo, _to_dense_kernel)


def _to_sparse_kernel(backend, self, sparse_dim=None):
    if sparse_dim is None:
        sparse_dim = self.dim()
    if not 0 <= sparse_dim <= self.dim():
        raise RuntimeError(f"sparse_dim argument must be in [0,{self.dim()}] range, but {sparse_dim} is given")
    arr = backend.array(self)
    blocks = arr.reshape(arr.shape[:sparse_dim] + (-1,)) if sparse_dim < arr.ndim else arr[..., None]
    present = (blocks != 0).any(axis=-1)
    indices = xp.stack(xp.nonzero(present)) if sparse_dim else xp.zeros((0, int(present)), np.int64)
    values = arr[tuple(indices)] if sparse_dim else arr[None][:int(present)]
    return coo_from_arrays(indices, values, self._size, True, self.dtype)


custom("_to_sparse(Tensor self, int? sparse_dim=None) -> Tensor", _to_sparse_kernel, backends=("cpu",))


def coalesce_arrays(indices, values, sparse_sizes):
    """(indices, values) with entries sorted by position and duplicates summed."""
    if indices.shape[1] == 0 or indices.shape[0] == 0:
        return indices, values
    linear = xp.ravel_multi_index(tuple(indices), sparse_sizes)
    unique, inverse = xp.unique(linear, return_inverse=True)
    summed = xp.zeros((len(unique),) + values.shape[1:], dtype=values.dtype)
    xp.add.at(summed, inverse, values)
    return xp.stack(xp.unravel_index(unique, sparse_sizes)), summed


def _coalesce_kernel(self):
    indices, values = parts(self)
    sparse_dim = self._storage.sparse_dim
    indices, values = coalesce_arrays(indices, values, self._size[:sparse_dim])
    return coo_from_arrays(indices, values, self._size, True, self.dtype)


custom("_coalesce(Tensor self) -> Tensor", None, backends=())
register_kernel(get("_coalesce"), sparse_coo, _coalesce_kernel)


# ---- the parts ------------------------------------------------------------------------------------------------------

def _part(name, needs_coalesced):
    """A kernel handing out an alias of the part `name` (same memory, no autograd history of its own)."""
    def kernel(self):
        if needs_coalesced and not self._storage.coalesced:
            raise RuntimeError(f"Cannot get {name} on an uncoalesced tensor, please call .coalesce() first")
        return getattr(self._storage, name).detach()
    return kernel


for _name, _needs in (("_indices", False), ("_values", False), ("indices", True), ("values", True)):
    custom(f"{_name}(Tensor(a) self) -> Tensor(a)", None, backends=())
    register_kernel(get(_name), sparse_coo, _part(_name.strip("_"), _needs))


def _sparse_mask_kernel(self, mask):
    """self's entries at mask's positions, as a sparse tensor with mask's indices (self dense or sparse)."""
    if self._size != mask._size:
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {shape_str(self._size)} "
                           f"but mask has size {shape_str(mask._size)}.")
    dense = dense_array(self) if self.layout is sparse_coo else cpu.array(self)
    indices = cpu.array(mask._storage.indices)
    return coo_from_arrays(indices, dense[tuple(indices)], mask._size, mask._storage.coalesced, self.dtype)


custom("sparse_mask(Tensor self, Tensor mask) -> Tensor", None, backends=())
register_kernel(get("sparse_mask"), sparse_coo, _sparse_mask_kernel)


def empty_sparse_like(input, dtype=None, layout=None):
    """A tensor like `input` with no specified elements, in `layout` (default: input's): what zeros_like and
    empty_like give for a sparse layout. A COO one keeps a COO input's sparse_dim."""
    layout = layout or input.layout
    dtype = dtype or input.dtype
    if layout is sparse_csr:
        rows = input._size[0] if input.dim() else 0
        return make_csr(dense_from_array(xp.zeros(rows + 1, np.int64)), dense_from_array(xp.zeros(0, np.int64)),
                        dense_from_array(xp.zeros(0, dtype.np), dtype), input._size)
    if layout is not sparse_coo:
        raise RuntimeError(f"lantern builds the sparse_coo and sparse_csr layouts, not {layout}")
    sparse_dim = input.sparse_dim() if input.layout is sparse_coo else input.dim()
    return coo_from_arrays(xp.zeros((sparse_dim, 0), np.int64), xp.zeros((0,) + input._size[sparse_dim:], dtype.np),
                           input._size, True, dtype)


# ---- the Python-level constructor (lantern.sparse_coo_tensor) ----------------------------------------------------

def sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A COO tensor from indices (sparse_dim, nnz) and values (nnz, *dense sizes); size defaults to the smallest
    that holds every index. Given a size alone (`sparse_coo_tensor((2, 3))`), an empty one of that size.

    >>> lantern.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4.]).to_dense().tolist()
    [[0.0, 0.0, 3.0], [4.0, 0.0, 0.0]]
    """
    from .._construct import as_tensor
    if values is None:
        size = tuple(indices if size is None else size)
        indices, values = xp.zeros((len(size), 0), np.int64), xp.zeros(0, (dtype or dt.get_default_dtype()).np)
    indices = as_tensor(indices, device=device)
    if indices.dtype is not dt.int64:
        indices = indices.to(dt.int64)
    values = as_tensor(values, dtype=dtype, device=device)
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices._size)}")
    sparse_dim, nnz = indices._size
    if values.dim() == 0 or values._size[0] != nnz:
        got = values._size[0] if values.dim() else "a 0-dim tensor"
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {got}")
    if size is None:
        top = cpu.array(indices).max(axis=1) + 1 if nnz else xp.zeros(sparse_dim, np.int64)
        size = tuple(int(n) for n in top) + tuple(values._size[1:])
    size = tuple(size)
    if checks_invariants(check_invariants):
        check_coo_invariants(indices, values, size)
    dense_dim = values.dim() - 1
    result = call(get("_sparse_coo_tensor_with_dims_and_tensors"),
                  (sparse_dim, dense_dim, size, indices, values, is_coalesced))
    if requires_grad:
        result.requires_grad_()
    return result


# ---- Tensor methods that are no ops (they read metadata) -----------------------------------------------------------

def _require_coo(t, what):
    if t.layout is not sparse_coo:
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got {LAYOUT_TITLES[t.layout.name]}")


class SparseCooMethods:
    """The COO tensor methods lantern.Tensor inherits (metadata reads and conversions)."""

    __slots__ = ()

    @overridable
    def is_coalesced(self):
        _require_coo(self, "is_coalesced")
        return self._storage.coalesced

    def _coalesced_(self, coalesced):
        _require_coo(self, "_coalesced_")
        self._storage.coalesced = bool(coalesced)
        return self

    @overridable
    def coalesce(self):
        """Entries sorted by position, duplicates summed; self when already coalesced."""
        _require_coo(self, "coalesce")
        return self if self._storage.coalesced else call(get("_coalesce"), (self,))

    def _indices(self):
        """The indices (sparse_dim, nnz), coalesced or not (an alias: no copy, no autograd history)."""
        return call(get("_indices"), (self,))

    def _values(self):
        """The values (nnz, *dense sizes), coalesced or not (an alias: no copy, no autograd history)."""
        return call(get("_values"), (self,))

    def _nnz(self):
        if self.layout is strided:
            raise NotImplementedError("Could not run '_nnz' with arguments from the 'CPU' backend: a strided "
                                      "tensor has no specified elements; use .to_sparse() first.")
        return self._storage.values._size[0]

    @overridable
    def sparse_dim(self):
        if self.layout is sparse_coo:
            return self._storage.sparse_dim
        return 2 if self.layout is sparse_csr else 0

    @overridable
    def dense_dim(self):
        if self.layout is sparse_coo:
            return self.dim() - self._storage.sparse_dim
        return 0 if self.layout is sparse_csr else self.dim()

    @overridable
    def to_dense(self, dtype=None, *, masked_grad=None):
        """A strided tensor with the same elements (self when it is strided already)."""
        if self.layout is strided:
            return self if dtype is None or dtype is self.dtype else self.to(dtype)
        return call(get("_to_dense"), (self, dtype, masked_grad))

    @overridable
    def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None):
        """to_sparse(sparse_dim) or to_sparse(layout=...): a COO (or CSR) tensor with the same elements."""
        if args and isinstance(args[0], TensorImpl):
            raise TypeError("to_sparse(): argument 'sparse_dim' must be int, not Tensor")
        sparse_dim = args[0] if args else None
        if layout is None or layout is sparse_coo:
            return self.to_sparse_coo(sparse_dim)
        if layout is sparse_csr:
            return self.to_sparse_csr(dense_dim)
        raise RuntimeError(f"to_sparse: conversion to the {layout.name} layout is not supported by lantern "
                           "(it builds sparse_coo and sparse_csr)")

    @overridable
    def to_sparse_coo(self, sparse_dim=None):
        if self.layout is sparse_coo:
            if sparse_dim is not None and sparse_dim != self._storage.sparse_dim:
                raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim argument != "
                                   f"self.sparse_dim() is not supported (self.sparse_dim() = "
                                   f"{self._storage.sparse_dim}, sparse_dim = {sparse_dim})")
            return self
        if self.layout is sparse_csr:
            return call(get("_csr_to_coo"), (self,))
        return call(get("_to_sparse"), (self, sparse_dim))


# ---- derivatives ----------------------------------------------------------------------------------------------------

def sparse_constructor_values_backward(grad, indices):
    """The gradient of the values of a sparse tensor: grad read at each entry's position. A sparse grad that names
    a position more than once (sparse_mask of an uncoalesced tensor does) holds that position's gradient in each
    copy, so its copies are averaged, not summed."""
    position = tuple(indices.unbind(0))
    if grad.layout is strided:
        return grad[position]
    copies = call(get("_sparse_coo_tensor_with_dims_and_tensors"),
                  (grad.sparse_dim(), 0, grad._size[:grad.sparse_dim()], grad._indices(),
                   grad._values().new_ones(grad._nnz()), None))
    counts = copies.to_dense().clamp(min=1)
    dense = grad.to_dense()
    return dense[position] / counts[position].view((-1,) + (1,) * (dense.dim() - len(position)))


def values_backward(grad, self):
    """A sparse tensor with self's indices and `grad` as values (the gradient flowing back from .values())."""
    if self.layout is sparse_csr:
        parts = self._storage
        return call(get("_sparse_csr_tensor_unsafe"), (parts.crow_indices, parts.col_indices, grad, self._size))
    indices = self._indices()
    return call(get("_sparse_coo_tensor_with_dims_and_tensors"),
                (indices._size[0], grad.dim() - 1, self._size, indices, grad, self.is_coalesced()))


def embedding_sparse_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    """Embedding(sparse=True)'s weight gradient: a COO tensor with one entry per lookup (padding_idx's left out), in
    lookup order and uncoalesced: row indices[k] gets grad's k-th row."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    rows = indices.reshape(-1).to(dt.int64)
    values = grad.reshape(-1, grad._size[-1])
    if padding_idx >= 0:
        kept = rows != padding_idx
        rows, values = rows[kept], values[kept]
    return call(get("_sparse_coo_tensor_with_dims_and_tensors"),
                (1, 1, (num_weights, grad._size[-1]), rows.unsqueeze(0), values, None))


_SPARSE_HELPERS = {"sparse_constructor_values_backward": sparse_constructor_values_backward,
                   "values_backward": values_backward}

derivative("_sparse_coo_tensor_with_dims_and_tensors", name="SparseCooTensorWithDimsAndTensorsBackward0",
           values="sparse_constructor_values_backward(grad, indices)", helpers=_SPARSE_HELPERS)
derivative("_to_sparse", name=lambda args: "ToSparseBackward1" if args[1] is None else "ToSparseBackward0",
           self="grad.to_dense()")
derivative("_coalesce", name="CoalesceBackward0", self="grad")
derivative("values", name="ValuesBackward0", self="values_backward(grad, self)", helpers=_SPARSE_HELPERS)
derivative("sparse_mask", name="SparseMaskBackward0", self="grad.to_dense()")
for _name in ("_indices", "_values", "indices"):
    nondifferentiable(_name)
refuse_other_layouts(get("indices"), "sparse coordinate tensor layout")
