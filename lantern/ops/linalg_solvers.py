"""torch.linalg's inverse, determinants, solve and Cholesky over numpy.linalg, batched over leading
dims, each with its derivative.

>>> lantern.linalg.inv(lantern.tensor([[2., 0.], [0., 4.]])).tolist()
[[0.5, 0.0], [0.0, 0.25]]
"""
import math
from functools import partial

import numpy as np

from ..core import dtype as dt
from .dispatcher import call
from .meta_util import broadcast_shapes
from .pointwise_common import _require_tensor
from .reduction import out_return_type, return_type
from .registry import custom, get
from .derivative import derivative
from .derivative_helpers import conj, zeros_like
from .linalg_common import (
    LinAlgError, _batch_prefix, _check_matrices, _first_failure, _lu_info, _new_matrices, _singular_error, mH, _eye,
    _into, into_outs,
)
from ..core.overridable import overridable
# ---- inverse, determinants ----------------------------------------------------------------------------------

inv_ex_rt = return_type("linalg_inv_ex", ["inverse", "info"])
slogdet_rt = return_type("linalg_slogdet", ["sign", "logabsdet"])
cholesky_ex_rt = return_type("linalg_cholesky_ex", ["L", "info"])


def _inv_ex(backend, A, check_errors=False):
    xp = backend.xp
    _check_matrices("linalg.inv_ex", A)
    inverse = _new_matrices(backend, A._size, A.dtype)
    info = backend.empty(A._size[:-2], dt.int32)
    if xp is None:
        return inv_ex_rt(inverse, info)
    a = backend.array(A)
    try:
        values, codes = xp.linalg.inv(a), xp.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:  # NumPy refuses the whole batch: invert only the invertible matrices
        codes = _lu_info(xp, a)
        values = xp.full(a.shape, xp.nan, a.dtype)
        invertible = codes == 0
        values[invertible] = xp.linalg.inv(a[invertible])
    if check_errors:
        _singular_error("linalg.inv_ex", A, codes, "inversion")
    backend.array(inverse)[...] = values
    backend.array(info)[...] = codes
    return inv_ex_rt(inverse, info)


custom("linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)", _inv_ex, _inv_ex)


@overridable
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


@overridable
def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): info is LAPACK's per matrix (0, or the index of U's first zero pivot) instead of an error."""
    return into_outs(out, call(get("linalg_inv_ex"), (A, check_errors)), "linalg.inv_ex")


def _det(backend, A):
    _check_matrices("linalg.det", A)
    out = backend.empty(A._size[:-2], A.dtype)
    if backend.xp is not None and A.numel():
        backend.array(out)[...] = backend.xp.linalg.det(backend.array(A))
    elif backend.xp is not None:
        backend.array(out)[...] = 1
    return out


custom("linalg_det(Tensor A) -> Tensor", _det, _det)


@overridable
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
        s, l = backend.xp.linalg.slogdet(backend.array(A))
        backend.array(sign)[...] = s
        backend.array(logabsdet)[...] = l
    return slogdet_rt(sign, logabsdet)


custom("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", _slogdet, _slogdet)


@overridable
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


def _raise_singular_solve(xp, A, a):
    info = _lu_info(xp, a)
    failure = _first_failure(info, A.dim() > 2)
    index = failure[0] if failure else None
    raise LinAlgError(f"torch.linalg.solve: {_batch_prefix(index)}The solver failed because the input matrix is "
                      "singular.")


def _solve(backend, A, B, left=True):
    xp = backend.xp
    shape, vector = _solve_shape(A, B, left)
    if vector:
        out = backend.empty(shape[:-1], A.dtype)
    elif left:
        out = _new_matrices(backend, shape, A.dtype)
    else:
        out = backend.empty(shape, A.dtype)
    if xp is None or not out.numel():
        return out
    a, b = backend.array(A), backend.array(B)
    if vector:
        b = b[..., None]
    try:
        x = xp.linalg.solve(a, b) if left else xp.swapaxes(xp.linalg.solve(xp.swapaxes(a, -1, -2),
                                                                           xp.swapaxes(b, -1, -2)), -1, -2)
    except np.linalg.LinAlgError:
        _raise_singular_solve(xp, A, a)
    backend.array(out)[...] = x[..., 0] if vector else x
    return out


custom("linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor", _solve, _solve)


@overridable
def solve(A, B, *, left=True, out=None):
    """The solution X of A X = B (X A = B with left=False) for square A; B may be a vector or a batch of them.

    >>> lantern.linalg.solve(lantern.tensor([[2., 0.], [0., 4.]]), lantern.tensor([2., 2.])).tolist()
    [1.0, 0.5]
    """
    return _into(out, call(get("linalg_solve"), (A, B, left)), "linalg.solve")


# ---- Cholesky ------------------------------------------------------------------------------------------------

def _cholesky_info(xp, a):
    """LAPACK potrf's info: the order of the first leading minor that is not positive-definite (Sylvester's
    criterion over the lower triangle, which is all potrf reads), 0 when the matrix is positive-definite."""
    lower = xp.tril(a)
    hermitian = lower + xp.conj(xp.swapaxes(xp.tril(a, -1), -1, -2))
    info = xp.zeros(a.shape[:-2], np.int32)
    for k in range(a.shape[-1], 0, -1):  # over the matrix order, vectorised over the batch
        sign, logabsdet = xp.linalg.slogdet(hermitian[..., :k, :k])
        failed = (xp.real(sign) <= 0) | ~xp.isfinite(logabsdet)
        info = xp.where(failed, k, info)
    return info.astype(np.int32)


def _cholesky_ex(backend, A, upper=False, check_errors=False):
    xp = backend.xp
    _check_matrices("linalg.cholesky", A)
    L = _new_matrices(backend, A._size, A.dtype)
    info = backend.empty(A._size[:-2], dt.int32)
    if xp is None or not A.numel():
        if xp is not None:
            backend.array(info)[...] = 0
        return cholesky_ex_rt(L, info)
    a = backend.array(A)
    try:
        values, codes = xp.linalg.cholesky(a, upper=upper), xp.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        codes = _cholesky_info(xp, a)
        values = xp.full(a.shape, xp.nan, a.dtype)
        ok = codes == 0
        values[ok] = xp.linalg.cholesky(a[ok], upper=upper)
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


@overridable
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


@overridable
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): info is LAPACK's per matrix (0, or the order of the first leading minor that is not
    positive-definite) instead of an error."""
    return into_outs(out, call(get("linalg_cholesky_ex"), (A, upper, check_errors)), "linalg.cholesky_ex")


def inverse_of(A):
    return call(get("linalg_inv_ex"), (A, False))[0]


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


_BACKWARD_HELPERS = {"mH": mH, "inverse_of": inverse_of, "det_backward": det_backward,
                     "slogdet_backward": slogdet_backward, "solve_backward_A": solve_backward_A,
                     "solve_backward_B": solve_backward_B, "cholesky_backward": cholesky_backward}
_derivative = partial(derivative, helpers=_BACKWARD_HELPERS)
_derivative("linalg_inv_ex", A="-(mH(inverse) @ (grad @ mH(inverse)))")
_derivative("linalg_det", A="det_backward(grad, A, result)")
_derivative("linalg_slogdet", A="slogdet_backward(grads[0], grads[1], A, sign)")
_derivative("linalg_solve", name="LinalgSolveExBackward0", A="solve_backward_A(grad, A, result, left)",
            B="solve_backward_B(grad, A, left)")
_derivative("linalg_cholesky_ex", A="cholesky_backward(grad, L, upper)")
