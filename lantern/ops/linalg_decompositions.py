"""torch.linalg's decompositions over numpy.linalg, batched over leading dims: SVD, the Hermitian
eigendecomposition and QR, each with its derivative, and the composites over them (pinv, matrix_rank,
matrix_power, lstsq, cross). Outputs are column-major in each matrix, as LAPACK writes them and PyTorch returns.

>>> lantern.linalg.svdvals(lantern.tensor([[3., 0.], [0., 4.]])).tolist()
[4.0, 3.0]
"""
import numpy as np

from ..core import dtype as dt
from .dispatcher import call
from .meta_util import shape_str
from .pointwise_common import _require_tensor
from .reduction import return_type
from .registry import custom, get
from .derivative import derivative
from .linalg_common import _check_matrices, _new_matrices, mH, _eye, _into, into_outs
from .linalg_solvers import inv
from ..core.overridable import overridable


# ---- SVD, Hermitian eigendecomposition, QR ---------------------------------------------------------------------

svd_rt = return_type("linalg_svd", ["U", "S", "Vh"])
torch_svd_rt = return_type("svd", ["U", "S", "V"])
eigh_rt = return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
qr_rt = return_type("linalg_qr", ["Q", "R"])


def _svd(backend, A, full_matrices=True, driver=None):
    xp = backend.xp
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
    if xp is not None and A.numel():
        u, s, vh = xp.linalg.svd(backend.array(A), full_matrices=full_matrices)
        for t, values in ((U, u), (S, s), (Vh, vh)):
            backend.array(t)[...] = values
    elif xp is not None and U.numel() + Vh.numel():  # no elements to decompose: identity factors
        backend.array(U)[...] = xp.eye(m, u_cols)
        backend.array(Vh)[...] = xp.eye(v_rows, n)
    return svd_rt(U, S, Vh)


custom("linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)",
       _svd, _svd)


@overridable
def svd(A, full_matrices=True, *, driver=None, out=None):
    """A = U diag(S) Vh, singular values in descending order (full_matrices=False: the reduced factors).

    >>> lantern.linalg.svd(lantern.tensor([[3., 0.], [0., -4.]])).S.tolist()
    [4.0, 3.0]
    """
    return into_outs(out, call(get("linalg_svd"), (A, full_matrices, driver)), "linalg.svd")


@overridable
def svdvals(A, *, driver=None, out=None):
    """The singular values of each matrix, descending (differentiable through the reduced SVD)."""
    _check_matrices("linalg.svdvals", A, square=False)
    return _into(out, call(get("linalg_svd"), (A, False, driver))[1], "linalg.svdvals")


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
        w, v = backend.xp.linalg.eigh(backend.array(A), UPLO=UPLO)
        backend.array(values)[...] = w
        backend.array(vectors)[...] = v
    return eigh_rt(values, vectors)


custom("linalg_eigh(Tensor A, str UPLO='L') -> (Tensor eigenvalues, Tensor eigenvectors)", _eigh, _eigh)


@overridable
def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors of Hermitian matrices, reading the UPLO triangle.

    >>> lantern.linalg.eigh(lantern.tensor([[2., 1.], [1., 2.]])).eigenvalues.tolist()
    [1.0, 3.0]
    """
    return into_outs(out, call(get("linalg_eigh"), (A, UPLO)), "linalg.eigh")


@overridable
def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues of Hermitian matrices, ascending (differentiable through eigh)."""
    return _into(out, call(get("linalg_eigh"), (A, UPLO))[0], "linalg.eigvalsh")


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
        q, r = backend.xp.linalg.qr(backend.array(A), mode="complete" if mode == "complete" else "reduced")
        if mode != "r":
            backend.array(Q)[...] = q
        backend.array(R)[...] = r
    elif backend.xp is not None and Q.numel():
        backend.array(Q)[...] = backend.xp.eye(m, k)
    return qr_rt(Q, R)


custom("linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)", _qr, _qr)


@overridable
def qr(A, mode="reduced", *, out=None):
    """A = Q R with orthonormal Q and upper-triangular R; mode 'reduced', 'complete' or 'r' (R only).

    >>> lantern.linalg.qr(lantern.tensor([[3., 0.], [4., 5.]])).R.abs().tolist()
    [[5.0, 4.0], [0.0, 3.0]]
    """
    return into_outs(out, call(get("linalg_qr"), (A, mode)), "linalg.qr")


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


_BACKWARD_HELPERS = {"svd_backward": svd_backward, "eigh_backward": eigh_backward, "qr_backward": qr_backward}
derivative("linalg_svd", helpers=_BACKWARD_HELPERS, A="svd_backward(grads, U, S, Vh, full_matrices)")
derivative("linalg_eigh", helpers=_BACKWARD_HELPERS, A="eigh_backward(grads, eigenvalues, eigenvectors)")
derivative("linalg_qr", helpers=_BACKWARD_HELPERS, A="qr_backward(grads, Q, R, mode)")


# ---- composites over the decompositions: pinv, matrix_rank, matrix_power, lstsq, cross ------------------------

def _cutoff(S, atol, rtol, shape, dtype):
    """max(atol, rtol * largest singular value) per matrix (a tensor tolerance holds one value per matrix); rtol
    defaults to eps * max(m, n) where atol is not positive, to 0 where it is."""
    largest = S.amax(-1, keepdim=True) if S._size[-1] else S.new_zeros(S._size[:-1] + (1,))
    atol = _per_matrix(0.0 if atol is None else atol, largest)
    if rtol is None:
        default = dt.finfo(dtype.to_real()).eps * max(shape[-2:])
        rtol = call(get("where"), (atol > 0, 0.0, default))
    else:
        rtol = _per_matrix(rtol, largest)
    return call(get("maximum"), (atol, rtol * largest))


def _check_tolerance_kinds(function, atol, rtol):
    """torch takes both tolerances as numbers or both as tensors: a number beside a tensor of one value per matrix
    matches neither of its signatures (a 0-d tensor passes for a number)."""
    numbers = [t for t in (atol, rtol) if isinstance(t, (int, float))]
    batched = [t for t in (atol, rtol) if hasattr(t, "dim") and t.dim()]
    if numbers and batched:
        raise TypeError(f"{function}() received an invalid combination of arguments: atol and rtol must both be "
                        "numbers or both be tensors")


def _check_tolerances(name, atol, rtol):
    for argname, tolerance in (("atol", atol), ("rtol", rtol)):
        if hasattr(tolerance, "dim") and tolerance.dtype.is_complex:
            raise RuntimeError(f"{name}: {argname} tensor of complex type is not supported. Got "
                               f"{tolerance.dtype.legacy}")


def _per_matrix(tolerance, largest):
    """A tolerance as a tensor that broadcasts against `largest` (..., 1): a float as a 0-d tensor, a tensor of
    one value per matrix with a trailing dimension."""
    if hasattr(tolerance, "dim"):
        return tolerance.unsqueeze(-1) if tolerance.dim() else tolerance
    return largest.new_full((), tolerance)


def _check_pinv(name, A):
    _require_tensor(name, A)
    if A.dim() < 2 or A.dtype.category < dt.FLOATING or A.dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"{name}({A.dtype.legacy}{{{shape_str(A._size)}}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")


def _pinv(backend, A, atol=None, rtol=None, hermitian=False):
    """The pseudo-inverse's value, computed outside autograd: its gradient is pinv_backward's, which holds where
    the SVD's does not (repeated zero singular values of a rank-deficient A)."""
    _check_pinv("linalg.pinv", A)
    _check_tolerances("torch.linalg.pinv", atol, rtol)
    from ..autograd.grad_mode import no_grad
    with no_grad():
        if hermitian:
            values, V = eigh(A)
            S, left, right = values.abs(), V, mH(V)
        else:
            left, S, right = svd(A, full_matrices=False)
            values = S
        keep = S > _cutoff(S, atol, rtol, A._size, A.dtype)
        inverse = call(get("where"), (keep, 1 / call(get("where"), (keep, values, 1.0)), 0.0)).to(A.dtype)
        return (mH(right) * inverse.unsqueeze(-2)) @ mH(left)


custom("linalg_pinv(Tensor self, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor", _pinv, _pinv,
       method=False)


@overridable
def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The Moore-Penrose pseudo-inverse through the SVD (eigh when hermitian), singular values at or below
    max(atol, rtol * σ_max) treated as zero (`rcond`, torch's older positional form, is rtol).

    >>> lantern.linalg.pinv(lantern.tensor([[2., 0.], [0., 0.]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    _check_tolerance_kinds("linalg_pinv", atol, rtol)
    if rcond is not None:
        rtol = rcond
    return _into(out, call(get("linalg_pinv"), (A, atol, rtol, hermitian)), "linalg.pinv")


def pinv_backward(grad, X, A):
    """The adjoint of dX = -X dA X + X X^H dA^H (I - A X) + (I - X A) dA^H X^H X, the derivative of X = pinv(A)
    wherever A's rank stays the same: gA = -X^H G X^H + (I - A X) G^H X X^H + X^H X G^H (I - X A)."""
    Xh, Gh = mH(X), mH(grad)
    left_residual = Gh - A @ (X @ Gh)     # (I - A X) G^H
    right_residual = Gh - (Gh @ X) @ A    # G^H (I - X A)
    return -(Xh @ grad) @ Xh + left_residual @ (X @ Xh) + (Xh @ X) @ right_residual


derivative("linalg_pinv", name="LinalgPinvBackward0", helpers={"pinv_backward": pinv_backward},
           scalar_inputs=("atol", "rtol"), self="pinv_backward(grad, result, self)")


@overridable
def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The number of singular values above max(atol, rtol * σ_max), per matrix (an int64 tensor); `tol`, torch's
    older positional form, is atol with rtol 0.

    >>> lantern.linalg.matrix_rank(lantern.tensor([[1., 0.], [0., 1e-3]]), 0.01).item()
    1
    """
    _check_tolerance_kinds("linalg_matrix_rank", atol, rtol)
    if tol is not None:
        atol, rtol = tol, 0.0
    name = "torch.linalg.matrix_rank"
    _require_tensor(name, A)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor input must have at least 2 dimensions.")
    _check_tolerances(name, atol, rtol)
    from ..autograd.grad_mode import no_grad
    with no_grad():
        S = eigvalsh(A).abs() if hermitian else svdvals(A)
        rank = (S > _cutoff(S, atol, rtol, A._size, A.dtype)).sum(-1)
    return _into(out, rank, "linalg.matrix_rank")


@overridable
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
        return _into(out, A.clone().copy_(identity.expand(A._size)), name)  # in A's graph, zero gradient
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


@overridable
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
    empty = A.new_zeros((0,), dtype=A.dtype.to_real())
    rank = empty.to(dt.int64) if driver == "gels" else matrix_rank(A, rtol=rcond if rcond else None)
    singular_values = svdvals(A).detach() if driver in ("gelsd", "gelss") else empty
    residuals = ((A @ solution - Bm).abs() ** 2).sum(-2)
    if not (m > n and driver != "gelsy" and (driver == "gels" or bool((rank == n).all()))):
        residuals = residuals.flatten()[:0]  # empty, yet still an output of the graph: torch's is differentiable
    return lstsq_rt(solution.squeeze(-1) if vector else solution, residuals, rank, singular_values)


@overridable
def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along dim (declared with the shape ops, exported here as torch.linalg's)."""
    from .tensor_shape_products import linalg_cross
    return _into(out, linalg_cross(input, other, dim=dim), "linalg.cross")
