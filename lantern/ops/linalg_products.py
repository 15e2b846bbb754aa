"""Matrix products through BLAS (NumPy's matmul): mm, bmm, dot, mv, matmul, and the products with an
added input (addmm, addmv, addbmm, baddbmm: beta * self + alpha * product), vdot; each with its derivative.

Where PyTorch's CPU kernels sum a product's terms in an order of their own, the float32 and complex64 results
follow it, since a cancellation can make the rounding show beyond assert_close's tolerance (see "products in
torch's rounding order" below): small bmm/baddbmm run ATen's one-k-at-a-time loop, complex mv its gemv loop, and a
complex product through BLAS sums its four real products apart, as MKL's cgemm does.

>>> (lantern.ones(2, 3) @ lantern.ones(3)).shape, lantern.matmul(lantern.ones(1, 2, 3), lantern.ones(6, 3, 4)).shape
(lantern.Size([2]), lantern.Size([6, 2, 4]))
>>> lantern.addmm(lantern.ones(2), lantern.eye(2), lantern.eye(2), beta=2).tolist()
[[3.0, 2.0], [2.0, 3.0]]
"""
from functools import partial

import numpy as np

from ..core import dtype as dt
from ..core import parallel_gemm
from ..core.reference import specialisation
from .dispatcher import call
from .meta_util import broadcast_shapes, shape_str
from .pointwise_common import _require_tensor
from .registry import composite, get, structured
from .derivative import derivative
from .derivative_helpers import conj
from .derivative_specialisation import on_float_arrays, specialise_derivative
from .linalg_common import mH, scaled


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


# ---- products in torch's rounding order ---------------------------------------------------------------------------

SMALL_BMM_WORK = 400  # bmm and baddbmm with contraction * rows * cols below this run ATen's baddbmm_cpu_kernel loop


def _complex(xp, real, imag):
    out = xp.empty(real.shape, xp.result_type(real.dtype, xp.complex64))
    out.real, out.imag = real, imag
    return out


def _multiply(xp, x, y):
    """x * y, complex numbers multiplied as c10::complex does: (ac - bd) + (ad + bc)i with each product rounded
    (NumPy's complex multiply may fuse a product into the sum)."""
    if x.dtype.kind != "c":
        return x * y
    y = xp.asarray(y, dtype=x.dtype)
    return _complex(xp, x.real * y.real - x.imag * y.imag, x.real * y.imag + x.imag * y.real)


def _uses_small_bmm_loop(a, b):
    """Whether ATen's bmm/baddbmm computes (B, n, k) @ (B, k, m) with its own loop rather than BLAS."""
    return a.shape[2] * a.shape[1] * b.shape[2] < SMALL_BMM_WORK


def _one_k_at_a_time(xp, a, b):
    """(B, n, k) @ (B, k, m) summed as ATen's baddbmm_cpu_kernel sums it: for each k in order, the product is
    rounded, then added (no fused multiply-add); in float32 for float16 and bfloat16 (its opmath type)."""
    work = np.float32 if a.dtype in _LOW_PRECISION else a.dtype
    a, b = a.astype(work, copy=False), b.astype(work, copy=False)
    total = xp.zeros(a.shape[:2] + b.shape[2:], work)
    for k in range(a.shape[2]):
        total += _multiply(xp, a[:, :, k, None], b[:, None, k, :])
    return total


def _blas_product(xp, a, b, out=None):
    """a @ b through BLAS. A complex one is four real products, summed apart and combined at the end
    ((ar@br - ai@bi) + (ar@bi + ai@br)i), which is how MKL's cgemm (PyTorch's) rounds; NumPy's cgemm rounds
    otherwise."""
    if a.dtype.kind != "c":
        return (parallel_gemm.matmul if xp is np else xp.matmul)(a, b, out=out)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    product = _complex(xp, xp.matmul(ar, br) - xp.matmul(ai, bi), xp.matmul(ar, bi) + xp.matmul(ai, br))
    if out is None:
        return product
    out[...] = product
    return out


def _gemv_loop(xp, matrix, vector):
    """matrix @ vector as ATen's own gemv computes a complex one: for each column in order, vector[j] times the
    column, rounded, then added."""
    total = xp.zeros(matrix.shape[:1], matrix.dtype)
    for j in range(matrix.shape[1]):
        total += _multiply(xp, vector[j, None], matrix[:, j])
    return total


def _matmul_impl(xp, out, dtype, a, b):
    _blas_product(xp, a, b, out=out)


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


def batched_product(xp, a, b, out=None):
    """(B, n, k) @ (B, k, m) rounded as ATen's bmm rounds it: its own loop for small products, BLAS otherwise."""
    if not _uses_small_bmm_loop(a, b):
        return _blas_product(xp, a, b, out=out)
    if out is None:
        return _one_k_at_a_time(xp, a, b)
    out[...] = _one_k_at_a_time(xp, a, b)
    return out


def _bmm_impl(xp, out, dtype, a, b):
    if a.size == 0 or b.size == 0:
        out[...] = 0
    else:
        batched_product(xp, a, b, out=out)


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


def _mv_impl(xp, out, dtype, a, v):
    if a.dtype.kind == "c":
        out[...] = _gemv_loop(xp, a, v)
    else:
        xp.matmul(a, v, out=out)


structured("mv(Tensor self, Tensor vec) -> Tensor", _mv_meta, _mv_impl, inplace=False, exact_out_dtype=True)

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


derivative("bmm", self="grad.bmm(conj(mat2.transpose(1, 2)))", mat2="conj(self.transpose(1, 2)).bmm(grad)")
derivative("dot", self="grad * conj(tensor)", tensor="grad * conj(self)")
derivative("mv", self="grad.unsqueeze(1) * conj(vec).unsqueeze(0)", vec="conj(self.t()).mv(grad)")


def _column_major(meta):
    return meta.stride[0] == 1 and meta.stride[1] == meta.size[0]


def mm_mat1_backward(grad, mat2, mat1_meta):
    """grad @ mat2ᴴ, computed column-major when mat1 was column-major (a transposed weight), as PyTorch's
    mm_mat1_backward does, so that the gradient reaching the weight needs no copy to match its layout."""
    if _column_major(mat1_meta):
        return conj(mat2).mm(grad.t()).t()
    return grad.mm(mH(mat2))


def mm_mat2_backward(grad, mat1, mat2_meta):
    """mat1ᴴ @ grad, column-major when mat2 was (Linear's weight.t()); see mm_mat1_backward."""
    if _column_major(mat2_meta):
        return grad.t().mm(conj(mat1)).t()
    return mH(mat1).mm(grad)


def _product_on_arrays(a, b, like, column_major):
    """a @ b (arrays) into a new tensor through one BLAS call; `column_major` computes it as (bᵀ @ aᵀ) into a
    row-major buffer and returns its transpose, as the formulas above lay it out."""
    backend = like._backend
    if column_major:
        out = backend.empty((b.shape[1], a.shape[0]), like.dtype)
        _blas_product(backend.xp, b.T, a.T, out=backend.array(out))
        return out.t()
    out = backend.empty((a.shape[0], b.shape[1]), like.dtype)
    _blas_product(backend.xp, a, b, out=backend.array(out))
    return out


@specialisation(replaces="mm's derivative for mat1, mm_mat1_backward (the mm op)",
                when="backward without create_graph, fast paths on; on_float_arrays(grad, mat2)",
                parity_test="tests/test_ops_specialisations.py::test_mm_backward_on_arrays", ops=("mm", "addmm"))
def mm_mat1_backward_on_arrays(grad, mat2, mat1_meta):
    """grad @ mat2ᵀ (mat2 is real) as one BLAS call on the arrays, laid out as mm_mat1_backward lays it out."""
    array = grad._backend.array
    return _product_on_arrays(array(grad), array(mat2).T, grad, _column_major(mat1_meta))


@specialisation(replaces="mm's derivative for mat2, mm_mat2_backward (the mm op)",
                when="backward without create_graph, fast paths on; on_float_arrays(grad, mat1)",
                parity_test="tests/test_ops_specialisations.py::test_mm_backward_on_arrays", ops=("mm", "addmm"))
def mm_mat2_backward_on_arrays(grad, mat1, mat2_meta):
    """mat1ᵀ @ grad (mat1 is real) as one BLAS call on the arrays, laid out as mm_mat2_backward lays it out."""
    array = grad._backend.array
    return _product_on_arrays(array(mat1).T, array(grad), grad, _column_major(mat2_meta))


def added_backward(grad, beta, self_meta):
    """The gradient of addmm's `self`: beta·grad, which the engine then sums over the rows a bias was broadcast
    along. self_meta is read by the specialisation bias_backward_on_arrays only."""
    return scaled(grad, beta)


def bias_summed_here(grad, beta, self_meta):
    """The addmm calls bias_backward_on_arrays serves: beta 1, a 1-D bias broadcast along grad's rows, float arrays
    (on_float_arrays) of the bias's dtype."""
    return (beta == 1 and len(self_meta.size) == 1 and grad.dim() == 2 and self_meta.size[0] == grad._size[1]
            and self_meta.dtype is grad.dtype and on_float_arrays(grad))


@specialisation(replaces="addmm's derivative for a 1-D self, added_backward then the engine's sum over rows",
                when="backward without create_graph, fast paths on; bias_summed_here(grad, beta, self_meta)",
                parity_test="tests/test_ops_specialisations.py::test_bias_backward_on_arrays", ops=("addmm",))
def bias_backward_on_arrays(grad, beta, self_meta):
    """The bias's gradient summed over grad's rows here, in one array call (the reduction the engine would run)."""
    backend = grad._backend
    out = backend.empty(self_meta.size, grad.dtype)
    backend.xp.add.reduce(backend.array(grad), axis=0, out=backend.array(out))
    return out


_BACKWARD_HELPERS = {"mH": mH, "scaled": scaled, "added_backward": added_backward,
                     "mm_mat1_backward": mm_mat1_backward, "mm_mat2_backward": mm_mat2_backward}
_derivative = partial(derivative, helpers=_BACKWARD_HELPERS)
_derivative("mm", self="mm_mat1_backward(grad, mat2, self_meta)", mat2="mm_mat2_backward(grad, self, mat2_meta)")
_SPECIALISED_HELPERS = dict(
    _BACKWARD_HELPERS, mm_mat1_backward_on_arrays=mm_mat1_backward_on_arrays,
    mm_mat2_backward_on_arrays=mm_mat2_backward_on_arrays, bias_backward_on_arrays=bias_backward_on_arrays,
    on_float_arrays=on_float_arrays, bias_summed_here=bias_summed_here)
specialise_derivative("mm", {
    "mm_mat1_backward(grad, mat2, self_meta)": ("mm_mat1_backward_on_arrays(grad, mat2, self_meta)",
                                                "on_float_arrays(grad, mat2)"),
    "mm_mat2_backward(grad, self, mat2_meta)": ("mm_mat2_backward_on_arrays(grad, self, mat2_meta)",
                                                "on_float_arrays(grad, self)"),
}, helpers=_SPECIALISED_HELPERS)


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
        product = _product(partial(_blas_product, xp), mat1, mat2)
    else:  # the common case: BLAS writes straight into the output
        product = _blas_product(xp, mat1, mat2, out=out)
    _write_added(out, self, product, beta, alpha)


def _baddbmm_impl(xp, out, dtype, self, batch1, batch2, beta=1, alpha=1):
    """A small product runs ATen's loop, which then writes beta * self + alpha * product in its opmath type."""
    if batch1.size == 0 or batch2.size == 0 or not _uses_small_bmm_loop(batch1, batch2):
        _addmm_impl(xp, out, dtype, self, batch1, batch2, beta, alpha)
        return
    if out.dtype.kind in "iub":  # integer products take integer scalars, as PyTorch casts them to the dtype
        beta, alpha = int(beta), int(alpha)
    product = _multiply(xp, _one_k_at_a_time(xp, batch1, batch2), alpha)
    if beta != 0:
        product += _multiply(xp, self.astype(product.dtype, copy=False), beta)
    out[...] = product


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
           _baddbmm_meta, _baddbmm_impl, exact_out_dtype=True)


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


_derivative("addmm", self="added_backward(grad, beta, self_meta)",
            mat1="scaled(mm_mat1_backward(grad, mat2, mat1_meta), alpha)",
            mat2="scaled(mm_mat2_backward(grad, mat1, mat2_meta), alpha)")
specialise_derivative("addmm", {
    "added_backward(grad, beta, self_meta)": ("bias_backward_on_arrays(grad, beta, self_meta)",
                                              "bias_summed_here(grad, beta, self_meta)"),
    "mm_mat1_backward(grad, mat2, mat1_meta)": ("mm_mat1_backward_on_arrays(grad, mat2, mat1_meta)",
                                                "on_float_arrays(grad, mat2)"),
    "mm_mat2_backward(grad, mat1, mat2_meta)": ("mm_mat2_backward_on_arrays(grad, mat1, mat2_meta)",
                                                "on_float_arrays(grad, mat1)"),
}, helpers=_SPECIALISED_HELPERS)
_derivative("addmv", self="scaled(grad, beta)", mat="scaled(grad.unsqueeze(1) * conj(vec).unsqueeze(0), alpha)",
            vec="scaled(mH(mat).mv(grad), alpha)")
_derivative("baddbmm", self="scaled(grad, beta)", batch1="scaled(grad.bmm(mH(batch2)), alpha)",
            batch2="scaled(mH(batch1).bmm(grad), alpha)")
_derivative("addbmm", self="scaled(grad, beta)",
            batch1="scaled(grad.expand((batch2_meta.size[0],) + grad._size).bmm(mH(batch2)), alpha)",
            batch2="scaled(mH(batch1).bmm(grad.expand((batch1_meta.size[0],) + grad._size)), alpha)")
_derivative("vdot", self="conj(grad) * other", other="self * grad")
