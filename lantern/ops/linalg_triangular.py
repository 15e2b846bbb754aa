"""Triangular systems: torch.linalg.solve_triangular (BLAS trsm through SciPy, over host arrays: NumPy has no
triangular solve), with its derivative, and the deprecated torch.triangular_solve written over it.

>>> U = lantern.tensor([[2., 1.], [0., 4.]])
>>> lantern.linalg.solve_triangular(U, lantern.tensor([[4.], [8.]]), upper=True).tolist()
[[1.0], [2.0]]
"""

from . import linalg_lapack as lapack
from ..core import dtype as dt
from .dispatcher import call
from .meta_util import broadcast_shapes
from .reduction import out_return_type, return_type
from .registry import composite, custom, get
from .derivative import derivative
from .linalg_common import _into, _new_matrices, check_system, lapack_layout, mH
from ..core.overridable import overridable
from ..core import user_warnings

_DEPRECATION_SHOWN = set()


def deprecated(old, advice):
    """torch's one-time UserWarning for a deprecated linear-algebra function."""
    if old not in _DEPRECATION_SHOWN:
        _DEPRECATION_SHOWN.add(old)
        user_warnings.warn(f"{old} is deprecated in favor of {advice} and will be removed in a future PyTorch release.",
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
    x = lapack.trsm(backend.host_array(A), backend.host_array(B).astype(dtype.np), shape[:-2], upper, left,
                    unitriangular)
    backend.array(X)[...] = backend.from_host(x)
    return X


custom("linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) "
       "-> Tensor", _solve_triangular, _solve_triangular, method=False)


@overridable
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


composite("triangular_solve", triangular_solve)
