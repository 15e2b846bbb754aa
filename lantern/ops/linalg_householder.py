"""QR in LAPACK's compact form: torch.geqrf (LAPACK geqrf through SciPy, over host arrays: NumPy's qr does not
return the reflectors), and the products of its Householder reflectors H_i = I - tau_i v_i v_i^H:
linalg.householder_product (torch.orgqr) and torch.ormqr. Those two are written with lantern ops, one reflector
at a time, so they differentiate (twice) through their own steps.

>>> a, tau = lantern.geqrf(lantern.tensor([[3., 1.], [4., 2.]]))
>>> Q = lantern.linalg.householder_product(a, tau)
>>> [[round(x, 4) for x in row] for row in (Q @ a.triu()).tolist()]
[[3.0, 1.0], [4.0, 2.0]]
"""
from . import linalg_lapack as lapack
from .pointwise_common import _require_tensor
from .reduction import out_return_type, return_type
from .registry import composite, custom
from .linalg_common import _into, _new_matrices, lapack_layout, mH, _eye
from .linalg_triangular import check_lapack_dtype
from ..core.overridable import overridable

geqrf_rt = return_type("geqrf", ["a", "tau"])
out_return_type(geqrf_rt)


def _geqrf(backend, input):
    _require_tensor("geqrf", input)
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    check_lapack_dtype("geqrf_cpu", input)
    m, n = input._size[-2:]
    a = _new_matrices(backend, input._size, input.dtype)
    tau = backend.empty(input._size[:-2] + (min(m, n),), input.dtype)
    if backend.xp is None or not input.numel():
        return geqrf_rt(a, tau)
    qr, taus = lapack.geqrf(backend.host_array(input))
    backend.array(a)[...] = backend.from_host(qr)
    backend.array(tau)[...] = backend.from_host(taus)
    return geqrf_rt(a, tau)


# A = Q R in LAPACK's packed form: R on and above the diagonal of `a`, below it the Householder vectors whose
# product (with the scales tau) is Q. Not differentiable, as in torch.
custom("geqrf(Tensor self) -> (Tensor a, Tensor tau)", _geqrf, _geqrf)


def _reflectors(A, k):
    """The Householder vectors v_1..v_k as columns: ones on the diagonal, A's entries below, zeros above."""
    m = A._size[-2]
    return A.narrow(-1, 0, k).tril(-1) + _eye(m, A).narrow(-1, 0, k)


def _reflect(X, v, tau, left):
    """H X (X H with left=False) for H = I - tau v v^H."""
    if left:
        return X - (tau * v) @ (mH(v) @ X)
    return X - (X @ v) @ (tau * mH(v))


def _apply_reflectors(A, tau, X, left, adjoint):
    """X multiplied by Q = H_1 H_2 ... H_k (Q^H with adjoint=True) from the left or the right."""
    k = tau._size[-1]
    V = _reflectors(A, k)
    steps = range(k) if left == adjoint else reversed(range(k))  # the reflector nearest X goes first
    for i in steps:
        scale = tau.narrow(-1, i, 1).unsqueeze(-1)
        X = _reflect(X, V.narrow(-1, i, 1), scale.conj() if adjoint else scale, left)
    return X


def _check_householder(name, A, tau):
    _require_tensor(name, A, 1, "input")
    _require_tensor(name, tau, 2, "tau")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.dim()} and input.ndim is equal to {A.dim()}")
    if tau._size[:-1] != A._size[:-2]:
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau._size[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{name}: tau dtype {tau.dtype.legacy} does not match input dtype {A.dtype.legacy}")
    check_lapack_dtype("orgqr_cpu", A)


@overridable
def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^H with v_i in A's i-th column below the
    diagonal (a unit entry on it): the Q of geqrf's packed result.

    >>> a, tau = lantern.geqrf(lantern.tensor([[0., 1.], [1., 0.]]))
    >>> lantern.linalg.householder_product(a, tau).abs().tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    name = "torch.linalg.householder_product"
    _check_householder(name, A, tau)
    m, n = A._size[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < tau._size[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    identity = _eye(m, A).narrow(-1, 0, n).expand(A._size)
    if not tau._size[-1]:  # no reflectors: Q = I, still a function of A (zero gradient), as torch's result is
        identity = identity + A * 0
    return _into(out, lapack_layout(_apply_reflectors(A, tau, identity, left=True, adjoint=False)),
                 "linalg.householder_product")


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """Q C, Q^H C (transpose=True), C Q or C Q^H (left=False) for the Q = H_1 ... H_k of geqrf's (input, tau),
    without forming Q.

    >>> a, tau = lantern.geqrf(lantern.tensor([[0., 1.], [1., 0.]]))
    >>> lantern.ormqr(a, tau, lantern.eye(2)).abs().tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    name = "torch.ormqr"
    A, tau, C = input, input2, input3
    _require_tensor(name, A, 1, "input")
    _require_tensor(name, tau, 2, "tau")
    _require_tensor(name, C, 3, "other")
    for t, argname in ((A, "input"), (C, "other")):
        if t.dim() < 2:
            raise RuntimeError(f"{name}: {argname} must have at least 2 dimensions.")
    rows, which = (C._size[-2], "other.shape[-2]") if left else (C._size[-1], "other.shape[-1]")
    if tau._size[-1:] != (min(rows, A._size[-1]),):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min({which}, input.shape[-1])")
    if rows != A._size[-2]:
        raise RuntimeError(f"{name}: {which} must be equal to input.shape[-2]")
    for t, argname in ((tau, "tau"), (C, "other")):
        batch = t._size[:-1] if t is tau else t._size[:-2]
        if batch != A._size[:-2]:
            raise RuntimeError(f"{name}: Expected batch dimensions of {argname} to be equal to input.shape[:-2], but "
                               f"got {list(batch)}")
    for t, argname in ((tau, "tau"), (C, "other")):
        if t.dtype is not A.dtype:
            raise RuntimeError(f"{name}: Expected input and {argname} to have the same dtype, but got {argname} with "
                               f"dtype {t.dtype.legacy} and input with dtype {A.dtype.legacy}")
    check_lapack_dtype("ormqr_cpu", A)
    return _into(out, lapack_layout(_apply_reflectors(A, tau, C, left, transpose)), "ormqr")


composite("orgqr", householder_product)
composite("ormqr", ormqr)
