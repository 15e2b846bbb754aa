"""The matrix exponential, torch.linalg.matrix_exp (torch.matrix_exp, Tensor.matrix_exp), as PyTorch computes it:
optimized Taylor polynomials of degree 1, 2, 4, 8, 12 or 18 (Bader, Blanes and Casas, "Computing the Matrix
Exponential with an Optimized Taylor Polynomial Approximation", Mathematics 7 (2019) 1174), chosen per matrix by its
1-norm, with scaling and squaring beyond degree 18's reach; in the input's own precision (float32 math for float32
and complex64, whose rounding the squarings magnify: a double-precision result rounded back differs from torch's),
with products rounded as ATen's bmm rounds them (linalg_products.batched_product). Its derivative is the exponential
of a block matrix.

>>> lantern.linalg.matrix_exp(lantern.zeros(2, 2)).tolist()
[[1.0, 0.0], [0.0, 1.0]]
"""
import numpy as np

from ..core import dtype as dt
from .dispatcher import call
from .registry import composite, custom, get
from .derivative import derivative
from .linalg_common import check_square, mH
from .linalg_products import batched_product
from ..core.overridable import overridable

# The largest 1-norm for which each degree (1, 2, 4, 8, 12, 18) is accurate to the working precision
THETAS = {np.float32: (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02, 5.800524627688768e-01,
                       1.461661507209034e+00, 3.010066362817634e+00),
          np.float64: (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04, 4.991228871115323e-02,
                       2.996158913811580e-01, 1.090863719290036e+00)}

# Degrees 12 and 18: row i holds the coefficients of B_i = Σ_j b_ij P_j over the powers P = (I, A, A², A³[, A⁶])
B12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
       (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031, 0.01108844528519167989),
       (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968, 0.00610700528898058230),
       (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079, -0.00675951846863086359))
B18 = ((0., -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.),
       (0., 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01,
        -6.37898194594723280150e-04),
       (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
        -6.98210122488052056106e-03, 3.34975017086070470649e-05),
       (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
        2.95552570429315521194e-02, -1.39180257516060693404e-05),
       (0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05))


def _combination(real, matrices, coefficients):
    """Σ_j c_j M_j, accumulated in order, each coefficient rounded to the working precision `real` first."""
    total = 0 * matrices[0]
    for c, m in zip(coefficients, matrices):
        total = total + real(c) * m
    return total


def _powers(xp, a, count):
    """The first `count` of I, A, A², A³, A⁶."""
    eye = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    powers = [eye, a]
    for left, right in ((1, 1), (1, 2), (3, 3))[:count - 2]:
        powers.append(batched_product(xp, powers[left], powers[right]))
    return powers


def _taylor_1(xp, real, a):
    return _powers(xp, a, 2)[0] + a


def _taylor_2(xp, real, a):
    eye, a, a2 = _powers(xp, a, 3)
    return eye + a + a2 / real(2)


def _taylor_4(xp, real, a):
    p = _powers(xp, a, 3)
    a4_part = batched_product(xp, p[2], _combination(real, p, (1 / 2.0, 1 / 6.0, 1 / 24.0)))
    return _combination(real, p + [a4_part], (1, 1, 0, 1))


def _taylor_8(xp, real, a):
    sqrt_177 = float(real(0.1330413469565007072504e+2))
    x3 = float(real(2. / 3.))
    x1, x2 = x3 * ((1. + sqrt_177) / 88.), x3 * ((1. + sqrt_177) / 352.)
    x4, x5 = (-271. + 29. * sqrt_177) / (315. * x3), (-11. + 11. * sqrt_177) / (1260. * x3)
    x6, x7 = (-99. + 11. * sqrt_177) / (5040. * x3), (89. - sqrt_177) / (5040. * x3)
    y2 = (857. - 58. * sqrt_177) / 630.
    eye, a, a2 = _powers(xp, a, 3)
    a4 = batched_product(xp, a2, _combination(real, (a, a2), (x1, x2)))
    a8 = batched_product(xp, _combination(real, (a2, a4), (x3, 1)),
                         _combination(real, (eye, a, a2, a4), (x4, x5, x6, x7)))
    return _combination(real, (eye, a, a2, a4, a8), (1, 1, y2, 0, 1))


def _taylor_12(xp, real, a):
    p = _powers(xp, a, 4)
    b = [_combination(real, p, row) for row in B12]
    b[2] = b[2] + batched_product(xp, b[3], b[3])
    return b[0] + batched_product(xp, b[1] + b[2], b[2])


def _taylor_18(xp, real, a):
    p = _powers(xp, a, 5)
    b = [_combination(real, p, row) for row in B18]
    a9 = batched_product(xp, b[0], b[4]) + b[3]
    return b[1] + batched_product(xp, b[2] + a9, a9)


def _scaled_and_squared(xp, real, a, norms, theta):
    """exp(A) = exp(A / 2^s)^(2^s): degree 18 on A / 2^s, whose norm is at most theta, then s squarings."""
    steps = xp.maximum(0, xp.ceil(xp.log2(norms / real(theta)))).astype(np.int64)
    result = _taylor_18(xp, real, a / (2.0 ** steps).astype(real)[:, None, None])
    out = xp.empty_like(result)
    for i, s in enumerate(steps.tolist()):
        m = result[i:i + 1]
        for _ in range(s):
            m = batched_product(xp, m, m)
        out[i] = m[0]
    return out


def taylor_expm(xp, a):
    """exp of each matrix of the stack `a` (batch, n, n): the lowest degree its 1-norm allows, in a's precision;
    NaN for a matrix holding an inf or a NaN, as torch's."""
    real = np.float32 if a.dtype in (np.float32, np.complex64) else np.float64
    thetas = THETAS[real]
    norms = xp.abs(a).sum(-2).max(-1)
    out = xp.full_like(a, xp.nan)
    lower = -1
    for theta, taylor in zip(thetas, (_taylor_1, _taylor_2, _taylor_4, _taylor_8, _taylor_12)):
        chosen = (norms > real(lower)) & (norms <= real(theta))
        if chosen.any():
            out[chosen] = taylor(xp, real, a[chosen])
        lower = theta
    large = (norms >= real(thetas[4])) & xp.isfinite(norms)
    if large.any():
        out[large] = _scaled_and_squared(xp, real, a[large], norms[large], thetas[5])
    return out


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
    a = backend.array(A)
    n = A._size[-1]
    stack = a.reshape((-1, n, n))
    if n == 1:
        result = backend.xp.exp(stack)
    elif A.dtype.itemsize < 4 or A.dtype is dt.complex32:  # half: in double precision, rounded (see
        # tests/deliberate_differences.py: torch's half-precision approximant overflows)
        result = taylor_expm(backend.xp, stack.astype(np.complex128 if A.dtype.is_complex else np.float64))
    else:
        result = taylor_expm(backend.xp, stack)
    backend.array(out)[...] = result.reshape(a.shape)
    return out


custom("linalg_matrix_exp(Tensor self) -> Tensor", _matrix_exp, _matrix_exp, method=False)


@overridable
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
