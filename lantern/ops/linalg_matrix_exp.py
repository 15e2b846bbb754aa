"""The matrix exponential, torch.linalg.matrix_exp (torch.matrix_exp, Tensor.matrix_exp): SciPy's expm (Padé
approximation with scaling and squaring) over host arrays, NumPy having none, and its derivative through the
exponential of a block matrix.

>>> lantern.linalg.matrix_exp(lantern.zeros(2, 2)).tolist()
[[1.0, 0.0], [0.0, 1.0]]
"""
from . import linalg_lapack as lapack
from ..core import dtype as dt
from .dispatcher import call
from .registry import composite, custom, get
from .derivative import derivative
from .linalg_common import check_square, mH

def _check_matrix_exp(A):
    name = "linalg.matrix_exp"
    check_square(name, A)
    if A.dtype.category < dt.FLOATING:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.legacy}")


def _matrix_exp(backend, A):
    _check_matrix_exp(A)
    out = backend.empty(A._size, A.dtype)
    if backend.xp is None or not A.numel():
        return out
    backend.array(out)[...] = backend.from_host(lapack.expm(backend.host_array(A)))
    return out


custom("linalg_matrix_exp(Tensor self) -> Tensor", _matrix_exp, _matrix_exp, method=False)


def matrix_exp(A):
    """exp(A) = Σ A^k / k! for each square matrix of A.

    >>> lantern.linalg.matrix_exp(lantern.tensor([[0., 1.], [0., 0.]])).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    return call(get("linalg_matrix_exp"), (A,))


def matrix_exp_backward(grad, A):
    """The Fréchet derivative's adjoint: exp([[A^H, G], [0, A^H]]) holds it in its upper-right block."""
    n = A._size[-1]
    Ah = mH(A)
    top = call(get("cat"), ([Ah, grad], -1))
    bottom = call(get("cat"), ([grad.new_zeros(grad._size), Ah], -1))
    block = call(get("linalg_matrix_exp"), (call(get("cat"), ([top, bottom], -2)),))
    return block.narrow(-2, 0, n).narrow(-1, n, n)


derivative("linalg_matrix_exp", name="LinalgMatrixExpBackward0", helpers={"matrix_exp_backward": matrix_exp_backward},
           self="matrix_exp_backward(grad, self)")
composite("matrix_exp", lambda input: call(get("linalg_matrix_exp"), (input,)))
