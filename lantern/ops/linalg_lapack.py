"""LAPACK and BLAS routines NumPy lacks (LU, triangular solves, Cholesky solves and inverse, Householder QR, LDL)
and the matrix exponential, through SciPy's wrappers over host NumPy arrays, one matrix of a batch at a time: the
routines torch calls, so pivots, reflectors, tau, LD and the info codes are LAPACK's own. Kernels hand these
functions `backend.host_array(t)` and bring the results back with `backend.from_host`, so they stay on `xp`
themselves; this file is the host side, exempt from the seam check for that (tests/test_backend_seam.py,
docs/internals/backends.md). Each function broadcasts its inputs over `batch`, the result's batch shape.

>>> lu, pivots, info = getrf(np.array([[1., 2.], [3., 4.]]))
>>> pivots.tolist(), info.tolist()
([2, 2], 0)
"""
import numpy as np
import scipy.linalg


def routine(name, a):
    """SciPy's LAPACK routine `name` ('getrf', 'sytrf', ...) for a's dtype (dgetrf for float64, cgetrf for
    complex64, ...)."""
    return scipy.linalg.get_lapack_funcs(name, (a,))


def matrices(shape):
    """The index of each matrix of a batch of matrices with this shape (one () for a single matrix)."""
    return np.ndindex(*shape[:-2])


def _batched(a, batch):
    return np.broadcast_to(a, tuple(batch) + a.shape[-2:])


def getrf(a):
    """LU with partial pivoting of each matrix: (LU, 1-based pivots, info = index of U's first zero pivot)."""
    m, n = a.shape[-2:]
    lu = np.array(a)
    pivots = np.broadcast_to(np.arange(1, min(m, n) + 1, dtype=np.int32), a.shape[:-2] + (min(m, n),)).copy()
    info = np.zeros(a.shape[:-2], np.int32)
    if not a.size:
        return lu, pivots, info
    getrf_ = routine("getrf", a)
    for i in matrices(a.shape):
        lu[i], pivot, info[i] = getrf_(a[i])
        pivots[i] = pivot + 1
    return lu, pivots, info


def getrs(lu, pivots, b, batch, left, adjoint):
    """Solve op(A) X = B (left) or X op(A) = B with A = P L U given as getrf's (LU, 1-based pivots), op(A) = A^H
    when adjoint. getrs solves op(A) Y = R for op = A (trans 0), A^T (1) or A^H (2); a right solve X op(A) = B is
    the left solve op(A)^T X^T = B^T: A^T for X A = B, and for X A^H = B, conj(A) X^T = B^T, that is
    A conj(X^T) = conj(B^T)."""
    n = lu.shape[-1]
    lu = _batched(lu, batch)
    pivots = np.broadcast_to(pivots, tuple(batch) + (n,)) - 1
    b = _batched(b, batch)
    if left:
        trans, conjugate = (2 if adjoint else 0), False
    else:
        b = np.swapaxes(b, -1, -2)
        trans, conjugate = (0 if adjoint else 1), adjoint and np.iscomplexobj(b)
    getrs_ = routine("getrs", lu)
    x = np.empty(b.shape, b.dtype)
    for i in matrices(b.shape):
        solution = getrs_(lu[i], pivots[i], np.conj(b[i]) if conjugate else b[i], trans=trans)[0]
        x[i] = np.conj(solution) if conjugate else solution
    return x if left else np.swapaxes(x, -1, -2)


def trsm(a, b, batch, upper, left, unitriangular):
    """X with A X = B (X A = B with left=False) for triangular A, reading only its upper or lower triangle. BLAS
    trsm divides by the diagonal unchecked: a zero there gives inf/nan, as torch's does."""
    a, b = _batched(a.astype(b.dtype), batch), _batched(b, batch)
    trsm_ = scipy.linalg.get_blas_funcs("trsm", (a,))
    x = np.empty(b.shape, b.dtype)
    for i in matrices(b.shape):
        x[i] = trsm_(1.0, a[i], b[i], side=0 if left else 1, lower=not upper, diag=int(unitriangular))
    return x


def potrs(factor, b, batch, upper):
    """X with A X = B given A's Cholesky factor (A = L L^H reading the lower triangle, U^H U the upper)."""
    factor, b = _batched(factor, batch), _batched(b, batch)
    potrs_ = routine("potrs", factor)
    x = np.empty(b.shape, b.dtype)
    for i in matrices(b.shape):
        x[i] = potrs_(factor[i], b[i], lower=not upper)[0]
    return x


def zero_diagonal_info(factor):
    """potri's info per matrix: the 1-based index of the factor's first zero diagonal element, 0 if none."""
    zero = np.diagonal(factor, 0, -2, -1) == 0
    return np.where(zero.any(-1), zero.argmax(-1) + 1, 0)


def potri(factor, upper):
    """(L L^H)^-1 (U^H U with upper) from a Cholesky factor: potri writes one triangle of the Hermitian inverse,
    mirrored here into the other."""
    potri_ = routine("potri", factor)
    inverse = np.empty(factor.shape, factor.dtype)
    triangle, strict = (np.triu, 1) if upper else (np.tril, -1)
    for i in matrices(factor.shape):
        half = potri_(factor[i], lower=not upper)[0]
        inverse[i] = triangle(half) + np.conj(triangle(half, strict).T)
    return inverse


def geqrf(a):
    """QR in LAPACK's packed form: (R above the diagonal, Householder vectors below; tau)."""
    qr = np.array(a)
    tau = np.empty(a.shape[:-2] + (min(a.shape[-2:]),), a.dtype)
    geqrf_ = routine("geqrf", a)
    for i in matrices(a.shape):
        qr[i], tau[i] = geqrf_(a[i])[:2]
    return qr, tau


def _sy_or_he(kind, a, hermitian):
    """sytrf/sytrs for symmetric matrices; hetrf/hetrs for Hermitian complex ones."""
    return routine(("he" if hermitian and np.iscomplexobj(a) else "sy") + kind, a)


def sytrf(a, hermitian):
    """LDL^H with Bunch-Kaufman pivoting of each matrix's lower triangle: (LD in the lower triangle, LAPACK's
    pivots, info = index of D's first zero diagonal element)."""
    ld = np.zeros(a.shape, a.dtype)
    pivots = np.zeros(a.shape[:-1], np.int32)
    info = np.zeros(a.shape[:-2], np.int32)
    if a.size:
        sytrf_ = _sy_or_he("trf", a, hermitian)
        for i in matrices(a.shape):
            factor, pivots[i], info[i] = sytrf_(a[i], lower=1)
            ld[i] = np.tril(factor)
    return ld, pivots, info


def sytrs(ld, pivots, b, batch, hermitian):
    """X with A X = B given sytrf's (LD, pivots) of A."""
    n = ld.shape[-1]
    ld, b = _batched(ld, batch), _batched(b, batch)
    pivots = np.broadcast_to(pivots, tuple(batch) + (n,)).astype(np.int32)
    sytrs_ = _sy_or_he("trs", ld, hermitian)
    x = np.empty(b.shape, b.dtype)
    for i in matrices(b.shape):
        x[i] = sytrs_(ld[i], pivots[i], b[i], lower=1)[0]
    return x
