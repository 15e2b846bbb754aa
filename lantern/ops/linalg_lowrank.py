"""Randomised low-rank SVD and PCA: torch.svd_lowrank and torch.pca_lowrank (Halko, Martinsson and Tropp,
"Finding structure with randomness", 2009: a random range finder refined by subspace iterations, then the SVD
of the small projected matrix). They draw from lantern's default generator as torch draws from its own, so a
seeded run gives torch's numbers.

>>> _ = lantern.manual_seed(0)
>>> U, S, V = lantern.svd_lowrank(lantern.tensor([[3., 0.], [0., 2.], [0., 0.]]), q=2)
>>> [round(s, 4) for s in S.tolist()]
[3.0, 2.0]
"""
from ..core import dtype as dt
from .dispatcher import call
from .registry import composite, get
from .linalg_common import mH
from .linalg_decompositions import qr, svd


def _orthonormal_basis(X):
    return qr(X).Q


def approximate_basis(A, q, niter=2, M=None):
    """Q with q orthonormal columns whose span nearly holds the range of A - M (Halko et al.'s Algorithm 4.4):
    the range of (A - M) times a Gaussian matrix, sharpened by niter rounds of (A - M)^H then (A - M)."""
    def times(X):
        return A @ X if M is None else A @ X - M @ X

    def adjoint_times(X):
        return mH(A) @ X if M is None else mH(A) @ X - mH(M) @ X

    dtype = A.dtype if A.dtype.category >= dt.FLOATING else dt.float32
    gaussian = call(get("randn"), ((A._size[-1], q), None, dtype, None, A.device, None, False))
    Q = _orthonormal_basis(times(gaussian))
    for _ in range(niter):
        Q = _orthonormal_basis(adjoint_times(Q))
        Q = _orthonormal_basis(times(Q))
    return Q


def _svd_lowrank(A, q, niter, M):
    m, n = A._size[-2:]
    if M is not None:
        M = M.broadcast_to(A._size)
    if m < n:  # work with the tall A^H, whose range is the smaller space
        A, M = mH(A), (None if M is None else mH(M))
    Q = approximate_basis(A, q, niter=niter, M=M)
    B = mH(Q) @ A if M is None else mH(Q) @ A - mH(Q) @ M
    U, S, Vh = svd(B, full_matrices=False)
    U, V = Q @ U, mH(Vh)
    return (V, S, U) if m < n else (U, S, V)


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ≈ U diag(S) V^H for a (nearly) rank-q A: a randomised SVD, cheaper than
    linalg.svd on large low-rank matrices. Seed the generator for repeatable results."""
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of the randomised SVD of the centred data A (rows are samples): V's columns are the principal
    directions, S**2 / (m - 1) the variances along them. q defaults to min(6, m, n)."""
    m, n = A._size[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter, None)


composite("svd_lowrank", svd_lowrank, method=False)
composite("pca_lowrank", pca_lowrank, method=False)
