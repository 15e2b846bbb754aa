"""SparseCPU kernels of dense ops (add, mul, mm, sum, ...) and the sparse-only math ops (torch.sparse.mm's
`_sparse_addmm`, `_sparse_sum`, `_sparse_softmax`).

A dense op reaches these kernels when one of its inputs is a COO tensor: the SparseCPU key outranks CPU (see
lantern.backends.sparse). Their derivatives are the dense ops' own; the sparse-only ops declare theirs below.
Matrix products run on SciPy's sparse kernels.

>>> s = lantern.tensor([[0., 2.], [3., 0.]]).to_sparse()
>>> (s @ lantern.ones(2, 1)).tolist(), (lantern.ones(2, 2) + s).tolist()
([[2.0], [3.0]], [[1.0, 3.0], [4.0, 1.0]])
"""
import numpy as np
from scipy import sparse as sp

from ..backends.cpu import cpu
from ..backends.sparse import register_kernel
from ..core import dtype as dt
from ..core.layout import sparse_coo, strided
from ..core.tensor_impl import TensorImpl
from .derivative import derivative
from .dispatcher import call
from .meta_util import operands_result_type, shape_str, wrap_dim
from .registry import custom, get
from .sparse_coo import coalesce_arrays, coo_from_arrays, dense_array, dense_from_array, parts, values_backward
from ..core.overridable import overridable

xp = cpu.xp  # the sparse kernels compute on their dense parts, tensors of the CPU backend (backends/sparse.py)

_array = cpu.array
_host = cpu.host_array  # SciPy's sparse matrices compute on NumPy arrays: the host arrays of the parts


def _is_coo(t):
    return isinstance(t, TensorImpl) and t.layout is sparse_coo


def _same_size(op_name, self, other, note=""):
    if self._size != other._size:
        raise RuntimeError(f"{op_name}: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(self._size)} while other has size {list(other._size)}{note}")


# ---- add / sub --------------------------------------------------------------------------------------------------

def _merge(self, other, alpha, dtype):
    """self + alpha * other of two COO tensors: their entries merged in position order, equal positions summed
    (a coalesced result when both are)."""
    ia, va = parts(self)
    ib, vb = parts(other)
    sparse_dim = self._storage.sparse_dim
    vb = vb * alpha
    if self._storage.coalesced and other._storage.coalesced:
        indices, values = coalesce_arrays(xp.concatenate([ia, ib], 1), xp.concatenate([va, vb]).astype(dtype.np),
                                          self._size[:sparse_dim])
        return coo_from_arrays(indices, values, self._size, True, dtype)
    sizes = self._size[:sparse_dim]
    la = xp.ravel_multi_index(tuple(ia), sizes) if ia.size else xp.zeros(ia.shape[1], np.int64)
    lb = xp.ravel_multi_index(tuple(ib), sizes) if ib.size else xp.zeros(ib.shape[1], np.int64)
    order, values, a, b = [], [], 0, 0
    while a < len(la) or b < len(lb):   # the merge step of a merge sort, as PyTorch's kernel walks the two lists
        if b == len(lb) or (a < len(la) and la[a] < lb[b]):
            order.append(ia[:, a]), values.append(va[a]); a += 1
        elif a == len(la) or lb[b] < la[a]:
            order.append(ib[:, b]), values.append(vb[b]); b += 1
        else:
            order.append(ia[:, a]), values.append(va[a] + vb[b]); a += 1; b += 1
    indices = xp.stack(order, 1) if order else xp.zeros((sparse_dim, 0), np.int64)
    values = xp.stack(values).astype(dtype.np) if values else xp.zeros((0,) + va.shape[1:], dtype.np)
    return coo_from_arrays(indices, values, self._size, False, dtype)


def _add_kernel(sign):
    def add(self, other, alpha=1):
        name = "add" if sign == 1 else "sub"
        alpha = alpha * sign
        dtype = operands_result_type((self, other))
        if not _is_coo(self):
            _same_size(name, self, other, " (FYI: dense-sparse addition does not currently support broadcasting)")
            out = xp.array(_array(self), dtype=dtype.np)
            indices, values = parts(other)
            xp.add.at(out, tuple(indices), values * alpha)
            return dense_from_array(out, dtype)
        if not _is_coo(other):
            raise RuntimeError(f"{name}(sparse, dense) is not supported. Use {name}(dense, sparse) instead.")
        _same_size(name, self, other)
        return _merge(self, other, alpha, dtype)
    return add


def _inplace_of(functional):
    """The in-place form of a kernel: a sparse self takes the result's parts, a dense self its elements."""
    def inplace(self, *args):
        result = functional(self, *args)
        if _is_coo(self):
            self._storage = result._storage
        else:
            _array(self)[...] = _array(result)
        self._bump_version()
        return self
    return inplace


for _name, _sign in (("add", 1), ("sub", -1)):
    register_kernel(get(_name), sparse_coo, _add_kernel(_sign))
    register_kernel(get(_name + "_"), sparse_coo, _inplace_of(_add_kernel(_sign)))


# ---- mul / div by a scalar or a dense tensor, zero-preserving elementwise functions -----------------------------

def _mul_kernel(self, other):
    if _is_coo(self) and _is_coo(other):
        return _mul_sparse_sparse(self, other)
    sparse, factor = (self, other) if _is_coo(self) else (other, self)
    indices, values = parts(sparse)
    dtype = operands_result_type((self, other))
    if isinstance(factor, TensorImpl):
        if factor.dim():
            _same_size("mul", self, other)
            factor = _array(factor)[tuple(indices)]
        else:
            factor = _array(factor)
    return coo_from_arrays(indices, (values * factor).astype(dtype.np), sparse._size, sparse._storage.coalesced,
                           dtype)


def _mul_sparse_sparse(self, other):
    """Entries of `other`, each times self's element at its position."""
    _same_size("mul", self, other)
    indices, values = parts(other)
    dtype = operands_result_type((self, other))
    found = dense_array(self)[tuple(indices)]
    return coo_from_arrays(indices, (values * found).astype(dtype.np), other._size, False, dtype)


def _div_kernel(self, other, rounding_mode=None):
    if _is_coo(other):
        raise RuntimeError("div(dense, sparse) is not supported: dividing by the unspecified (zero) elements "
                           "of a sparse tensor; use other.to_dense()")
    indices, values = parts(self)
    divisor = other if not isinstance(other, TensorImpl) else \
        _array(other)[tuple(indices)] if other.dim() else _array(other)
    result = xp.true_divide(values, divisor)
    if rounding_mode is None:
        dtype = self.dtype if self.dtype.is_floating_point or self.dtype.is_complex else dt.get_default_dtype()
    else:
        result = xp.floor(result) if rounding_mode == "floor" else xp.trunc(result)
        dtype = operands_result_type((self, other))
    return coo_from_arrays(indices, result.astype(dtype.np), self._size, self._storage.coalesced, dtype)


register_kernel(get("mul"), sparse_coo, _mul_kernel)
register_kernel(get("div"), sparse_coo, _div_kernel)
register_kernel(get("mul_"), sparse_coo, _inplace_of(_mul_kernel))
register_kernel(get("div_"), sparse_coo, _inplace_of(_div_kernel))


def _values_map(fn, linear=False):
    """A kernel applying `fn` to the values alone: right for functions with f(0) == 0 (neg, abs, sqrt, ...). A
    function that is not linear needs each position's value once: it runs on the coalesced tensor."""
    def kernel(self, *args):
        if not linear and not self._storage.coalesced:
            self = call(get("_coalesce"), (self,))
        indices, values = parts(self)
        result = fn(values)
        return coo_from_arrays(indices, result.astype(self.dtype.np), self._size, self._storage.coalesced,
                               self.dtype)
    return kernel


ZERO_PRESERVING = {"abs": xp.abs, "sqrt": xp.sqrt, "sin": xp.sin, "tan": xp.tan,
                   "tanh": xp.tanh, "asin": xp.arcsin, "atan": xp.arctan, "sinh": xp.sinh, "expm1": xp.expm1,
                   "log1p": xp.log1p, "relu": lambda v: xp.maximum(v, 0), "sign": xp.sign, "sgn": xp.sign, "trunc": xp.trunc,
                   "floor": xp.floor, "ceil": xp.ceil, "deg2rad": xp.deg2rad, "rad2deg": xp.rad2deg}
for _name, _fn in ZERO_PRESERVING.items():
    register_kernel(get(_name), sparse_coo, _values_map(_fn))
register_kernel(get("neg"), sparse_coo, _values_map(xp.negative, linear=True))
register_kernel(get("clone"), sparse_coo, lambda self, memory_format=None: _values_map(xp.copy, linear=True)(self))


def _to_copy_kernel(self, dtype=None, device=None, memory_format=None):
    if device is not None and str(device) != "cpu":
        raise RuntimeError(f"lantern's sparse tensors live on the CPU; cannot move one to {device}")
    indices, values = parts(self)
    dtype = dtype or self.dtype
    return coo_from_arrays(indices, values.astype(dtype.np), self._size, self._storage.coalesced, dtype)


register_kernel(get("_to_copy"), sparse_coo, _to_copy_kernel)


def _zero_kernel(self):
    """zero_: no specified elements left (the sizes stay)."""
    sparse_dim = self._storage.sparse_dim
    empty = coo_from_arrays(xp.zeros((sparse_dim, 0), np.int64),
                            xp.zeros((0,) + self._size[sparse_dim:], self.dtype.np), self._size, True, self.dtype)
    self._storage = empty._storage
    self._bump_version()
    return self


register_kernel(get("zero_"), sparse_coo, _zero_kernel)


def transpose_kernel(self, dim0=0, dim1=1):
    sparse_dim = self._storage.sparse_dim
    d0, d1 = wrap_dim(dim0, self.dim()), wrap_dim(dim1, self.dim())
    if d0 >= sparse_dim or d1 >= sparse_dim:
        raise RuntimeError(f"transpose(): cannot swap a dense dim of a hybrid sparse tensor (dims {d0} and {d1}, "
                           f"sparse_dim = {sparse_dim})")
    indices, values = parts(self)
    indices = indices.copy()
    indices[[d0, d1]] = indices[[d1, d0]]
    size = list(self._size)
    size[d0], size[d1] = size[d1], size[d0]
    return coo_from_arrays(indices, values, tuple(size), False, self.dtype)


def _t_kernel(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                           f"{self._storage.sparse_dim} sparse and {self.dim() - self._storage.sparse_dim} dense "
                           "dimensions")
    return transpose_kernel(self, 0, 1) if self.dim() == 2 else self


register_kernel(get("t"), sparse_coo, _t_kernel)
register_kernel(get("transpose"), sparse_coo, transpose_kernel)


# ---- matrix products --------------------------------------------------------------------------------------------

def scipy_matrix(t):
    """A 2-D COO tensor (no dense dims) as a SciPy CSR matrix (duplicates summed)."""
    if t.dim() != 2 or t._storage.sparse_dim != 2:
        raise RuntimeError(f"lantern's sparse matrix products take 2-D COO tensors with 2 sparse dims; got size "
                           f"{shape_str(t._size)} with sparse_dim {t._storage.sparse_dim}")
    indices, values = _host(t._storage.indices), _host(t._storage.values)
    return sp.csr_matrix((values, (indices[0], indices[1])), shape=t._size)


def _check_mm(name, a, b):
    if a.dim() != 2 or b.dim() != 2:
        raise RuntimeError(f"{name}: expected 2D matrices, got {a.dim()}D and {b.dim()}D tensors")
    if a._size[1] != b._size[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {a._size[1]}, got {b._size[0]} ({name}"
                           f" of {shape_str(a._size)} and {shape_str(b._size)}: mat1's columns must match mat2's rows)")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}: expected mat1 and mat2 to have the same dtype, but got: {a.dtype.legacy} != "
                           f"{b.dtype.legacy}")


def sparse_product(a, b):
    """a @ b for 2-D operands, one or both COO: dense unless both are sparse (then a coalesced COO tensor)."""
    if _is_coo(a) and _is_coo(b):
        product = (scipy_matrix(a) @ scipy_matrix(b)).tocoo()
        product.sum_duplicates()
        indices = xp.stack([xp.asarray(product.row), xp.asarray(product.col)]).astype(np.int64)
        return coo_from_arrays(indices, product.data.astype(a.dtype.np), (a._size[0], b._size[1]), True, a.dtype)
    if _is_coo(a):
        result = scipy_matrix(a) @ _host(b)
    else:
        result = (scipy_matrix(b).T @ _host(a).T).T
    return dense_from_array(xp.asarray(result, dtype=a.dtype.np), a.dtype)


def _mm_kernel(self, mat2):
    _check_mm("mm", self, mat2)
    return sparse_product(self, mat2)


def _mv_kernel(self, vec):
    if self.dim() != 2 or vec.dim() != 1 or self._size[1] != vec._size[0]:
        raise RuntimeError(f"mv: expected self.size(-1) == vec.size(-1) (got {shape_str(self._size)} and "
                           f"{shape_str(vec._size)})")
    return dense_from_array(xp.asarray(scipy_matrix(self) @ _host(vec), dtype=self.dtype.np), self.dtype)


def _addmm_kernel(self, mat1, mat2, beta=1, alpha=1):
    """beta * self + alpha * (mat1 @ mat2), self dense."""
    _check_mm("addmm", mat1, mat2)
    if _is_coo(self):
        raise RuntimeError("addmm: a sparse `self` is not supported by lantern; pass a dense tensor")
    product = sparse_product(mat1, mat2)
    product = dense_array(product) if _is_coo(product) else _array(product)
    base = xp.broadcast_to(_array(self), product.shape)
    result = product * alpha if beta == 0 else base * beta + product * alpha
    return dense_from_array(xp.asarray(result, dtype=mat1.dtype.np), mat1.dtype)


register_kernel(get("mm"), sparse_coo, _mm_kernel)
register_kernel(get("mv"), sparse_coo, _mv_kernel)
register_kernel(get("addmm"), sparse_coo, _addmm_kernel)

custom("_sparse_addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", None,
       backends=(), method=False)


def _sparse_addmm_kernel(self, mat1, mat2, beta=1, alpha=1):
    if not _is_coo(mat1):
        raise RuntimeError("torch.sparse.mm / addmm: mat1 must be a sparse COO tensor (got a strided one)")
    if _is_coo(mat2):
        _check_mm("sparse.mm", mat1, mat2)
        product = sparse_product(mat1, mat2)
        return product if beta == 0 else call(get("add"), (self * beta, product, alpha))
    return _addmm_kernel(self, mat1, mat2, beta, alpha)


register_kernel(get("_sparse_addmm"), sparse_coo, _sparse_addmm_kernel)


# ---- reductions -------------------------------------------------------------------------------------------------

def _sum_dtype(dtype):
    return dt.int64 if not dtype.is_floating_point and not dtype.is_complex else dtype


def sparse_sum(self, dim=None):
    """torch.sparse.sum: over every element (a dense 0-dim tensor), or over `dim`: a sparse tensor of the sparse dims
    left (coalesced), or a dense one when no sparse dim is left."""
    indices, values = parts(self)
    dtype = _sum_dtype(self.dtype)
    if dim is None:
        return dense_from_array(xp.asarray(values.sum(dtype=dtype.np)), dtype)
    dims = sorted({wrap_dim(d, self.dim()) for d in ([dim] if isinstance(dim, int) else dim)})
    sparse_dim = self._storage.sparse_dim
    summed_sparse = [d for d in dims if d < sparse_dim]
    dense_axes = tuple(d - sparse_dim + 1 for d in dims if d >= sparse_dim)
    values = values.sum(axis=dense_axes, dtype=dtype.np) if dense_axes else values.astype(dtype.np)
    kept = [d for d in range(sparse_dim) if d not in summed_sparse]
    size = tuple(n for d, n in enumerate(self._size) if d not in dims)
    if not kept:
        return dense_from_array(values.sum(axis=0), dtype)
    kept_sizes = tuple(self._size[d] for d in kept)
    new_indices, new_values = coalesce_arrays(indices[kept], values, kept_sizes)
    return coo_from_arrays(new_indices, new_values, size, True, dtype)


def sparse_sum_kernel(self, dim=None, keepdim=False, dtype=None):
    if keepdim:
        raise RuntimeError("sum: keepdim=True is not supported for sparse tensors by lantern")
    if isinstance(dim, int):
        dim = [dim]
    result = sparse_sum(self, dim if dim else None)   # dim=[] sums everything, as dim=None does
    return result if dtype is None else result.to(dtype)


register_kernel(get("sum"), sparse_coo, sparse_sum_kernel)

custom("_sparse_sum(Tensor self, int[]? dim=None) -> Tensor", None, backends=(), method=False)
register_kernel(get("_sparse_sum"), sparse_coo, sparse_sum)


# ---- softmax over the specified elements ------------------------------------------------------------------------

def _groups(indices, sizes, dim):
    """For each entry, the number of its line along sparse `dim` (entries equal in every other sparse index)."""
    others = [d for d in range(indices.shape[0]) if d != dim]
    if not others:
        return xp.zeros(indices.shape[1], np.int64), 1
    linear = xp.ravel_multi_index(tuple(indices[others]), tuple(sizes[d] for d in others))
    unique, inverse = xp.unique(linear, return_inverse=True)
    return inverse.reshape(-1), len(unique)


def _group_sum(x, groups, count):
    """Each entry's line total (x summed over the entries of its group)."""
    out = xp.zeros((count,) + x.shape[1:], dtype=x.dtype)
    xp.add.at(out, groups, x)
    return out[groups]


def _softmax_values(self, dim, log):
    """(coalesced self, its softmax values along dim): unspecified elements count as -inf, so they take no part."""
    self = self.coalesce()
    indices, values = parts(self)
    sparse_dim = self._storage.sparse_dim
    dim = wrap_dim(dim, self.dim())
    if dim >= sparse_dim:
        axis = dim - sparse_dim + 1
        shifted = values - values.max(axis=axis, keepdims=True) if values.size else values
        total = xp.exp(shifted).sum(axis=axis, keepdims=True)
        return self, (shifted - xp.log(total)) if log else xp.exp(shifted) / total
    groups, count = _groups(indices, self._size, dim)
    top = xp.full((count,) + values.shape[1:], -xp.inf, dtype=values.dtype)
    xp.maximum.at(top, groups, values)
    shifted = values - top[groups]
    total = _group_sum(xp.exp(shifted), groups, count)
    return self, (shifted - xp.log(total)) if log else xp.exp(shifted) / total


def _softmax_kernel(log):
    def kernel(self, dim, half_to_float=False):
        coalesced, values = _softmax_values(self, dim, log)
        return coo_from_arrays(parts(coalesced)[0], values.astype(self.dtype.np), self._size, True, self.dtype)
    return kernel


for _name, _log in (("_sparse_softmax", False), ("_sparse_log_softmax", True)):
    custom(f"{_name}(Tensor self, int dim, bool half_to_float=False) -> Tensor", None, backends=(), method=False)
    register_kernel(get(_name), sparse_coo, _softmax_kernel(_log))


# ---- derivatives of the sparse-only ops ---------------------------------------------------------------------------

def sparse_mat1_backward(grad, mat1, mat2, alpha):
    """The gradient of torch.sparse.mm's sparse operand: grad @ mat2ᵀ read at mat1's positions (sparse)."""
    product = grad.mm(mat2.t().to_dense() if mat2.layout is not strided else mat2.t())
    return product.sparse_mask(mat1) * alpha if alpha != 1 else product.sparse_mask(mat1)


def sparse_sum_backward(grad, self, dim):
    """The gradient of torch.sparse.sum: grad spread over self's entries (a COO tensor with self's indices)."""
    indices = self._indices()
    values_size = (indices._size[1],) + tuple(self._size[self.sparse_dim():])
    if dim is None:
        return values_backward(grad.expand(values_size), self)
    sparse_dim = self.sparse_dim()
    dims = sorted({wrap_dim(d, self.dim()) for d in ([dim] if isinstance(dim, int) else dim)})
    kept = [d for d in range(sparse_dim) if d not in dims]
    dense = grad.to_dense()
    picked = dense[tuple(indices[d] for d in kept)] if kept else dense.unsqueeze(0)
    for d in dims:
        if d >= sparse_dim:
            picked = picked.unsqueeze(d - sparse_dim + 1)
    return values_backward(picked.expand(values_size), self)


def sparse_softmax_backward(grad, result, dim, log):
    """The gradient of torch.sparse.softmax (log_softmax with `log`) at result's entries, written with lantern ops
    so that it is differentiable again: out·(g − Σ g·out) (g − exp(out)·Σ g), each sum over the entries of one
    line along `dim`."""
    indices = result._indices()
    out = result.values()
    sparse_dim = result.sparse_dim()
    dim = wrap_dim(dim, result.dim())
    g = grad.to_dense()[tuple(indices.unbind(0))]
    if dim >= sparse_dim:
        def line_sum(x):
            return x.sum(dim - sparse_dim + 1, keepdim=True)
    else:
        groups, count = _groups(_array(indices), result._size, dim)
        groups = dense_from_array(groups)

        def line_sum(x):
            return x.new_zeros((count,) + tuple(x._size[1:])).index_add(0, groups, x)[groups]
    values = g - out.exp() * line_sum(g) if log else out * (g - line_sum(g * out))
    return values_backward(values, result)


_HELPERS = {"sparse_mat1_backward": sparse_mat1_backward, "sparse_sum_backward": sparse_sum_backward,
            "sparse_softmax_backward": sparse_softmax_backward}

derivative("_sparse_addmm", name="SparseAddmmBackward0", self="grad if beta == 1 else grad * beta",
           mat1="sparse_mat1_backward(grad, mat1, mat2, alpha)",
           mat2="mat1.t().mm(grad) if alpha == 1 else mat1.t().mm(grad) * alpha", helpers=_HELPERS)
derivative("_sparse_sum", name="SparseSumBackward0", self="sparse_sum_backward(grad, self, dim)", helpers=_HELPERS)
derivative("_sparse_softmax", name="SparseSoftmaxBackward0", self="sparse_softmax_backward(grad, result, dim, False)",
           helpers=_HELPERS)
derivative("_sparse_log_softmax", name="SparseLogSoftmaxBackward0",
           self="sparse_softmax_backward(grad, result, dim, True)", helpers=_HELPERS)


@overridable
def spmm(input, mat2):
    """torch.spmm: the matrix product mm, kept under its sparse name (either operand may be sparse)."""
    return call(get("mm"), (input, mat2))
