"""The eigendecomposition of general (non-Hermitian) square matrices: torch.linalg.eig and eigvals over
numpy.linalg.eig (LAPACK geev), with eig's derivative. The results are always complex, as torch's: a real matrix
may have complex eigenvalues. Eigenvectors have unit norm, as geev normalises them, and are defined up to a phase.

>>> lantern.linalg.eigvals(lantern.tensor([[2., 0.], [0., 3.]])).tolist()
[(2+0j), (3+0j)]
"""
from ..core import dtype as dt
from .dispatcher import call
from .reduction import out_return_type, return_type
from .registry import custom, get
from .derivative import derivative
from .derivative_helpers import conj
from .linalg_common import _check_matrices, _into, _new_matrices, _eye, into_outs, mH
from ..core.overridable import overridable

eig_rt = return_type("linalg_eig", ["eigenvalues", "eigenvectors"])
out_return_type(eig_rt)


def _check_eig(name, A):
    if A.dtype.category < dt.FLOATING:
        raise RuntimeError(f"Unknown Complex ScalarType for {A.dtype.legacy}")
    _check_matrices(name, A)


def _eig(backend, A):
    _check_eig("linalg.eig", A)
    complex_dtype = A.dtype.to_complex()
    values = backend.empty(A._size[:-1], complex_dtype)
    vectors = _new_matrices(backend, A._size, complex_dtype)
    if backend.xp is not None and A.numel():
        xp = backend.xp
        w, v = xp.linalg.eig(backend.array(A))  # real when every eigenvalue is real: stored as complex
        backend.array(values)[...] = w
        backend.array(vectors)[...] = v
    return eig_rt(values, vectors)


custom("linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)", _eig, _eig, method=False)


@overridable
def eig(A, *, out=None):
    """Eigenvalues and unit-norm eigenvectors of square matrices, A V = V diag(L), both complex.

    >>> L, V = lantern.linalg.eig(lantern.tensor([[0., 1.], [-1., 0.]]))
    >>> sorted(L.tolist(), key=lambda z: z.imag)
    [-1j, 1j]
    """
    return into_outs(out, call(get("linalg_eig"), (A,)), "linalg.eig")


@overridable
def eigvals(A, *, out=None):
    """The eigenvalues of square matrices (complex), differentiable through eig.

    >>> lantern.linalg.eigvals(lantern.tensor([[1., 5.], [0., 3.]])).real.tolist()
    [1.0, 3.0]
    """
    _check_eig("linalg.eigvals", A)
    return _into(out, call(get("linalg_eig"), (A,))[0], "linalg.eigvals")


def eig_backward(grads, A, L, V):
    """gA = V^-H (diag(gL) + (V^H gV - V^H V diag(Re diag(V^H gV))) / conj(E)) V^H, E_ij = L_j - L_i off the
    diagonal (where the second term is zero): the eigenvectors' unit norm fixes all but their phase, so a loss
    that depends on the phase (Im diag(V^H gV) not zero) has no gradient, and torch refuses it."""
    gL, gV = grads
    n = L._size[-1]
    identity = _eye(n, V)
    inner = 0
    if gV is not None:
        VhgV = mH(V) @ gV
        diagonal = VhgV.diagonal(0, -2, -1)
        if bool((diagonal.imag.abs() > 1e-2).any()):
            raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                               "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it "
                               "is ill-defined.")
        inner = VhgV - (mH(V) @ V) * diagonal.real.to(V.dtype).unsqueeze(-2)
        Lc = conj(L)
        inner = inner / (Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + identity) * (1 - identity)
    if gL is not None:
        inner = inner + gL.unsqueeze(-1) * identity
    gA = call(get("linalg_solve"), (mH(V), inner @ mH(V), True))
    return gA if A.dtype.is_complex else gA.real


derivative("linalg_eig", helpers={"eig_backward": eig_backward},
           self="eig_backward(grads, self_meta, eigenvalues, eigenvectors)")
