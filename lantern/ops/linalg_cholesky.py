"""What torch builds on a Cholesky factor: cholesky_solve and cholesky_inverse (LAPACK potrs and potri through
SciPy, over host arrays: NumPy has neither), with their derivatives, and the deprecated torch.cholesky. The
kernels read only the factor's triangle; the derivatives are those of A = L L^H (U^H U) in the whole factor, as
torch's are.

>>> L = lantern.tensor([[2., 0.], [1., 1.]])
>>> lantern.cholesky_solve(L @ L.mT @ lantern.tensor([[1.], [2.]]), L).tolist()
[[1.0], [2.0]]
"""
from . import linalg_lapack as lapack
from .dispatcher import call
from .meta_util import broadcast_shapes
from .pointwise_common import _require_tensor
from .registry import composite, custom, get
from .derivative import derivative
from .linalg_common import (
    LinAlgError, _batch_prefix, _first_failure, _into, _new_matrices, check_square, mH,
)
from .linalg_solvers import cholesky as linalg_cholesky
from .linalg_triangular import check_lapack_dtype, deprecated


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
    return broadcast_shapes(input._size[:-2], L._size[:-2]) + input._size[-2:]


def _cholesky_solve(backend, input, input2, upper=False):
    shape = _check_cholesky_solve(input, input2)
    X = _new_matrices(backend, shape, input.dtype)
    if backend.xp is None or not X.numel():
        return X
    x = lapack.potrs(backend.host_array(input2), backend.host_array(input), shape[:-2], upper)
    backend.array(X)[...] = backend.from_host(x)
    return X


custom("_cholesky_solve_helper(Tensor self, Tensor input2, bool upper) -> Tensor", _cholesky_solve, _cholesky_solve,
       method=False)


def cholesky_solve(input, input2, upper=False, *, out=None):
    """The solution X of A X = B given A's Cholesky factor input2 (A = L L^H, or U^H U with upper=True).

    >>> U = lantern.tensor([[2., 1.], [0., 1.]])
    >>> lantern.cholesky_solve(U.mT @ U @ lantern.tensor([[1.], [2.]]), U, upper=True).tolist()
    [[1.0], [2.0]]
    """
    return _into(out, call(get("_cholesky_solve_helper"), (input, input2, upper)), "cholesky_solve")


def _zero_diagonal_error(name, factor):
    """LAPACK potri's error: a zero on the factor's diagonal makes the matrix singular."""
    failure = _first_failure(lapack.zero_diagonal_info(factor), factor.ndim > 2)
    if failure is not None:
        index, value = failure
        raise LinAlgError(f"{name}: {_batch_prefix(index)}The diagonal element {value} is zero, the inversion could "
                          "not be completed because the input matrix is singular.")


def _cholesky_inverse(backend, input, upper=False):
    name = "cholesky_inverse"
    check_square(name, input)
    check_lapack_dtype("cholesky_inverse_out_cpu", input)
    inverse = _new_matrices(backend, input._size, input.dtype)
    if backend.xp is None or not input.numel():
        return inverse
    factor = backend.host_array(input)
    _zero_diagonal_error(name, factor)
    backend.array(inverse)[...] = backend.from_host(lapack.potri(factor, upper))
    return inverse


custom("_cholesky_inverse_helper(Tensor self, bool upper=False) -> Tensor", _cholesky_inverse, _cholesky_inverse,
       method=False)


def cholesky_inverse(input, upper=False, *, out=None):
    """(L L^H)^-1 from a Cholesky factor L (U^H U with upper=True): the inverse of the factored matrix.

    >>> lantern.cholesky_inverse(lantern.tensor([[2., 0.], [0., 1.]])).tolist()
    [[0.25, 0.0], [0.0, 1.0]]
    """
    return _into(out, call(get("_cholesky_inverse_helper"), (input, upper)), "cholesky_inverse")


def cholesky(input, upper=False, *, out=None):
    """Deprecated torch.cholesky: linalg.cholesky's factor (U with upper=True)."""
    deprecated("torch.cholesky", "torch.linalg.cholesky")
    return linalg_cholesky(input, upper=upper, out=out)


def factor_gradient(gA, factor, upper):
    """The gradient of A = L L^H (U^H U) in the whole factor, given A's: (gA + gA^H) L, or U (gA + gA^H)."""
    symmetric = gA + mH(gA)
    return factor @ symmetric if upper else symmetric @ factor


def cholesky_solve_backward_B(grad, A, upper):
    """A is Hermitian: gB = A^-1 gX, one more cholesky_solve."""
    return call(get("_cholesky_solve_helper"), (grad, A, upper))


def cholesky_solve_backward_A(grad, A, X, upper):
    """X = A^-1 B: the product's gradient is -gB X^H, carried to the factor."""
    gB = cholesky_solve_backward_B(grad, A, upper)
    return factor_gradient(-(gB @ mH(X)), A, upper)


def cholesky_inverse_backward(grad, factor, inverse, upper):
    """Y = A^-1: the product's gradient is -Y gY Y (Y is Hermitian), carried to the factor."""
    return factor_gradient(-(inverse @ grad @ inverse), factor, upper)


_HELPERS = {"cholesky_solve_backward_A": cholesky_solve_backward_A,
            "cholesky_solve_backward_B": cholesky_solve_backward_B,
            "cholesky_inverse_backward": cholesky_inverse_backward}
derivative("_cholesky_solve_helper", name="CholeskySolveBackward0", helpers=_HELPERS,
           self="cholesky_solve_backward_B(grad, input2, upper)",
           input2="cholesky_solve_backward_A(grad, input2, result, upper)")
derivative("_cholesky_inverse_helper", name="CholeskyInverseBackward0", helpers=_HELPERS, self="cholesky_inverse_backward(grad, self, result, upper)")
composite("cholesky_solve", cholesky_solve)
composite("cholesky_inverse", cholesky_inverse)
composite("cholesky", cholesky)
