"""The LU decomposition A = P L U with partial pivoting: linalg.lu_factor(_ex), linalg.lu, torch.lu_unpack and
linalg.lu_solve, with their derivatives, and what is written over them: linalg.solve_ex, the deprecated torch.lu
and torch.lu_solve. The factorisation and the solves are LAPACK's getrf and getrs through SciPy, over host arrays
(NumPy has no LU; ops/linalg_lapack.py), so LU, pivots (1-based, as LAPACK and torch give them) and info are
LAPACK's own.

>>> LU, pivots = lantern.linalg.lu_factor(lantern.tensor([[1., 2.], [3., 4.]]))
>>> LU.tolist(), pivots.tolist()
([[3.0, 4.0], [0.3333333432674408, 0.6666666269302368]], [2, 2])
"""
import numpy as np

from . import linalg_lapack as lapack
from ..core import dtype as dt
from .dispatcher import call
from .meta_util import broadcast_shapes
from .pointwise_common import _require_tensor
from .reduction import out_return_type, return_type
from .registry import composite, custom, get
from .derivative import derivative
from .derivative_helpers import zeros_like
from .linalg_common import (
    LinAlgError, _batch_prefix, _first_failure, _into, _new_matrices, check_system, into_outs, mH,
)
from .linalg_solvers import _solve_shape
from .linalg_triangular import check_lapack_dtype, deprecated, solve_triangular
from ..core.overridable import overridable

lu_factor_ex_rt = return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_factor_rt = return_type("linalg_lu_factor", ["LU", "pivots"])
lu_rt = return_type("linalg_lu", ["P", "L", "U"])
lu_unpack_rt = return_type("lu_unpack", ["P", "L", "U"])
solve_ex_rt = return_type("linalg_solve_ex", ["result", "info"])
lu_with_info_rt = return_type("_lu_with_info", ["LU", "pivots", "info"])
for _rt in (lu_factor_ex_rt, lu_factor_rt, lu_rt, lu_unpack_rt, solve_ex_rt):
    out_return_type(_rt)  # torch.return_types lists each out= twin beside its type


# ---- factorisation -----------------------------------------------------------------------------------------

def _check_lu_input(name, A, pivot):
    _require_tensor(name, A, 1, "A")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: {list(A._size)} instead")
    if not pivot:
        raise RuntimeError(f"{name.replace('torch.', '')}: LU without pivoting is not implemented on the CPU")
    check_lapack_dtype("lu_cpu", A)


def _zero_pivot_error(name, A, info):
    failure = _first_failure(info, A.dim() > 2)
    if failure is not None:
        index, value = failure
        raise RuntimeError(f"{name}: {_batch_prefix(index)}U[{value},{value}] is zero and using it on lu_solve would "
                           "result in a division by zero. If you still want to perform the factorization, consider "
                           "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _lu_factor_ex(backend, A, pivot=True, check_errors=False):
    _check_lu_input("torch.lu_factor", A, pivot)
    m, n = A._size[-2:]
    LU = _new_matrices(backend, A._size, A.dtype)
    pivots = backend.empty(A._size[:-2] + (min(m, n),), dt.int32)
    info = backend.empty(A._size[:-2], dt.int32)
    if backend.xp is None:
        return lu_factor_ex_rt(LU, pivots, info)
    lu, piv, codes = lapack.getrf(backend.host_array(A))
    if check_errors:
        _zero_pivot_error("torch.linalg.lu_factor_ex", A, codes)
    for t, values in ((LU, lu), (pivots, piv), (info, codes)):
        backend.array(t)[...] = backend.from_host(values)
    return lu_factor_ex_rt(LU, pivots, info)


custom("linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, "
       "Tensor info)", _lu_factor_ex, _lu_factor_ex, method=False)


@overridable
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): L (unit diagonal, below) and U (on and above the diagonal) packed in one matrix, the
    row swaps as LAPACK numbers them (row i was swapped with row pivots[i], 1-based), and info = the index of U's
    first zero diagonal element per matrix (0 if none) instead of an error.

    >>> lantern.linalg.lu_factor_ex(lantern.zeros(2, 2)).info.item()
    1
    """
    return into_outs(out, call(get("linalg_lu_factor_ex"), (A, pivot, check_errors)), "linalg.lu_factor_ex")


@overridable
def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) of linalg.lu_factor_ex; a matrix with a zero on U's diagonal raises."""
    LU, pivots, info = call(get("linalg_lu_factor_ex"), (A, pivot, False))
    if info.numel() and info._backend.xp is not None:
        _zero_pivot_error("torch.linalg.lu_factor", A, info._backend.host_array(info))
    return into_outs(out, lu_factor_rt(LU, pivots), "linalg.lu_factor")


# ---- unpacking: P, L, U ------------------------------------------------------------------------------------

def _check_lu_unpack(LU, pivots, unpack_pivots):
    name = "torch.lu_unpack"
    _require_tensor(name, LU, 1, "LU_data")
    _require_tensor(name, pivots, 2, "LU_pivots")
    if LU.dim() < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: {list(LU._size)} instead")
    if unpack_pivots and pivots.dtype is not dt.int32:
        raise RuntimeError(f"{name}: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    k = min(LU._size[-2:])
    if unpack_pivots and pivots._size[-1:] != (k,):
        raise RuntimeError(f"{name}: LU_pivots must have {k} pivots per matrix (min(LU.size(-2), LU.size(-1))) "
                           f"but has shape {list(pivots._size)}. Did you properly pass the result of lu_factor?")


def permutation_matrices(xp, pivots, m, dtype):
    """P with A = P L U from LAPACK's row swaps: swap i exchanged rows i and pivots[i] - 1 of A, in order, giving
    the permutation `order` with (P^T A)[j] = A[order[j]], so P[order[j], j] = 1."""
    batch = pivots.shape[:-1]
    order = xp.broadcast_to(xp.arange(m), batch + (m,)).copy()
    for i in range(pivots.shape[-1]):
        j = (pivots[..., i:i + 1] - 1).astype(np.int64)
        row_i, row_j = order[..., i:i + 1].copy(), xp.take_along_axis(order, j, -1)
        order[..., i:i + 1] = row_j
        xp.put_along_axis(order, j, row_i, -1)
    P = xp.zeros(batch + (m, m), dtype)
    xp.put_along_axis(P, order[..., None, :], 1, -2)
    return P


def _lu_unpack(backend, LU, pivots, unpack_data=True, unpack_pivots=True):
    _check_lu_unpack(LU, pivots, unpack_pivots)
    m, n = LU._size[-2:]
    k = min(m, n)
    batch = broadcast_shapes(LU._size[:-2], pivots._size[:-1]) if unpack_pivots else LU._size[:-2]
    P = backend.empty(batch + (m, m) if unpack_pivots else (0,), LU.dtype)
    L = backend.empty(LU._size[:-2] + (m, k) if unpack_data else (0,), LU.dtype)
    U = backend.empty(LU._size[:-2] + (k, n) if unpack_data else (0,), LU.dtype)
    xp = backend.xp
    if xp is None:
        return lu_unpack_rt(P, L, U)
    if unpack_pivots and P.numel():
        piv = backend.array(pivots)
        if piv.size and (piv.min() < 1 or piv.max() > m):
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
                               "properly pass the result of lu_factor?")
        backend.array(P)[...] = permutation_matrices(xp, xp.broadcast_to(piv, batch + (k,)), m, LU.dtype.np)
    if unpack_data:
        lu = backend.array(LU)
        backend.array(L)[...] = xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=LU.dtype.np)
        backend.array(U)[...] = xp.triu(lu[..., :k, :])
    return lu_unpack_rt(P, L, U)


custom("lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, "
       "Tensor L, Tensor U)", _lu_unpack, _lu_unpack, method=False)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from linalg.lu_factor's packed result: P from the pivots, L and U from LU's triangles
    (unpack_data=False or unpack_pivots=False leaves the skipped ones empty).

    >>> lantern.lu_unpack(*lantern.linalg.lu_factor(lantern.tensor([[0., 1.], [1., 0.]]))).P.tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    return into_outs(out, call(get("lu_unpack"), (LU_data, LU_pivots, unpack_data, unpack_pivots)), "lu_unpack")


def _lu(backend, A, pivot=True):
    _check_lu_input("linalg.lu", A, pivot)
    LU, pivots, _ = _lu_factor_ex(backend, A)
    return lu_rt(*_lu_unpack(backend, LU, pivots))


custom("linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)", _lu, _lu, method=False)


@overridable
def lu(A, *, pivot=True, out=None):
    """A = P L U: a permutation P, unit lower-trapezoidal L (m x k) and upper-trapezoidal U (k x n), k = min(m, n).

    >>> P, L, U = lantern.linalg.lu(lantern.tensor([[1., 2.], [3., 4.]]))
    >>> (P @ L @ U).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    return into_outs(out, call(get("linalg_lu"), (A, pivot)), "linalg.lu")


# ---- solving with a factorisation ----------------------------------------------------------------------------

def _lu_solve_meta(LU, pivots, B, left):
    name = "linalg.lu_solve"
    _require_tensor(name, pivots, 2, "pivots")
    check_system(name, LU, B, left, square_name=f"torch.{name}")
    n = LU._size[-1]
    if B.dtype is not LU.dtype:
        raise RuntimeError(f"{name}: Expected LU and B to have the same dtype, but found LU of type "
                           f"{LU.dtype.legacy} and B of type {B.dtype.legacy} instead")
    if pivots.dtype is not dt.int32:
        raise RuntimeError(f"{name}: pivots should be a Tensor of scalar type torch.int32")
    if pivots._size[-1:] != (n,):
        raise RuntimeError(f"{name}: Number of pivots per batch should be same as the dimension of the matrix")
    check_lapack_dtype("linalg_lu_solve", LU)
    return broadcast_shapes(broadcast_shapes(LU._size[:-2], pivots._size[:-1]), B._size[:-2]) + B._size[-2:]


def _lu_solve(backend, LU, pivots, B, left=True, adjoint=False):
    shape = _lu_solve_meta(LU, pivots, B, left)
    X = _new_matrices(backend, shape, LU.dtype) if left else backend.empty(shape, LU.dtype)
    if backend.xp is None or not X.numel():
        return X
    x = lapack.getrs(backend.host_array(LU), backend.host_array(pivots), backend.host_array(B), shape[:-2], left,
                     adjoint)
    backend.array(X)[...] = backend.from_host(x)
    return X


custom("linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor",
       _lu_solve, _lu_solve, method=False)


@overridable
def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """The solution X of A X = B given linalg.lu_factor(A) (X A = B with left=False, A^H in place of A with
    adjoint=True); batches broadcast.

    >>> A = lantern.tensor([[1., 2.], [3., 4.]])
    >>> lantern.linalg.lu_solve(*lantern.linalg.lu_factor(A), A @ lantern.tensor([[1.], [1.]])).tolist()
    [[1.0], [1.0]]
    """
    return _into(out, call(get("linalg_lu_solve"), (LU, pivots, B, left, adjoint)), "linalg.lu_solve")


@overridable
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(result, info): linalg.solve through LU, with getrf's info per matrix instead of an error (a singular
    matrix leaves inf or nan in its result).

    >>> lantern.linalg.solve_ex(lantern.eye(2) * 2, lantern.ones(2)).result.tolist()
    [0.5, 0.5]
    """
    _solve_shape(A, B, left)
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and B._size == A._size[:-1])
    LU, pivots, info = lu_factor_ex(A)
    if check_errors and info.numel() and info._backend.xp is not None:
        failure = _first_failure(info._backend.host_array(info), A.dim() > 2)
        if failure is not None:
            raise LinAlgError(f"torch.linalg.solve_ex: {_batch_prefix(failure[0])}The solver failed because the "
                              "input matrix is singular.")
    X = lu_solve(LU, pivots, B.unsqueeze(-1) if vector else B, left=left)
    return into_outs(out, solve_ex_rt(X.squeeze(-1) if vector else X, info), "linalg.solve_ex")


def torch_lu(A, pivot=True, get_infos=False, out=None):
    """Deprecated torch.lu: (LU, pivots), with info too when get_infos=True (a plain tuple)."""
    deprecated("torch.lu", "torch.linalg.lu_factor / torch.linalg.lu_factor_ex")
    LU, pivots, info = call(get("linalg_lu_factor_ex"), (A, pivot, False))
    result = lu_with_info_rt(LU, pivots, info) if get_infos else (LU, pivots)
    if out is None:
        return result
    return tuple(_into(o, r, "lu") for o, r in zip(out, result))


def torch_lu_solve(input, LU_data, LU_pivots, *, out=None):
    """Deprecated torch.lu_solve(b, LU, pivots): linalg.lu_solve(LU, pivots, b)."""
    deprecated("torch.lu_solve", "torch.linalg.lu_solve")
    return lu_solve(LU_data, LU_pivots, input, out=out)


composite("lu", torch_lu)
composite("lu_solve", torch_lu_solve)
composite("lu_unpack", lu_unpack, method=False)


# ---- derivatives -------------------------------------------------------------------------------------------

def _square_lu_backward(gL, gU, L, U):
    """A = L U (square, unpivoted): gA = L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H."""
    phi = (mH(L) @ gL).tril(-1) + (gU @ mH(U)).triu()
    X = solve_triangular(mH(L), phi, upper=True, unitriangular=True)
    return solve_triangular(mH(U), X, upper=False, left=False)


def lu_backward(gL, gU, P, L, U):
    """The gradient of A = P L U. A tall A adds rows L2 = A2 U^-1 below the square part, a wide one columns
    U2 = L^-1 A2 to its right; each feeds back into the square part's gU (gL) as well as giving A2's gradient."""
    gL = zeros_like(L) if gL is None else gL
    gU = zeros_like(U) if gU is None else gU
    m, n = L._size[-2], U._size[-1]
    if m == n:
        return P @ _square_lu_backward(gL, gU, L, U)
    if m > n:
        L1, L2 = L.narrow(-2, 0, n), L.narrow(-2, n, m - n)
        gA2 = solve_triangular(mH(U), gL.narrow(-2, n, m - n), upper=False, left=False)
        gA1 = _square_lu_backward(gL.narrow(-2, 0, n), gU - mH(L2) @ gA2, L1, U)
        return P @ call(get("cat"), ([gA1, gA2], -2))
    U1, U2 = U.narrow(-1, 0, m), U.narrow(-1, m, n - m)
    gA2 = solve_triangular(mH(L), gU.narrow(-1, m, n - m), upper=True, unitriangular=True)
    gA1 = _square_lu_backward(gL - gA2 @ mH(U2), gU.narrow(-1, 0, m), L, U1)
    return P @ call(get("cat"), ([gA1, gA2], -1))


def lu_factor_ex_backward(grad, LU, pivots):
    """LU packs L's strict lower part and U's upper part: their gradients are grad's first k columns and rows."""
    k = min(LU._size[-2:])
    P, L, U = call(get("lu_unpack"), (LU, pivots, True, True))
    return lu_backward(grad.narrow(-1, 0, k), grad.narrow(-2, 0, k), P, L, U)


def lu_unpack_backward(grads, LU_meta):
    """L and U read LU's strict lower and upper triangles: their gradients land there (padded to LU's shape, read
    from its geometry: as PyTorch's, the node keeps no tensor)."""
    _, gL, gU = grads
    m, n = LU_meta.size[-2:]
    total = zeros_like(LU_meta)
    if gL is not None:
        total = total + call(get("constant_pad_nd"), (gL.tril(-1), [0, n - gL._size[-1]], 0))
    if gU is not None:
        total = total + call(get("constant_pad_nd"), (gU.triu(), [0, 0, 0, m - gU._size[-2]], 0))
    return total


def lu_solve_backward_B(grad, LU, pivots, left, adjoint):
    """gB = A^-H gX (left) or gX A^-H (right), with A^H in place of A for the adjoint."""
    return call(get("linalg_lu_solve"), (LU, pivots, grad, left, not adjoint))


def lu_solve_backward_LU(grad, LU, pivots, X, left, adjoint):
    """gA of X = op(A)^-1 B (or B op(A)^-1), carried to the packed LU as lu_factor_ex's inverse:
    gL = tril(P^T gA U^H, -1), gU = triu(L^H P^T gA)."""
    gB = lu_solve_backward_B(grad, LU, pivots, left, adjoint)
    if left:
        gA = -(X @ mH(gB)) if adjoint else -(gB @ mH(X))
    else:
        gA = -(mH(gB) @ X) if adjoint else -(mH(X) @ gB)
    P, L, U = call(get("lu_unpack"), (LU, pivots, True, True))
    PtgA = mH(P) @ gA
    return (PtgA @ mH(U)).tril(-1) + (mH(L) @ PtgA).triu()


_HELPERS = {"lu_backward": lu_backward, "lu_factor_ex_backward": lu_factor_ex_backward,
            "lu_unpack_backward": lu_unpack_backward, "lu_solve_backward_B": lu_solve_backward_B,
            "lu_solve_backward_LU": lu_solve_backward_LU}
derivative("linalg_lu_factor_ex", helpers=_HELPERS, A="lu_factor_ex_backward(grad, LU, pivots)")
derivative("linalg_lu", helpers=_HELPERS, A="lu_backward(grads[1], grads[2], P, L, U)")
derivative("lu_unpack", helpers=_HELPERS, LU_data="lu_unpack_backward(grads, LU_data_meta)")
derivative("linalg_lu_solve", helpers=_HELPERS, LU="lu_solve_backward_LU(grad, LU, pivots, result, left, adjoint)",
           B="lu_solve_backward_B(grad, LU, pivots, left, adjoint)")
