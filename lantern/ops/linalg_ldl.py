"""The LDL decomposition of symmetric (or Hermitian) matrices, A = P L D L^H P^T with Bunch-Kaufman pivoting:
linalg.ldl_factor(_ex) and linalg.ldl_solve, LAPACK's sytrf/hetrf and sytrs/hetrs through SciPy over host arrays
(NumPy has no LDL), so LD and the pivots are in LAPACK's compact form, as torch returns them. Not differentiable,
as in torch.

>>> A = lantern.tensor([[4., 2.], [2., 3.]])
>>> LD, pivots = lantern.linalg.ldl_factor(A)
>>> lantern.linalg.ldl_solve(LD, pivots, A @ lantern.tensor([[1.], [2.]])).tolist()
[[1.0], [2.0]]
"""
from . import linalg_lapack as lapack
from ..core import dtype as dt
from .dispatcher import call
from .meta_util import broadcast_shapes
from .pointwise_common import _require_tensor
from .reduction import out_return_type, return_type
from .registry import custom, get
from .linalg_common import (
    _batch_prefix, _check_matrices, _first_failure, _into, _new_matrices, into_outs,
)
from ..core.overridable import overridable

ldl_factor_ex_rt = return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
ldl_factor_rt = return_type("linalg_ldl_factor", ["LD", "pivots"])
out_return_type(ldl_factor_ex_rt)
out_return_type(ldl_factor_rt)


def _ldl_factor_ex(backend, A, hermitian=False, check_errors=False):
    _check_matrices("torch.linalg.ldl_factor_ex", A)
    LD = _new_matrices(backend, A._size, A.dtype)
    pivots = backend.empty(A._size[:-1], dt.int32)
    info = backend.empty(A._size[:-2], dt.int32)
    if backend.xp is None:
        return ldl_factor_ex_rt(LD, pivots, info)
    ld, piv, codes = lapack.sytrf(backend.host_array(A), hermitian)
    if check_errors:
        _singular_error("torch.linalg.ldl_factor_ex", A, codes)
    for t, values in ((LD, ld), (pivots, piv), (info, codes)):
        backend.array(t)[...] = backend.from_host(values)
    return ldl_factor_ex_rt(LD, pivots, info)


def _singular_error(name, A, info):
    failure = _first_failure(info, A.dim() > 2)
    if failure is not None:
        index, value = failure
        raise RuntimeError(f"{name}: {_batch_prefix(index)}D[{value},{value}] is exactly zero: the factorization was "
                           "completed, but D is singular and solving with it would divide by zero.")


custom("linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) -> (Tensor LD, "
       "Tensor pivots, Tensor info)", _ldl_factor_ex, _ldl_factor_ex, method=False)


@overridable
def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info): L's strict lower part and the 1x1/2x2 blocks of D packed in LD's lower triangle,
    LAPACK's pivots (1-based; a negative pair marks a 2x2 block), and info > 0 where D has a zero on its
    diagonal, instead of an error.

    >>> lantern.linalg.ldl_factor_ex(lantern.zeros(2, 2)).info.item()
    1
    """
    return into_outs(out, call(get("linalg_ldl_factor_ex"), (A, hermitian, check_errors)), "linalg.ldl_factor_ex")


@overridable
def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots) of linalg.ldl_factor_ex; a singular D raises."""
    LD, pivots, info = call(get("linalg_ldl_factor_ex"), (A, hermitian, False))
    if info.numel() and info._backend.xp is not None:
        _singular_error("torch.linalg.ldl_factor", A, info._backend.host_array(info))
    return into_outs(out, ldl_factor_rt(LD, pivots), "linalg.ldl_factor")


def _ldl_solve_meta(LD, pivots, B):
    name = "torch.linalg.ldl_solve"
    _require_tensor(name, LD, 1, "LD")
    _require_tensor(name, pivots, 2, "pivots")
    _require_tensor(name, B, 3, "B")
    _check_matrices(name, LD, "LD")
    if B.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if B._size[-2] != LD._size[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {LD._size[-2]} by "
                           f"{LD._size[-1]} but each b matrix is {B._size[-2]} by {B._size[-1]}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {B.dtype.legacy} and A of "
                           f"type {LD.dtype.legacy} instead.")
    if pivots.dtype.category >= dt.FLOATING or pivots._size != LD._size[:-1]:
        raise RuntimeError(f"{name}: Expected pivots to be an integer tensor of shape {list(LD._size[:-1])}, "
                           f"but got {pivots.dtype.legacy} of shape {list(pivots._size)}")
    return broadcast_shapes(LD._size[:-2], B._size[:-2]) + B._size[-2:]


def _ldl_solve(backend, LD, pivots, B, hermitian=False):
    shape = _ldl_solve_meta(LD, pivots, B)
    X = _new_matrices(backend, shape, LD.dtype)
    if backend.xp is None or not X.numel():
        return X
    x = lapack.sytrs(backend.host_array(LD), backend.host_array(pivots), backend.host_array(B), shape[:-2], hermitian)
    backend.array(X)[...] = backend.from_host(x)
    return X


custom("linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor", _ldl_solve,
       _ldl_solve, method=False)


@overridable
def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """The solution X of A X = B given linalg.ldl_factor(A)'s (LD, pivots); batches broadcast."""
    return _into(out, call(get("linalg_ldl_solve"), (LD, pivots, B, hermitian)), "linalg.ldl_solve")
