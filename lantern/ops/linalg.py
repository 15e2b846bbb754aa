"""Linear algebra: matrix products (mm, bmm, dot, mv, matmul; addmm, addmv, addbmm, baddbmm, vdot) through BLAS
(NumPy's matmul), norms, and torch.linalg's decompositions and solvers over numpy.linalg, batched over leading dims.

Decomposition outputs are laid out as LAPACK writes them, column-major in each matrix (strides (1, n) in the last
two dims), as PyTorch's are. `LINALG_ALL` lists what `lantern.linalg` exports.

>>> (lantern.ones(2, 3) @ lantern.ones(3)).shape, lantern.matmul(lantern.ones(1, 2, 3), lantern.ones(6, 3, 4)).shape
(lantern.Size([2]), lantern.Size([6, 2, 4]))
>>> lantern.linalg.inv(lantern.tensor([[2., 0.], [0., 4.]])).tolist()
[[0.5, 0.0], [0.0, 0.25]]
>>> lantern.addmm(lantern.ones(2), lantern.eye(2), lantern.eye(2), beta=2).tolist()
[[3.0, 2.0], [2.0, 3.0]]
"""
import math
from functools import partial

import numpy as np

from ..core import dtype as dt
from .dispatcher import call
from .meta_util import broadcast_shapes, shape_str, wrap_dims
from .pointwise import _require_tensor
from .reduction import out_return_type, reduced_shape, return_type
from .registry import composite, custom, get, structured
from .derivative import derivative
from .derivative_helpers import conj, unsqueeze_reduced, zeros_like
from .nn_common import eager_backend


def _same_dtype(name, a, b):
    """One dtype for both operands, and not bool unless the product has nothing to sum (PyTorch's kernels then
    return zeros for any dtype)."""
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype.name} != {b.dtype.name} "
                           f"(in {name}; cast one with .to(dtype))")
    if a.dtype is dt.bool and a.numel() and b.numel():
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")


def _mm_meta(a, b):
    _require_tensor("mm", a)
    _require_tensor("mm", b, 2, "mat2")
    if a.dim() != 2:
        raise RuntimeError(f"self must be a matrix (mm got a {a.dim()}-D tensor of shape {list(a._size)})")
    if b.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix (mm got a {b.dim()}-D tensor of shape {list(b._size)})")
    if a._size[1] != b._size[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._size[0]}x{a._size[1]} and "
                           f"{b._size[0]}x{b._size[1]})")
    _same_dtype("mm", a, b)
    return (a._size[0], b._size[1]), a.dtype


def _matmul_impl(xp, out, dtype, a, b):
    xp.matmul(a, b, out=out)


structured("mm(Tensor self, Tensor mat2) -> Tensor", _mm_meta, _matmul_impl, inplace=False, exact_out_dtype=True)


def _bmm_meta(a, b):
    _require_tensor("bmm", a)
    _require_tensor("bmm", b, 2, "mat2")
    if a.dim() != 3 or b.dim() != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (bmm got shapes {list(a._size)} and {list(b._size)})")
    if a._size[0] != b._size[0] or a._size[2] != b._size[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a._size[0]}, "
                           f"{a._size[2]}] but got: [{b._size[0]}, {b._size[1]}].")
    shape = (a._size[0], a._size[1], b._size[2])
    if a.numel() == 0 or b.numel() == 0:  # PyTorch's bmm then only zeroes a result of mat2's dtype
        return shape, b.dtype
    if a.dtype is dt.bool:  # PyTorch's bmm refuses a bool self before it compares the dtypes
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    _same_dtype("bmm", a, b)
    return shape, a.dtype


def _bmm_impl(xp, out, dtype, a, b):
    if a.size == 0 or b.size == 0:
        out[...] = 0
    else:
        xp.matmul(a, b, out=out)


structured("bmm(Tensor self, Tensor mat2) -> Tensor", _bmm_meta, _bmm_impl, inplace=False, exact_out_dtype=True)


def _vector_product_meta(name, other_name):
    """dot and vdot: two 1-D tensors of one length and one dtype."""
    def meta(a, b):
        _require_tensor(name, a)
        _require_tensor(name, b, 2, other_name)
        if a.dim() != 1 or b.dim() != 1:
            raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors ({name}: flatten "
                               "the inputs with .reshape(-1))")
        if a._size[0] != b._size[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{a._size[0]}] and src [{b._size[0]}] to "
                               f"have the same number of elements, but got {a._size[0]} and {b._size[0]} elements "
                               "respectively")
        if a.dtype is not b.dtype:
            raise RuntimeError(f"{name} : expected both vectors to have same dtype, but found {a.dtype.legacy} and "
                               f"{b.dtype.legacy}")
        if a.dtype is dt.bool:
            raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")
        return (), a.dtype
    return meta


_dot_meta = _vector_product_meta("dot", "tensor")


def _dot_impl(xp, out, dtype, a, b):
    out[...] = xp.dot(a, b)


structured("dot(Tensor self, Tensor tensor) -> Tensor", _dot_meta, _dot_impl, inplace=False, exact_out_dtype=True)


def _mv_meta(a, v):
    _require_tensor("mv", a)
    _require_tensor("mv", v, 2, "vec")
    if a.dim() != 2 or v.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {a.dim()}, {v.dim()}")
    if a._size[1] != v._size[0]:
        raise RuntimeError(f"size mismatch, got input ({a._size[0]}), mat ({a._size[0]}x{a._size[1]}), vec "
                           f"({v._size[0]})")
    _same_dtype("mv", a, v)
    return (a._size[0],), a.dtype


structured("mv(Tensor self, Tensor vec) -> Tensor", _mv_meta, _matmul_impl, inplace=False, exact_out_dtype=True)

_mm, _bmm, _dot, _mv = get("mm"), get("bmm"), get("dot"), get("mv")


def matmul(input, other, *, out=None):
    """PyTorch's matmul: dot, mv, mm or a broadcast bmm, choosing by the operands' dims (a composite op).

    With out=, the result is copied into `out` (of the same dtype), which is resized as out= tensors are.

    >>> lantern.matmul(lantern.ones(3), lantern.ones(3, 2)).tolist()
    [3.0, 3.0]
    """
    result = _matmul(input, other)
    if out is None:
        return result
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype.name}, but got {out.dtype.name} instead "
                           "(matmul: pass an out of the operands' dtype)")
    from ..backends.base import resize_out
    resize_out(out, result._size, "matmul.out")
    return out.copy_(result)


def _matmul(input, other):
    _require_tensor("matmul", input)
    _require_tensor("matmul", other, 2, "other")
    da, db = input.dim(), other.dim()
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        return call(_dot, (input, other))
    if da == 2 and db == 1:
        return call(_mv, (input, other))
    if da == 1 and db == 2:
        return call(_mm, (input.unsqueeze(0), other)).squeeze(0)
    if da == 2 and db == 2:
        return call(_mm, (input, other))
    if da >= 3 and db <= 2:
        # fold the batch into the rows: one BLAS call instead of a batched product
        rows = input.reshape(_prod(input._size[:-1]), input._size[-1])  # not -1: an empty k leaves it unknown
        if db == 1:
            return call(_mv, (rows, other)).view(input._size[:-1])
        return call(_mm, (rows, other)).view(input._size[:-1] + (other._size[-1],))
    # general case: broadcast the batch dims, then bmm
    a = input.unsqueeze(0) if da == 1 else input
    b = other.unsqueeze(-1) if db == 1 else other
    batch = broadcast_shapes(a._size[:-2], b._size[:-2])
    n, k, m = a._size[-2], a._size[-1], b._size[-1]
    if b._size[-2] != k:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{_prod(batch)}, {k}] but got: [{_prod(batch)}, {b._size[-2]}].")
    if (da == 1 or db == 1) and input.dtype is not other.dtype and (a.numel() == 0 or b.numel() == 0):
        _same_dtype("matmul", input, other)  # PyTorch folds a 1-D operand into mv, which checks even when empty
    a3 = a.expand(batch + (n, k)).reshape(_prod(batch), n, k)
    b3 = b.expand(batch + (k, m)).reshape(_prod(batch), k, m)
    out = call(_bmm, (a3, b3)).view(batch + (n, m))
    if da == 1:
        out = out.squeeze(-2)
    if db == 1:
        out = out.squeeze(-1)
    return out


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


composite("matmul", matmul)


# ---- matrix products with an added input: beta * self + alpha * (product) ------------------------------------

def _check_added(name, self, shape):
    """`self` must broadcast to the product's shape, as expand() allows."""
    _require_tensor(name, self)
    lead = len(shape) - self.dim()
    for d, n in enumerate(self._size):
        if lead < 0 or (n != 1 and n != shape[lead + d]):
            target = shape[lead + d] if lead >= 0 else "?"
            raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing size ({n}) at "
                               f"non-singleton dimension {lead + d}.  Target sizes: {shape_str(shape)}.  Tensor "
                               f"sizes: {shape_str(self._size)} ({name}: self must broadcast to the product's shape)")


def _check_self_dtype(name, self, other):
    if self.dtype is not other.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {self.dtype.legacy} and "
                           f"{other.dtype.legacy} ({name}: cast them with .to(dtype))")


def _addmm_meta(self, mat1, mat2, beta=1, alpha=1):
    shape, dtype = _mm_meta(mat1, mat2)
    _check_added("addmm", self, shape)
    _check_self_dtype("addmm", self, mat1)
    return shape, dtype


_LOW_PRECISION = (np.dtype(np.float16), dt.bfloat16.np)


def _product(fn, a, b):
    """a @ b (or fn's product), computed in float32 for float16/bfloat16 inputs as PyTorch accumulates them."""
    if a.dtype in _LOW_PRECISION:
        return fn(a.astype(np.float32), b.astype(np.float32))
    return fn(a, b)


def _write_added(out, self, product, beta, alpha):
    """out = beta * self + alpha * product; beta == 0 ignores self (nan and inf in it included), as in BLAS.
    `product` may be `out` itself (already holding the product)."""
    if out.dtype.kind in "iub":  # integer products take integer scalars, as PyTorch casts them to the dtype
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        product *= alpha
    if beta != 0:
        product += self if beta == 1 else self * beta
    if product is not out:
        out[...] = product


def _addmm_impl(xp, out, dtype, self, mat1, mat2, beta=1, alpha=1):
    if out.dtype in _LOW_PRECISION or any(xp.may_share_memory(out, a) for a in (self, mat1, mat2)):
        product = _product(xp.matmul, mat1, mat2)
    else:  # the common case: BLAS writes straight into the output
        product = xp.matmul(mat1, mat2, out=out)
    _write_added(out, self, product, beta, alpha)


structured("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
           _addmm_meta, _addmm_impl, exact_out_dtype=True)


def _addmv_meta(self, mat, vec, beta=1, alpha=1):
    shape, dtype = _mv_meta(mat, vec)
    _check_added("addmv", self, shape)
    _check_self_dtype("addmv", self, mat)
    return shape, dtype


structured("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
           _addmv_meta, _addmm_impl, exact_out_dtype=True)


def _check_batches(name, batch1, batch2):
    for t in (batch1, batch2):
        _require_tensor(name, t)
        if t.dim() != 3:
            n = max(t.dim(), 1)
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got 2) ({name}: "
                             f"batch1 and batch2 must be 3-D, got shapes {shape_str(batch1._size)} and "
                             f"{shape_str(batch2._size)})")


def _baddbmm_meta(self, batch1, batch2, beta=1, alpha=1):
    _check_batches("baddbmm", batch1, batch2)
    shape, dtype = _bmm_meta(batch1, batch2)
    _check_added("baddbmm", self, shape)
    _check_self_dtype("baddbmm", self, batch1)
    return shape, dtype


structured("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
           _baddbmm_meta, _addmm_impl, exact_out_dtype=True)


def _addbmm_meta(self, batch1, batch2, beta=1, alpha=1):
    _check_batches("addbmm", batch1, batch2)
    shape, dtype = _bmm_meta(batch1, batch2)
    shape = shape[1:]
    _check_added("addbmm", self, shape)
    _check_self_dtype("addbmm", self, batch1)
    return shape, dtype


def _batch_sum_product(a, b):
    """Σ_b a[b] @ b[b] as one BLAS call: (n, B·k) @ (B·k, m)."""
    batches, n, k = a.shape
    m = b.shape[2]
    return a.transpose(1, 0, 2).reshape(n, batches * k) @ b.reshape(batches * k, m)


def _addbmm_impl(xp, out, dtype, self, batch1, batch2, beta=1, alpha=1):
    _write_added(out, self, _product(_batch_sum_product, batch1, batch2), beta, alpha)


structured("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
           _addbmm_meta, _addbmm_impl, exact_out_dtype=True)


_vdot_meta = _vector_product_meta("vdot", "other")


def _vdot_impl(xp, out, dtype, a, b):
    out[...] = xp.vdot(a, b)


structured("vdot(Tensor self, Tensor other) -> Tensor", _vdot_meta, _vdot_impl, inplace=False, exact_out_dtype=True)


# ---- shared checks and layouts of torch.linalg -------------------------------------------------------------

class LinAlgError(RuntimeError):
    """A matrix the operation cannot handle (singular, not positive-definite): torch.linalg.LinAlgError."""


LinAlgError.__module__ = "lantern.linalg"


def _check_matrices(name, A, argname="A", square=True):
    """A batch of (square) float or complex matrices, as every torch.linalg decomposition needs."""
    _require_tensor(name, A, 1, argname)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {argname} must have at least 2 dimensions.")
    if A.dtype.category < dt.FLOATING:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.legacy}")
    if A.dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {A.dtype.legacy}")
    if square and A._size[-1] != A._size[-2]:
        raise RuntimeError(f"{name}: {argname} must be batches of square matrices, but they are "
                           f"{A._size[-2]} by {A._size[-1]} matrices")


def _matrix_strides(shape):
    """Row-major over the batch, column-major inside each matrix: LAPACK's layout, which PyTorch keeps."""
    rows, cols = shape[-2], shape[-1]
    strides = [1, max(rows, 1)]
    acc = max(rows, 1) * max(cols, 1)
    for n in reversed(shape[:-2]):
        strides.insert(0, acc)
        acc *= max(n, 1)
    return tuple(strides)


def _new_matrices(backend, shape, dtype):
    """A new tensor in LAPACK's layout."""
    return backend.empty_strided(tuple(shape), _matrix_strides(shape), dtype)


def _batch_prefix(index):
    """PyTorch's '(Batch element i): ' naming the failing matrix of a batch."""
    return f"(Batch element {index}): " if index is not None else ""


def _first_failure(info, batched):
    """(batch index or None, info value) of the first failing matrix, or None when all succeeded."""
    bad = np.flatnonzero(info.reshape(-1))
    if not bad.size:
        return None
    return (int(bad[0]) if batched else None), int(info.reshape(-1)[bad[0]])


def _lu_info(a):
    """LAPACK getrf's info per matrix: the 1-based index of the first zero pivot of U, 0 when there is none."""
    import scipy.linalg
    if a.shape[-1] == 0:
        return np.zeros(a.shape[:-2], np.int32)
    u = scipy.linalg.lu(a)[2]
    zero = np.diagonal(u, axis1=-2, axis2=-1) == 0
    return np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)


def _singular_error(name, A, info, what):
    failure = _first_failure(info, A.dim() > 2)
    if failure is not None:
        index, value = failure
        raise LinAlgError(f"{name}: {_batch_prefix(index)}The diagonal element {value} is zero, the {what} could not "
                          "be completed because the input matrix is singular.")


# ---- inverse, determinants ----------------------------------------------------------------------------------

inv_ex_rt = return_type("linalg_inv_ex", ["inverse", "info"])
slogdet_rt = return_type("linalg_slogdet", ["sign", "logabsdet"])
cholesky_ex_rt = return_type("linalg_cholesky_ex", ["L", "info"])


def _inv_ex(backend, A, check_errors=False):
    _check_matrices("linalg.inv_ex", A)
    inverse = _new_matrices(backend, A._size, A.dtype)
    info = backend.empty(A._size[:-2], dt.int32)
    if backend.xp is None:
        return inv_ex_rt(inverse, info)
    a = backend.array(A)
    try:
        values, codes = np.linalg.inv(a), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:  # NumPy refuses the whole batch: invert only the invertible matrices
        codes = _lu_info(a)
        values = np.full(a.shape, np.nan, a.dtype)
        invertible = codes == 0
        values[invertible] = np.linalg.inv(a[invertible])
    if check_errors:
        _singular_error("linalg.inv_ex", A, codes, "inversion")
    backend.array(inverse)[...] = values
    backend.array(info)[...] = codes
    return inv_ex_rt(inverse, info)


custom("linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)", _inv_ex, _inv_ex)


def inv(A, *, out=None):
    """The inverse of each square matrix of A; a singular matrix raises lantern.linalg.LinAlgError.

    >>> lantern.linalg.inv(lantern.tensor([[1., 2.], [3., 4.]])).tolist()
    [[-2.0, 1.0], [1.5, -0.5]]
    """
    _check_matrices("linalg.inv", A)
    inverse, info = call(get("linalg_inv_ex"), (A, False))
    if info.numel() and info._backend.xp is not None:
        _singular_error("linalg.inv", A, info._backend.array(info), "inversion")
    return _into(out, inverse, "linalg.inv")


def inv_ex(A, *, check_errors=False):
    """(inverse, info): info is LAPACK's per matrix (0, or the index of U's first zero pivot) instead of an error."""
    return call(get("linalg_inv_ex"), (A, check_errors))


def _into(out, result, name):
    """Copy a composite's result into out= (resized as out= tensors are, dtype checked)."""
    if out is None:
        return result
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype.name}, but got {out.dtype.name} instead "
                           f"({name}: pass an out of the result's dtype)")
    from ..backends.base import resize_out
    resize_out(out, result._size, name)
    return out.copy_(result)


def _det(backend, A):
    _check_matrices("linalg.det", A)
    out = backend.empty(A._size[:-2], A.dtype)
    if backend.xp is not None and A.numel():
        backend.array(out)[...] = np.linalg.det(backend.array(A))
    elif backend.xp is not None:
        backend.array(out)[...] = 1
    return out


custom("linalg_det(Tensor A) -> Tensor", _det, _det)


def det(A, *, out=None):
    """The determinant of each square matrix (torch.det is the same function).

    >>> lantern.linalg.det(lantern.tensor([[1., 2.], [3., 4.]])).item()
    -2.0
    """
    return _into(out, call(get("linalg_det"), (A,)), "linalg.det")


def _slogdet(backend, A):
    _check_matrices("linalg.slogdet", A)
    batch = A._size[:-2]
    sign, logabsdet = backend.empty(batch, A.dtype), backend.empty(batch, A.dtype.to_real())
    if backend.xp is not None and sign.numel():
        s, l = np.linalg.slogdet(backend.array(A))
        backend.array(sign)[...] = s
        backend.array(logabsdet)[...] = l
    return slogdet_rt(sign, logabsdet)


custom("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", _slogdet, _slogdet)


def slogdet(A, *, out=None):
    """(sign, log|det|) of each square matrix: the determinant without overflow or underflow."""
    result = call(get("linalg_slogdet"), (A,))
    if out is None:
        return result
    return out_return_type(slogdet_rt)(*(_into(o, r, "linalg.slogdet") for o, r in zip(out, result)))


def logdet(input):
    """log det A: nan where a real determinant is negative, log(sign) + log|det| for complex A."""
    sign, logabsdet = call(get("linalg_slogdet"), (input,))
    if input.dtype.is_complex:
        return sign.log() + logabsdet.to(input.dtype)
    return call(get("where"), (sign < 0, math.nan, logabsdet))


# ---- solve ---------------------------------------------------------------------------------------------------

def _solve_shape(A, B, left):
    """(result shape, vector case): B is a vector when 1-D or shaped like A without its last dim (PyTorch's rule)."""
    name = "linalg.solve"
    _check_matrices(name, A)
    _require_tensor(name, B, 2, "B")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected A and B to have the same dtype, but found A of type {A.dtype.legacy} "
                           f"and B of type {B.dtype.legacy} instead")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and B._size == A._size[:-1])
    if vector and not left:
        raise RuntimeError(f"{name}: Vector broadcasting of the left hand side is not supported for left=False. "
                           "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    Bm = B._size + (1,) if vector else B._size
    if len(Bm) < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    n = A._size[-1]
    if (Bm[-2] if left else Bm[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {equation} ({n}x{n} and "
                           f"{Bm[-2]}x{Bm[-1]})")
    batch = broadcast_shapes(A._size[:-2], Bm[:-2])
    return batch + Bm[-2:], vector


def _raise_singular_solve(A, a):
    info = _lu_info(a)
    failure = _first_failure(info, A.dim() > 2)
    index = failure[0] if failure else None
    raise LinAlgError(f"torch.linalg.solve: {_batch_prefix(index)}The solver failed because the input matrix is "
                      "singular.")


def _solve(backend, A, B, left=True):
    shape, vector = _solve_shape(A, B, left)
    if vector:
        out = backend.empty(shape[:-1], A.dtype)
    elif left:
        out = _new_matrices(backend, shape, A.dtype)
    else:
        out = backend.empty(shape, A.dtype)
    if backend.xp is None or not out.numel():
        return out
    a, b = backend.array(A), backend.array(B)
    if vector:
        b = b[..., None]
    try:
        x = np.linalg.solve(a, b) if left else np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2),
                                                                           np.swapaxes(b, -1, -2)), -1, -2)
    except np.linalg.LinAlgError:
        _raise_singular_solve(A, a)
    backend.array(out)[...] = x[..., 0] if vector else x
    return out


custom("linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor", _solve, _solve)


def solve(A, B, *, left=True, out=None):
    """The solution X of A X = B (X A = B with left=False) for square A; B may be a vector or a batch of them.

    >>> lantern.linalg.solve(lantern.tensor([[2., 0.], [0., 4.]]), lantern.tensor([2., 2.])).tolist()
    [1.0, 0.5]
    """
    return _into(out, call(get("linalg_solve"), (A, B, left)), "linalg.solve")


# ---- Cholesky ------------------------------------------------------------------------------------------------

def _cholesky_info(a):
    """LAPACK potrf's info: the order of the first leading minor that is not positive-definite (Sylvester's
    criterion over the lower triangle, which is all potrf reads), 0 when the matrix is positive-definite."""
    lower = np.tril(a)
    hermitian = lower + np.conj(np.swapaxes(np.tril(a, -1), -1, -2))
    info = np.zeros(a.shape[:-2], np.int32)
    for k in range(a.shape[-1], 0, -1):  # over the matrix order, vectorised over the batch
        sign, logabsdet = np.linalg.slogdet(hermitian[..., :k, :k])
        failed = (np.real(sign) <= 0) | ~np.isfinite(logabsdet)
        info = np.where(failed, k, info)
    return info.astype(np.int32)


def _cholesky_ex(backend, A, upper=False, check_errors=False):
    _check_matrices("linalg.cholesky", A)
    L = _new_matrices(backend, A._size, A.dtype)
    info = backend.empty(A._size[:-2], dt.int32)
    if backend.xp is None or not A.numel():
        if backend.xp is not None:
            backend.array(info)[...] = 0
        return cholesky_ex_rt(L, info)
    a = backend.array(A)
    try:
        values, codes = np.linalg.cholesky(a, upper=upper), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        codes = _cholesky_info(a)
        values = np.full(a.shape, np.nan, a.dtype)
        ok = codes == 0
        values[ok] = np.linalg.cholesky(a[ok], upper=upper)
    if check_errors:
        _not_positive_definite("linalg.cholesky_ex", A, codes)
    backend.array(L)[...] = values
    backend.array(info)[...] = codes
    return cholesky_ex_rt(L, info)


def _not_positive_definite(name, A, info):
    failure = _first_failure(info, A.dim() > 2)
    if failure is not None:
        index, order = failure
        raise LinAlgError(f"{name}: {_batch_prefix(index)}The factorization could not be completed because the input "
                          f"is not positive-definite (the leading minor of order {order} is not positive-definite).")


custom("linalg_cholesky_ex(Tensor A, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)",
       _cholesky_ex, _cholesky_ex)


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor L (A = L L^H) of each Hermitian positive-definite matrix; U = L^H with upper=True.

    >>> lantern.linalg.cholesky(lantern.tensor([[4., 2.], [2., 2.]])).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    _check_matrices("linalg.cholesky", A)
    L, info = call(get("linalg_cholesky_ex"), (A, upper, False))
    if info.numel() and info._backend.xp is not None:
        _not_positive_definite("linalg.cholesky", A, info._backend.array(info))
    return _into(out, L, "linalg.cholesky")


def cholesky_ex(A, *, upper=False, check_errors=False):
    """(L, info): info is LAPACK's per matrix (0, or the order of the first leading minor that is not
    positive-definite) instead of an error."""
    return call(get("linalg_cholesky_ex"), (A, upper, check_errors))


# ---- norms ---------------------------------------------------------------------------------------------------

def _all_dims(dim):
    """vector_norm's dim=None (or []) reduces every dim."""
    return dim is None or (not isinstance(dim, int) and not len(dim))


def _vector_norm_meta(x, ord=2, dim=None, keepdim=False, dtype=None):
    name = "linalg.vector_norm"
    _require_tensor(name, x)
    if x.dtype.category < dt.FLOATING:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {x.dtype.legacy}")
    if dtype is not None:
        if dtype.category < dt.FLOATING:
            raise RuntimeError(f"{name}: dtype should be floating point or complex, but got {dtype.legacy}")
        if dtype.is_complex != x.dtype.is_complex:
            kind = "complex" if x.dtype.is_complex else "real"
            raise RuntimeError(f"{name}: dtype should be {kind} for {kind} inputs, but got {dtype.legacy}")
    dims = tuple(range(x.dim())) if _all_dims(dim) else wrap_dims(dim, x.dim())
    if ord in (math.inf, -math.inf) or ord < 0:
        _check_identity(name, x, dim, dims, ord)
    return reduced_shape(x._size, dims, keepdim), (dtype or x.dtype).to_real()


def _check_identity(name, x, dim, dims, ord):
    """Max-like norms (inf, negative orders) have no identity: refuse reducing over nothing."""
    which = "inf" if ord in (math.inf, -math.inf) else "negative"
    if _all_dims(dim) and x.numel() == 0:
        raise RuntimeError(f"{name} cannot compute the {which} norm on an empty tensor because the operation does "
                           "not have an identity")
    for d in dims:
        if x._size and x._size[d] == 0:
            raise RuntimeError(f"{name} cannot compute the {which} norm on the dimension {d}because this dimension "
                               "is empty and the operation does not have an identity")


def _vector_norm_impl(xp, out, dtype, x, ord=2, dim=None, keepdim=False, dtype_arg=None):
    dims = (dim,) if isinstance(dim, int) else dim
    axis = None if _all_dims(dim) or not x.ndim else tuple(d % x.ndim for d in dims)
    compute = np.float32 if dtype in _LOW_PRECISION else dtype
    if dtype_arg is not None:  # the input is converted to dtype= first
        x = x.astype(dtype_arg.np, copy=False)
    a = xp.abs(x).astype(compute, copy=False)
    if ord == math.inf:
        value = a.max(axis=axis, keepdims=keepdim)
    elif ord == -math.inf:
        value = a.min(axis=axis, keepdims=keepdim)
    elif ord == 0:
        value = (a != 0).sum(axis=axis, keepdims=keepdim, dtype=compute)
    elif ord == 1:
        value = a.sum(axis=axis, keepdims=keepdim)
    elif ord == 2:
        value = xp.sqrt((a * a).sum(axis=axis, keepdims=keepdim))
    else:
        value = (a ** ord).sum(axis=axis, keepdims=keepdim) ** (1.0 / ord)
    out[...] = value


structured("linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
           "ScalarType? dtype=None) -> Tensor", _vector_norm_meta, _vector_norm_impl, inplace=False,
           exact_out_dtype=True, method=False)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ord-norm of x over `dim` (every element by default), as a vector: (Σ |x|^ord)^(1/ord), max for inf.

    >>> lantern.linalg.vector_norm(lantern.tensor([3., 4.])).item()
    5.0
    """
    if out is None:
        return call(get("linalg_vector_norm"), (x, ord, dim, keepdim, dtype))
    return call(get("linalg_vector_norm.out"), (x, ord, dim, keepdim, dtype, out))


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _matrix_dims(name, A, dim):
    if isinstance(dim, int):
        raise TypeError(f"linalg_matrix_norm(): argument 'dim' must be tuple of ints, not int (pass dim=({dim}, ...))")
    if len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    d0, d1 = wrap_dims(dim, A.dim())
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """A matrix norm over the two dims `dim`: 'fro', 'nuc' (sum of singular values), ±2 (largest/smallest singular
    value), ±1 (max/min column sum of |A|), ±inf (max/min row sum).

    >>> lantern.linalg.matrix_norm(lantern.tensor([[1., -2.], [3., 4.]]), 1).item()
    6.0
    """
    name = "linalg.matrix_norm"
    _require_tensor(name, A)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not any(ord == o and type(ord) is type(o) or (not isinstance(ord, str) and not isinstance(o, str) and ord == o)
               for o in _MATRIX_ORDS):
        raise RuntimeError(f"{name}: Order {ord} not supported.")
    d0, d1 = _matrix_dims(name, A, dim)
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        result = vector_norm(A, 2, (d0, d1), keepdim)
    elif ord == "nuc" or ord in (2, -2):
        result = _singular_value_norm(A, ord, d0, d1, keepdim)
    else:
        if A.dtype.category < dt.FLOATING:
            raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.legacy}")
        if ord in (math.inf, -math.inf):
            d0, d1 = d1, d0
        sums = A.abs().sum(d0, keepdim=keepdim)
        if not keepdim and d0 < d1:
            d1 -= 1
        result = sums.amax(d1, keepdim=keepdim) if ord > 0 else sums.amin(d1, keepdim=keepdim)
    return _into(out, result, name)


def _singular_value_norm(A, ord, d0, d1, keepdim):
    s = svdvals(A.movedim((d0, d1), (-2, -1)))
    if ord == "nuc":
        result = s.sum(-1, keepdim=keepdim)
    else:
        result = s.amax(-1, keepdim=keepdim) if ord == 2 else s.amin(-1, keepdim=keepdim)
    if keepdim:  # put the two reduced dims back where they were
        result = result.unsqueeze(-1).movedim((-2, -1), (d0, d1))
    return result


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.norm: a vector norm when `dim` is an int or A is 1-D, a matrix norm when `dim` is a 2-tuple
    or A is 2-D; with neither ord nor dim, the 2-norm of A flattened.

    >>> lantern.linalg.norm(lantern.tensor([[3., 4.], [0., 0.]])).item()
    5.0
    """
    name = "linalg.norm"
    _require_tensor(name, A)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"{name}: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    elif ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(f"{name}: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.dim()}D.")
    else:
        dims = None
    if ord is None:
        return vector_norm(A, 2, dims, keepdim, dtype=dtype, out=out)
    if (dims is not None and len(dims) == 2) or (dims is None and A.dim() == 2):
        return matrix_norm(A, ord, dims or (-2, -1), keepdim, dtype=dtype, out=out)
    if isinstance(ord, str):
        raise RuntimeError(f"{name}: Order {ord} not supported for vector norms.")
    return vector_norm(A, ord, dims, keepdim, dtype=dtype, out=out)


# ---- SVD, Hermitian eigendecomposition, QR ---------------------------------------------------------------------

svd_rt = return_type("linalg_svd", ["U", "S", "Vh"])
torch_svd_rt = return_type("svd", ["U", "S", "V"])
eigh_rt = return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
qr_rt = return_type("linalg_qr", ["Q", "R"])


def _svd(backend, A, full_matrices=True, driver=None):
    _check_matrices("linalg.svd", A, square=False)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    m, n = A._size[-2:]
    k = min(m, n)
    batch = A._size[:-2]
    u_cols, v_rows = (m, n) if full_matrices else (k, k)
    U = _new_matrices(backend, batch + (m, u_cols), A.dtype)
    S = backend.empty(batch + (k,), A.dtype.to_real())
    Vh = _new_matrices(backend, batch + (v_rows, n), A.dtype)
    if backend.xp is not None and A.numel():
        u, s, vh = np.linalg.svd(backend.array(A), full_matrices=full_matrices)
        for t, values in ((U, u), (S, s), (Vh, vh)):
            backend.array(t)[...] = values
    elif backend.xp is not None and U.numel() + Vh.numel():  # no elements to decompose: identity factors
        backend.array(U)[...] = np.eye(m, u_cols)
        backend.array(Vh)[...] = np.eye(v_rows, n)
    return svd_rt(U, S, Vh)


custom("linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)",
       _svd, _svd)


def svd(A, full_matrices=True, *, driver=None):
    """A = U diag(S) Vh, singular values in descending order (full_matrices=False: the reduced factors).

    >>> lantern.linalg.svd(lantern.tensor([[3., 0.], [0., -4.]])).S.tolist()
    [4.0, 3.0]
    """
    return call(get("linalg_svd"), (A, full_matrices, driver))


def svdvals(A, *, driver=None):
    """The singular values of each matrix, descending (differentiable through the reduced SVD)."""
    _check_matrices("linalg.svdvals", A, square=False)
    return call(get("linalg_svd"), (A, False, driver))[1]


def torch_svd(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V = Vh^H; compute_uv=False gives the singular values with zero-filled square U
    and V, as PyTorch does."""
    if not compute_uv:
        m, n = input._size[-2:]
        batch = input._size[:-2]
        V = input.new_zeros(batch + (n, n)).transpose(-2, -1)  # the zeros PyTorch conjugate-transposes from Vh
        return torch_svd_rt(input.new_zeros(batch + (m, m)), svdvals(input), V)
    U, S, Vh = call(get("linalg_svd"), (input, not some, None))
    return torch_svd_rt(U, S, mH(Vh))


def _eigh(backend, A, UPLO="L"):
    _check_matrices("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    values = backend.empty(A._size[:-1], A.dtype.to_real())
    vectors = _new_matrices(backend, A._size, A.dtype)
    if backend.xp is not None and A.numel():
        w, v = np.linalg.eigh(backend.array(A), UPLO=UPLO)
        backend.array(values)[...] = w
        backend.array(vectors)[...] = v
    return eigh_rt(values, vectors)


custom("linalg_eigh(Tensor A, str UPLO='L') -> (Tensor eigenvalues, Tensor eigenvectors)", _eigh, _eigh)


def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors of Hermitian matrices, reading the UPLO triangle.

    >>> lantern.linalg.eigh(lantern.tensor([[2., 1.], [1., 2.]])).eigenvalues.tolist()
    [1.0, 3.0]
    """
    return call(get("linalg_eigh"), (A, UPLO))


def eigvalsh(A, UPLO="L"):
    """The eigenvalues of Hermitian matrices, ascending (differentiable through eigh)."""
    return call(get("linalg_eigh"), (A, UPLO))[0]


def _qr(backend, A, mode="reduced"):
    _check_matrices("linalg.qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    m, n = A._size[-2:]
    k = m if mode == "complete" else min(m, n)
    batch = A._size[:-2]
    Q = backend.empty((0,), A.dtype) if mode == "r" else _new_matrices(backend, batch + (m, k), A.dtype)
    R = _new_matrices(backend, batch + (k, n), A.dtype)
    if backend.xp is not None and A.numel():
        q, r = np.linalg.qr(backend.array(A), mode="complete" if mode == "complete" else "reduced")
        if mode != "r":
            backend.array(Q)[...] = q
        backend.array(R)[...] = r
    elif backend.xp is not None and Q.numel():
        backend.array(Q)[...] = np.eye(m, k)
    return qr_rt(Q, R)


custom("linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)", _qr, _qr)


def qr(A, mode="reduced"):
    """A = Q R with orthonormal Q and upper-triangular R; mode 'reduced', 'complete' or 'r' (R only).

    >>> lantern.linalg.qr(lantern.tensor([[3., 0.], [4., 5.]])).R.abs().tolist()
    [[5.0, 4.0], [0.0, 3.0]]
    """
    return call(get("linalg_qr"), (A, mode))


# ---- composites over the decompositions: pinv, matrix_rank, matrix_power, lstsq, cross ------------------------

def _cutoff(S, atol, rtol, shape, dtype):
    """max(atol, rtol * largest singular value); rtol defaults to eps * max(m, n) when neither is given."""
    if rtol is None:
        rtol = 0.0 if atol is not None and (not hasattr(atol, "dim") and atol > 0) else \
            dt.finfo(dtype.to_real()).eps * max(shape[-2:])
    largest = S.amax(-1, keepdim=True) if S._size[-1] else S.new_zeros(S._size[:-1] + (1,))
    cutoff = largest * rtol
    if atol is not None:
        cutoff = call(get("maximum"), (cutoff, atol if hasattr(atol, "dim") else cutoff.new_full((), atol)))
    return cutoff


def _check_pinv(name, A):
    _require_tensor(name, A)
    if A.dim() < 2 or A.dtype.category < dt.FLOATING or A.dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"{name}({A.dtype.legacy}{{{shape_str(A._size)}}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse through the SVD (eigh when hermitian), singular values at or below
    max(atol, rtol * σ_max) treated as zero.

    >>> lantern.linalg.pinv(lantern.tensor([[2., 0.], [0., 0.]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    _check_pinv("linalg.pinv", A)
    if hermitian:
        values, V = eigh(A)
        S, left, right = values.abs(), V, mH(V)
    else:
        left, S, right = svd(A, full_matrices=False)
        values = S
    keep = S > _cutoff(S, atol, rtol, A._size, A.dtype)
    inverse = call(get("where"), (keep, 1 / call(get("where"), (keep, values, 1.0)), 0.0)).to(A.dtype)
    return _into(out, (mH(right) * inverse.unsqueeze(-2)) @ mH(left), "linalg.pinv")


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values above max(atol, rtol * σ_max), per matrix (an int64 tensor)."""
    name = "torch.linalg.matrix_rank"
    _require_tensor(name, A)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor input must have at least 2 dimensions.")
    from ..autograd.grad_mode import no_grad
    with no_grad():
        S = eigvalsh(A).abs() if hermitian else svdvals(A)
        rank = (S > _cutoff(S, atol, rtol, A._size, A.dtype)).sum(-1)
    return _into(out, rank, "linalg.matrix_rank")


def matrix_power(A, n, *, out=None):
    """A multiplied by itself n times by repeated squaring; n = 0 gives identities, n < 0 powers of the inverse.

    >>> lantern.linalg.matrix_power(lantern.tensor([[1, 1], [0, 1]]), 5).tolist()
    [[1, 5], [0, 1]]
    """
    name = "linalg.matrix_power"
    _require_tensor(name, A)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A._size[-1] != A._size[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A._size[-2]} by "
                           f"{A._size[-1]} matrices")
    if n == 0:
        identity = call(get("eye"), (A._size[-1], None, A.dtype, None, A.device, None, False))
        return _into(out, identity.expand(A._size).clone(), name)
    if n < 0:
        A, n = inv(A), -n
    result, square = None, A
    while n:
        if n & 1:
            result = square if result is None else result @ square
        n >>= 1
        if n:
            square = square @ square
    return _into(out, result.clone() if result is A else result, name)


lstsq_rt = return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _check_lstsq(A, B, driver):
    name = "torch.linalg.lstsq"
    _require_tensor(name, A)
    _require_tensor(name, B, 2, "b")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{A.dtype.legacy} and other's dtype {B.dtype.legacy}")
    _check_matrices(name, A, "input", square=False)
    if not (A.dim() >= B.dim() and A.dim() - B.dim() <= 1):
        raise RuntimeError(f"{name}: input.dim() must be greater or equal to other.dim() and (input.dim() - "
                           "other.dim()) <= 1")
    vector = A.dim() - B.dim() == 1
    if (B._size[-1] if vector else B._size[-2]) != A._size[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-{1 if vector else 2})")
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    return vector


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution X minimising ||A X - B|| (through the pseudo-inverse, so it is differentiable),
    with residuals (m > n, full rank, drivers other than gelsy), rank (all but gels) and singular values (gelsd,
    gelss) as LAPACK's drivers report them.

    >>> round(lantern.linalg.lstsq(lantern.tensor([[1.], [1.]]), lantern.tensor([[1.], [3.]])).solution.item(), 4)
    2.0
    """
    driver = driver or "gelsy"
    vector = _check_lstsq(A, B, driver)
    Bm = B.unsqueeze(-1) if vector else B
    solution = pinv(A, rtol=rcond if rcond is not None and rcond > 0 else None) @ Bm
    m, n = A._size[-2:]
    empty = A.new_zeros((0,)).to(A.dtype.to_real())
    rank = empty.to(dt.int64) if driver == "gels" else matrix_rank(A, rtol=rcond if rcond else None)
    singular_values = svdvals(A).detach() if driver in ("gelsd", "gelss") else empty
    residuals = empty
    if m > n and driver != "gelsy" and (driver == "gels" or bool((rank == n).all())):
        residuals = ((A @ solution - Bm).abs() ** 2).sum(-2)
    return lstsq_rt(solution.squeeze(-1) if vector else solution, residuals, rank, singular_values)


def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along dim (declared with the shape ops, exported here as torch.linalg's)."""
    from .tensor_shape import linalg_cross
    return _into(out, linalg_cross(input, other, dim=dim), "linalg.cross")


# ---- backward helpers (the formulas below call them; written with lantern ops, so they differentiate again) --

def mH(t):
    """The conjugate transpose of each matrix."""
    return conj(t.transpose(-2, -1))


def scaled(t, factor):
    """t * conj(factor), skipping the multiply for 1 (the alpha/beta of addmm and friends)."""
    return t if factor == 1 else t * conj(factor)


def _column_major(meta):
    return meta.stride[0] == 1 and meta.stride[1] == meta.size[0]


def _eager_product(backend, a, b, dtype, transposed):
    """a @ b (arrays) into a new tensor through one BLAS call; with `transposed`, computed as (bᵀ @ aᵀ) into a
    row-major buffer and returned as its transpose (a column-major result), as the op formulas below lay it out."""
    if transposed:
        out = backend.empty((b.shape[1], a.shape[0]), dtype)
        backend.xp.matmul(b.T, a.T, out=backend.array(out))
        return out.t()
    out = backend.empty((a.shape[0], b.shape[1]), dtype)
    backend.xp.matmul(a, b, out=backend.array(out))
    return out


def mm_mat1_backward(grad, mat2, mat1_meta):
    """grad @ mat2ᴴ, computed column-major when mat1 was column-major (a transposed weight), as PyTorch's
    mm_mat1_backward does, so that the gradient reaching the weight needs no copy to match its layout. Without
    create_graph it is one BLAS call on the arrays (eager_backend), the same product the ops below would run."""
    backend = eager_backend(grad, mat2)
    if backend is not None and grad.dim() == 2 and mat2.dim() == 2:
        return _eager_product(backend, backend.array(grad), backend.array(mat2).T, grad.dtype,
                              _column_major(mat1_meta))
    if _column_major(mat1_meta):
        return conj(mat2).mm(grad.t()).t()
    return grad.mm(mH(mat2))


def mm_mat2_backward(grad, mat1, mat2_meta):
    """mat1ᴴ @ grad, column-major when mat2 was (Linear's weight.t()); see mm_mat1_backward."""
    backend = eager_backend(grad, mat1)
    if backend is not None and grad.dim() == 2 and mat1.dim() == 2:
        return _eager_product(backend, backend.array(mat1).T, backend.array(grad), grad.dtype,
                              _column_major(mat2_meta))
    if _column_major(mat2_meta):
        return grad.t().mm(conj(mat1)).t()
    return mH(mat1).mm(grad)


def added_backward(grad, beta, self_meta):
    """The gradient of addmm's `self`: beta·grad, which the engine then sums over the rows a bias was broadcast
    along. Without create_graph, a bias's gradient is summed here in one array call instead (the same reduction
    as the engine's sum)."""
    if beta == 1 and len(self_meta.size) == 1 and grad.dim() == 2 and self_meta.size[0] == grad._size[1]:
        backend = eager_backend(grad)
        if backend is not None and self_meta.dtype is grad.dtype:
            out = backend.empty(self_meta.size, grad.dtype)
            backend.xp.add.reduce(backend.array(grad), axis=0, out=backend.array(out))
            return out
    return scaled(grad, beta)


def inverse_of(A):
    return call(get("linalg_inv_ex"), (A, False))[0]


def vector_norm_backward(grad, x, ord, result, dim, keepdim):
    """PyTorch's linalg_vector_norm_backward: sgn(x) |x|^(p-1) / norm^(p-1), zero where the norm is zero; for
    ±inf the gradient is shared among the entries attaining the norm."""
    sizes = x._size
    dims = None if _all_dims(dim) else dim
    g = unsqueeze_reduced(grad, sizes, dims, keepdim)
    norm = unsqueeze_reduced(result, sizes, dims, keepdim)
    if ord == 0:
        return zeros_like(x)
    if ord == 1:
        return x.sgn() * g
    if ord in (math.inf, -math.inf):
        mask = (x.abs() == norm).to(g.dtype)
        count = mask.sum(tuple(range(x.dim())) if dims is None else dims, True)
        return x.sgn() * (g * mask / count)
    safe = call(get("where"), (norm == 0, 1.0, norm))
    if ord == 2:
        scale = g / safe
        return x * call(get("where"), (norm == 0, 0.0, scale))
    scale = g / safe.pow(ord - 1)
    return x.sgn() * x.abs().pow(ord - 1) * call(get("where"), (norm == 0, 0.0, scale))


def det_backward(grad, A, det):
    """grad · adj(A)^H: through the inverse, det · A^-H, or, when some |det| is below 100 eps (as PyTorch
    decides), through the SVD A = U S Vh, adj(A)^H = conj(det U · det Vh) U diag(Π_{j≠i} s_j) Vh, which holds
    for singular matrices too."""
    scale = (grad * conj(det)).unsqueeze(-1).unsqueeze(-1)
    if not (det.abs() < 100 * dt.finfo(det.dtype.to_real()).eps).any().item():
        return scale * mH(inverse_of(A))
    U, S, Vh = call(get("linalg_svd"), (A, False, None))
    n = S._size[-1]
    others = call(get("where"), (_eye(n, S).to(dt.bool), 1.0, S.unsqueeze(-2).expand(S._size + (n,)))).prod(-1)
    phase = conj(call(get("linalg_det"), (U,)) * call(get("linalg_det"), (Vh,)))
    return (grad * phase).unsqueeze(-1).unsqueeze(-1) * ((U * others.to(U.dtype).unsqueeze(-2)) @ Vh)


def slogdet_backward(grad_sign, grad_logabsdet, A, sign):
    """d log|det A| = Re tr(A^-1 dA); for complex A the sign's gradient adds i Im(conj(sign) grad_sign)."""
    g = grad_logabsdet if grad_logabsdet is not None else zeros_like(sign).real
    g = g.to(A.dtype)
    if A.dtype.is_complex and grad_sign is not None:
        g = g + 1j * (conj(sign) * grad_sign).imag.to(A.dtype)
    return g.unsqueeze(-1).unsqueeze(-1) * mH(inverse_of(A))


def solve_backward_B(grad, A, left):
    return call(get("linalg_solve"), (mH(A), grad, left))


def solve_backward_A(grad, A, result, left):
    """X = A^-1 B: gA = -gB X^H (X A = B: gA = -X^H gB), with gB = A^-H G."""
    gB = solve_backward_B(grad, A, left)
    if result.dim() == A.dim() - 1:  # B was a vector (or a batch of them)
        return -(gB.unsqueeze(-1) * conj(result).unsqueeze(-2))
    return -(gB @ mH(result)) if left else -(mH(result) @ gB)


def cholesky_backward(grad, L, upper):
    """PyTorch's cholesky_backward: gA = L^-H Φ(L^H gL) L^-1, Φ taking the lower triangle with its diagonal
    halved, then symmetrised."""
    if upper:
        L, grad = mH(L), mH(grad)
    L_inverse = inverse_of(L)
    X = mH(L) @ grad
    phi = X.tril(-1) + (X.tril() - X.tril(-1)) * 0.5
    gA = mH(L_inverse) @ phi @ L_inverse
    return (gA + mH(gA)) * 0.5


def _eye(n, like):
    return call(get("eye"), (n, None, like.dtype, None, like.device, None, False))


def _diag_embed(v):
    return v.unsqueeze(-1) * _eye(v._size[-1], v)


def svd_backward(grads, U, S, Vh, full_matrices):
    """PyTorch's svd_backward (reduced factors; full ones are narrowed to the first k columns/rows first)."""
    gU, gS, gVh = grads
    k = S._size[-1]
    if full_matrices:
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU = None if gU is None else gU.narrow(-1, 0, k)
        gVh = None if gVh is None else gVh.narrow(-2, 0, k)
    m, n = U._size[-2], Vh._size[-1]
    if gU is None and gVh is None:
        return U @ (gS.unsqueeze(-1).to(U.dtype) * Vh) if m >= n else (U * gS.unsqueeze(-2).to(U.dtype)) @ Vh
    Sc = S.to(U.dtype)
    S2 = S * S
    E = (S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye(k, S2)).to(U.dtype)
    UhgU = _skew(mH(U) @ gU) if gU is not None else None
    VhgV = _skew(Vh @ mH(gVh)) if gVh is not None else None
    if gU is not None and gVh is not None:
        gA = (UhgU * Sc.unsqueeze(-2) + Sc.unsqueeze(-1) * VhgV) / E
    elif gU is None:
        gA = Sc.unsqueeze(-1) * (VhgV / E)
    else:
        gA = (UhgU / E) * Sc.unsqueeze(-2)
    if gS is not None:
        gA = gA + _diag_embed(gS.to(U.dtype))
    if U.dtype.is_complex and gU is not None:
        gA = gA + _diag_embed(UhgU.diagonal(0, -2, -1) / (2 * Sc))
    if m > n and gU is not None:
        gA = U @ gA
        gUSinv = gU / Sc.unsqueeze(-2)
        gA = (gA + gUSinv - U @ (mH(U) @ gUSinv)) @ Vh
    elif m < n and gVh is not None:
        gA = gA @ Vh
        SinvgVh = gVh / Sc.unsqueeze(-1)
        gA = U @ (gA + SinvgVh - (SinvgVh @ mH(Vh)) @ Vh)
    else:
        gA = U @ (gA @ Vh)
    return gA


def _skew(X):
    return X - mH(X)


def eigh_backward(grads, L, V):
    """PyTorch's linalg_eig_backward for Hermitian input: gA = V ((skew(V^H gV) / 2 + diag(gL)) / E) V^H with
    E_ij = λ_j - λ_i (1 on the diagonal)."""
    gL, gV = grads
    n = L._size[-1]
    E = (L.unsqueeze(-2) - L.unsqueeze(-1) + _eye(n, L)).to(V.dtype)
    inner = _skew(mH(V) @ gV) * 0.5 if gV is not None else None
    if gL is not None:
        diagonal = _diag_embed(gL.to(V.dtype))
        inner = diagonal if inner is None else inner + diagonal
    return V @ ((inner / E) @ mH(V))


def qr_backward(grads, Q, R, mode):
    """linalg.qr's backward for m >= n; a wide A = Q [R1 R2] differentiates its square part X = Q R1 with
    gQ + Y gR2^H (Y = Q R2) and Y with Q gR2."""
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    gQ, gR = grads
    m, n = Q._size[-2], R._size[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m < n:
        R1, R2 = R.narrow(-1, 0, m), R.narrow(-1, m, n - m)
        if gR is None:
            gX, gY = _qr_backward_tall(gQ, None, Q, R1), Q.new_zeros(Q._size[:-1] + (n - m,))
        else:
            gR2 = gR.narrow(-1, m, n - m)
            extra = (Q @ R2) @ mH(gR2)
            gX = _qr_backward_tall(extra if gQ is None else gQ + extra, gR.narrow(-1, 0, m), Q, R1)
            gY = Q @ gR2
        return call(get("cat"), ([gX, gY], -1))
    return _qr_backward_tall(gQ, gR, Q, R)


def _qr_backward_tall(gQ, gR, Q, R):
    """A = QR with m >= n: gA = (gQ + Q copyltu(M)) R^-H, M = R gR^H - gQ^H Q, copyltu mirroring M's strict lower
    triangle onto the upper one (Seeger et al.; the imaginary part of M's diagonal is the phase gauge)."""
    if gR is None:
        M = -(mH(gQ) @ Q)
    else:
        M = R @ mH(gR) if gQ is None else R @ mH(gR) - mH(gQ) @ Q
    lower = M.tril(-1)
    mirrored = lower + mH(lower) + (M.tril() - lower).real.to(M.dtype)
    X = Q @ mirrored if gQ is None else gQ + Q @ mirrored
    return call(get("linalg_solve"), (mH(R), X, False))


_BACKWARD_HELPERS = {name: globals()[name] for name in (
    "mH", "scaled", "added_backward", "mm_mat1_backward", "mm_mat2_backward", "inverse_of", "vector_norm_backward",
    "det_backward", "slogdet_backward", "solve_backward_A", "solve_backward_B", "cholesky_backward", "svd_backward",
    "eigh_backward", "qr_backward")}


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

# ---- linear algebra ----
derivative("bmm", self="grad.bmm(conj(mat2.transpose(1, 2)))", mat2="conj(self.transpose(1, 2)).bmm(grad)")
derivative("dot", self="grad * conj(tensor)", tensor="grad * conj(self)")
derivative("mv", self="grad.unsqueeze(1) * conj(vec).unsqueeze(0)", vec="conj(self.t()).mv(grad)")

# ---- with the helpers above ----
_derivative = partial(derivative, helpers=_BACKWARD_HELPERS)
_derivative("mm", self="mm_mat1_backward(grad, mat2, self_meta)", mat2="mm_mat2_backward(grad, self, mat2_meta)")
_derivative("addmm", self="added_backward(grad, beta, self_meta)",
            mat1="scaled(mm_mat1_backward(grad, mat2, mat1_meta), alpha)",
            mat2="scaled(mm_mat2_backward(grad, mat1, mat2_meta), alpha)")
_derivative("addmv", self="scaled(grad, beta)", mat="scaled(grad.unsqueeze(1) * conj(vec).unsqueeze(0), alpha)",
            vec="scaled(mH(mat).mv(grad), alpha)")
_derivative("baddbmm", self="scaled(grad, beta)", batch1="scaled(grad.bmm(mH(batch2)), alpha)",
            batch2="scaled(mH(batch1).bmm(grad), alpha)")
_derivative("addbmm", self="scaled(grad, beta)",
            batch1="scaled(grad.expand((batch2_meta.size[0],) + grad._size).bmm(mH(batch2)), alpha)",
            batch2="scaled(mH(batch1).bmm(grad.expand((batch1_meta.size[0],) + grad._size)), alpha)")
_derivative("vdot", self="conj(grad) * other", other="self * grad")
_derivative("linalg_vector_norm", self="vector_norm_backward(grad, self, ord, result, dim, keepdim)")
_derivative("linalg_inv_ex", A="-(mH(inverse) @ (grad @ mH(inverse)))")
_derivative("linalg_det", A="det_backward(grad, A, result)")
_derivative("linalg_slogdet", A="slogdet_backward(grads[0], grads[1], A, sign)")
_derivative("linalg_solve", name="LinalgSolveExBackward0", A="solve_backward_A(grad, A, result, left)",
            B="solve_backward_B(grad, A, left)")
_derivative("linalg_cholesky_ex", A="cholesky_backward(grad, L, upper)")
_derivative("linalg_svd", A="svd_backward(grads, U, S, Vh, full_matrices)")
_derivative("linalg_eigh", A="eigh_backward(grads, eigenvalues, eigenvectors)")
_derivative("linalg_qr", A="qr_backward(grads, Q, R, mode)")


# ==== the lantern.linalg namespace and the torch-level aliases ====

composite("det", det)
composite("inverse", lambda input, *, out=None: inv(input, out=out))
composite("slogdet", lambda input: call(get("linalg_slogdet"), (input,)))
composite("logdet", logdet)
composite("svd", torch_svd)
composite("matrix_power", lambda input, n, *, out=None: matrix_power(input, n, out=out))

LINALG_ALL = ("LinAlgError", "inv", "inv_ex", "det", "slogdet", "solve", "cholesky", "cholesky_ex", "vector_norm",
              "matrix_norm", "norm", "svd", "svdvals", "eigh", "eigvalsh", "qr", "pinv", "matrix_rank", "matrix_power",
              "lstsq", "cross")
