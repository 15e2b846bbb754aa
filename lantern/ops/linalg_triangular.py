"""Triangular systems: torch.linalg.solve_triangular (BLAS trsm through SciPy, over host arrays: NumPy has no
triangular solve), with its derivative, and the torch functions written over it: triangular_solve,
cholesky_solve, cholesky_inverse and the deprecated torch.cholesky.

>>> U = lantern.tensor([[2., 1.], [0., 4.]])
>>> lantern.linalg.solve_triangular(U, lantern.tensor([[4.], [8.]]), upper=True).tolist()
[[1.5], [2.0]]
"""
import warnings

import numpy as np

from ..core import dtype as dt
from .dispatcher import call
from .meta_util import broadcast_shapes
from .pointwise_common import _require_tensor
from .reduction import out_return_type, return_type
from .registry import composite, custom, get
from .derivative import derivative
from .linalg_common import (
    LinAlgError, _batch_prefix, _first_failure, _into, _new_matrices, batch_indices, blas, check_square, check_system,
    host, lapack_layout, mH, _eye,
)
from .linalg_solvers import cholesky as linalg_cholesky

_DEPRECATION_SHOWN = set()


def deprecated(old, advice):
    """torch's one-time UserWarning for a deprecated linear-algebra function."""
    if old not in _DEPRECATION_SHOWN:
        _DEPRECATION_SHOWN.add(old)
        warnings.warn(f"{old} is deprecated in favor of {advice} and will be removed in a future PyTorch release.",
                      UserWarning, stacklevel=3)


def check_lapack_dtype(kernel, *tensors):
    """torch's CPU linear algebra runs on float, double, cfloat and cdouble only."""
    for t in tensors:
        if t.dtype.category < dt.FLOATING or t.dtype in (dt.float16, dt.bfloat16):
            raise NotImplementedError(f'"{kernel}" not implemented for \'{t.dtype.legacy}\'')


# ---- linalg.solve_triangular -----------------------------------------------------------------------------------

def _solve_triangular_meta(A, B, left):
    check_system("linalg.solve_triangular", A, B, left)
    check_lapack_dtype("triangular_solve_cpu", A, B)
    batch = broadcast_shapes(A._size[:-2], B._size[:-2])
    return A.dtype, batch + B._size[-2:]  # B is cast to A's dtype, as torch does


def _solve_triangular(backend, A, B, upper, left=True, unitriangular=False):
    dtype, shape = _solve_triangular_meta(A, B, left)
    X = _new_matrices(backend, shape, dtype)
    if backend.xp is None or not X.numel():
        return X
    xp = backend.xp
    a = host(xp.broadcast_to(backend.array(A).astype(dtype.np), shape[:-2] + A._size[-2:]))
    b = host(xp.broadcast_to(backend.array(B).astype(dtype.np), shape))
    trsm = blas("trsm", a)
    x = np.empty(shape, dtype.np)
    for i in batch_indices(shape):  # trsm divides by the diagonal unchecked: a zero there gives inf/nan, as torch's
        x[i] = trsm(1.0, a[i], b[i], side=0 if left else 1, lower=not upper, diag=int(unitriangular))
    backend.array(X)[...] = xp.asarray(x)
    return X


custom("linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) "
       "-> Tensor", _solve_triangular, _solve_triangular, method=False)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """The solution X of A X = B (X A = B with left=False) for triangular A, reading only A's upper or lower
    triangle (and taking its diagonal as ones with unitriangular=True); batches broadcast.

    >>> L = lantern.tensor([[1., 0.], [2., 1.]])
    >>> lantern.linalg.solve_triangular(L, lantern.tensor([[1.], [4.]]), upper=False).tolist()
    [[1.0], [2.0]]
    """
    return _into(out, call(get("linalg_solve_triangular"), (A, B, upper, left, unitriangular)),
                 "linalg.solve_triangular")


def triangle_of(grad, upper, unitriangular):
    """The part of a gradient that reaches A: the triangle solve_triangular reads."""
    if upper:
        return grad.triu(1 if unitriangular else 0)
    return grad.tril(-1 if unitriangular else 0)


def solve_triangular_backward_B(grad, A, upper, left, unitriangular):
    """gB = A^-H gX (gX A^-H with left=False): a solve with the transposed triangle."""
    return call(get("linalg_solve_triangular"), (mH(A), grad, not upper, left, unitriangular))


def solve_triangular_backward_A(grad, A, X, upper, left, unitriangular):
    """gA = -gB X^H (left) or -X^H gB (right), restricted to the triangle A was read from."""
    gB = solve_triangular_backward_B(grad, A, upper, left, unitriangular)
    return triangle_of(-(gB @ mH(X)) if left else -(mH(X) @ gB), upper, unitriangular)


_HELPERS = {"solve_triangular_backward_A": solve_triangular_backward_A,
            "solve_triangular_backward_B": solve_triangular_backward_B}
derivative("linalg_solve_triangular", helpers=_HELPERS,
           self="solve_triangular_backward_A(grad, self, result, upper, left, unitriangular)",
           B="solve_triangular_backward_B(grad, self, upper, left, unitriangular)")


# ---- torch.triangular_solve, cholesky_solve, cholesky_inverse, cholesky ----------------------------------------

triangular_solve_rt = return_type("triangular_solve", ["solution", "cloned_coefficient"])
triangular_solve_out_rt = out_return_type(triangular_solve_rt)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Deprecated torch.triangular_solve(b, A): (X, a copy of A) with op(A) X = b, op(A) = A^T when transpose.

    >>> lantern.triangular_solve(lantern.tensor([[2.], [3.]]), lantern.eye(2) * 2).solution.tolist()
    [[1.0], [1.5]]
    """
    deprecated("torch.triangular_solve", "torch.linalg.solve_triangular")
    if input.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
                           f"{input.dim()} dimensions instead")
    if A.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has "
                           f"{A.dim()} dimensions instead")
    if input.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {input.dtype.legacy} and "
                           f"A of type {A.dtype.legacy} instead.")
    coefficient = A.mT if transpose else A
    solution = solve_triangular(coefficient, input, upper=upper != transpose, unitriangular=unitriangular)
    batch = solution._size[:-2]
    cloned = lapack_layout(A.expand(batch + A._size[-2:]))
    if cloned is A:
        cloned = A.clone()
    if out is None:
        return triangular_solve_rt(solution, cloned)
    return triangular_solve_out_rt(_into(out[0], solution, "triangular_solve"),
                                   _into(out[1], cloned, "triangular_solve"))


def _check_cholesky_solve(input, L):
    name = "cholesky_solve"
    _require_tensor(name, input, 1, "input")
    _require_tensor(name, L, 2, "input2")
    if input.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.dim()} dimensions instead")
    if L.dim() < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L.dim()} dimensions instead")
    if input.dtype is not L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {input.dtype.legacy} and "
                           f"A of type {L.dtype.legacy} instead.")
    if L._size[-1] != L._size[-2] or L._size[-1] != input._size[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {L._size[-2]} by "
                           f"{L._size[-1]} but each b matrix is {input._size[-2]} by {input._size[-1]}")
    check_lapack_dtype("cholesky_solve_cpu", L)


def cholesky_solve(input, input2, upper=False, *, out=None):
    """The solution X of A X = B given A's Cholesky factor (A = L L^H, or U^H U with upper=True): two
    triangular solves.

    >>> L = lantern.tensor([[2., 0.], [1., 1.]])
    >>> lantern.cholesky_solve(L @ L.mT @ lantern.tensor([[1.], [2.]]), L).tolist()
    [[1.0], [2.0]]
    """
    _check_cholesky_solve(input, input2)
    lower = mH(input2) if upper else input2
    Y = solve_triangular(lower, input, upper=False)
    return _into(out, solve_triangular(mH(lower), Y, upper=True), "cholesky_solve")


def cholesky_inverse(input, upper=False, *, out=None):
    """(L L^H)^-1 from a Cholesky factor L (U^H U with upper=True): the inverse of the factored matrix.

    >>> lantern.cholesky_inverse(lantern.tensor([[2., 0.], [0., 1.]])).tolist()
    [[0.25, 0.0], [0.0, 1.0]]
    """
    name = "cholesky_inverse"
    check_square(name, input)
    check_lapack_dtype("cholesky_inverse_out_cpu", input)
    _zero_diagonal_error(name, input)
    lower = mH(input) if upper else input
    n = input._size[-1]
    identity = _eye(n, input).expand(input._size)
    L_inverse = solve_triangular(lower, identity, upper=False)
    return _into(out, lapack_layout(mH(L_inverse) @ L_inverse), name)


def _zero_diagonal_error(name, factor):
    """LAPACK potri's error: a zero on the factor's diagonal makes the matrix singular."""
    if factor._backend.xp is None or not factor.numel():
        return
    diagonal = host(factor._backend.array(factor.diagonal(0, -2, -1)))
    zero = diagonal == 0
    info = np.where(zero.any(-1), zero.argmax(-1) + 1, 0)
    failure = _first_failure(info, factor.dim() > 2)
    if failure is not None:
        index, value = failure
        raise LinAlgError(f"{name}: {_batch_prefix(index)}The diagonal element {value} is zero, the inversion could "
                          "not be completed because the input matrix is singular.")


def cholesky(input, upper=False, *, out=None):
    """Deprecated torch.cholesky: linalg.cholesky's factor (U with upper=True)."""
    deprecated("torch.cholesky", "torch.linalg.cholesky")
    return linalg_cholesky(input, upper=upper, out=out)


composite("triangular_solve", triangular_solve)
composite("cholesky_solve", cholesky_solve)
composite("cholesky_inverse", cholesky_inverse)
composite("cholesky", cholesky)
