"""What torch.linalg's ops share: LinAlgError, the checks of matrix arguments, the column-major layout
LAPACK writes (strides (1, n) in the last two dims, as PyTorch's outputs), the reading of LAPACK's info codes,
and the small helpers the backward formulas call (mH, scaled).

>>> _matrix_strides((2, 3, 3))
(9, 1, 3)
"""
import numpy as np

from ..core import dtype as dt
from .dispatcher import call
from .pointwise_common import _require_tensor
from .reduction import out_return_type
from .registry import get
from .derivative_helpers import conj


# ---- shared checks and layouts of torch.linalg -------------------------------------------------------------

class LinAlgError(RuntimeError):
    """A matrix the operation cannot handle (singular, not positive-definite): torch.linalg.LinAlgError."""


LinAlgError.__module__ = "lantern.linalg"


def _check_matrices(name, A, argname="A", square=True):
    """A batch of (square) float or complex matrices, as every torch.linalg decomposition needs."""
    _require_tensor(name, A, 1, argname)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {argname} must have at least 2 dimensions.")
    if A.dtype.category < dt.FLOATING:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.legacy}")
    if A.dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {A.dtype.legacy}")
    if square and A._size[-1] != A._size[-2]:
        raise RuntimeError(f"{name}: {argname} must be batches of square matrices, but they are "
                           f"{A._size[-2]} by {A._size[-1]} matrices")


def check_square(name, A, argname="A", position=1):
    """A tensor of at least 2 dims whose matrices are square (no dtype check: callers differ in what they take)."""
    _require_tensor(name, A, position, argname)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {argname} must have at least 2 dimensions.")
    if A._size[-1] != A._size[-2]:
        raise RuntimeError(f"{name}: {argname} must be batches of square matrices, but they are {A._size[-2]} by "
                           f"{A._size[-1]} matrices")


def check_system(name, A, B, left, square_name=None):
    """The shapes of A X = B (X A = B with left=False): square A, a B of at least 2 dims that fits A.
    square_name: how the square check names the function, where torch spells it differently."""
    _require_tensor(name, A, 1, "A")
    _require_tensor(name, B, 2, "B")
    for t, argname in ((A, "A"), (B, "B")):
        if t.dim() < 2:
            raise RuntimeError(f"{name}: The input tensor {argname} must have at least 2 dimensions.")
    check_square(square_name or name, A)
    n = A._size[-1]
    if (B._size[-2] if left else B._size[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {equation} ({n}x{n} and "
                           f"{B._size[-2]}x{B._size[-1]})")


def _matrix_strides(shape):
    """Row-major over the batch, column-major inside each matrix: LAPACK's layout, which PyTorch keeps."""
    rows, cols = shape[-2], shape[-1]
    strides = [1, max(rows, 1)]
    acc = max(rows, 1) * max(cols, 1)
    for n in reversed(shape[:-2]):
        strides.insert(0, acc)
        acc *= max(n, 1)
    return tuple(strides)


def _new_matrices(backend, shape, dtype):
    """A new tensor in LAPACK's layout."""
    return backend.empty_strided(tuple(shape), _matrix_strides(shape), dtype)


def _batch_prefix(index):
    """PyTorch's '(Batch element i): ' naming the failing matrix of a batch."""
    return f"(Batch element {index}): " if index is not None else ""


def _first_failure(info, batched):
    """(batch index or None, info value) of the first failing matrix, or None when all succeeded."""
    bad = info.reshape(-1).nonzero()[0]
    if not bad.size:
        return None
    return (int(bad[0]) if batched else None), int(info.reshape(-1)[bad[0]])


def _lu_info(xp, a):
    """LAPACK getrf's info per matrix: the 1-based index of the first zero pivot of U, 0 when there is none (SciPy's
    LU runs on the host array; its U comes back through xp)."""
    import scipy.linalg
    if a.shape[-1] == 0:
        return xp.zeros(a.shape[:-2], np.int32)
    u = xp.asarray(scipy.linalg.lu(a)[2])
    zero = xp.diagonal(u, axis1=-2, axis2=-1) == 0
    return xp.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)


def lapack_layout(t):
    """t copied into LAPACK's column-major layout: the strides of torch's results that LAPACK writes, given to
    the results lantern composes from other ops."""
    return t.mT.contiguous().mT


def _singular_error(name, A, info, what):
    failure = _first_failure(info, A.dim() > 2)
    if failure is not None:
        index, value = failure
        raise LinAlgError(f"{name}: {_batch_prefix(index)}The diagonal element {value} is zero, the {what} could not "
                          "be completed because the input matrix is singular.")


# ---- helpers of the composites and of the backward formulas (written with lantern ops: they differentiate again) --

def mH(t):
    """The conjugate transpose of each matrix."""
    return conj(t.transpose(-2, -1))


def scaled(t, factor):
    """t * conj(factor), skipping the multiply for 1 (the alpha/beta of addmm and friends)."""
    return t if factor == 1 else t * conj(factor)


def _into(out, result, name):
    """Copy a composite's result into out= (resized as out= tensors are, dtype checked)."""
    if out is None:
        return result
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype.name}, but got {out.dtype.name} instead "
                           f"({name}: pass an out of the result's dtype)")
    from ..backends.base import resize_out
    resize_out(out, result._size, name)
    return out.copy_(result)


def into_outs(out, result, name):
    """Copy a multi-output result into the out= tensors, returned as torch's `<name>_out` named tuple."""
    if out is None:
        return result
    return out_return_type(type(result))(*(_into(o, r, name) for o, r in zip(out, result)))


def _eye(n, like):
    return call(get("eye"), (n, None, like.dtype, None, like.device, None, False))
