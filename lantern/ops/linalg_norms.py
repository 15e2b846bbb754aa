"""torch.linalg's norms: vector_norm (an op with its derivative), matrix_norm and norm (composites).

>>> lantern.linalg.vector_norm(lantern.tensor([3., 4.])).item()
5.0
"""
import math

import numpy as np

from ..core import dtype as dt
from .dispatcher import call
from .meta_util import wrap_dims
from .pointwise_common import _require_tensor
from .reduction import reduced_shape
from .registry import get, structured
from .derivative import derivative
from .derivative_helpers import unsqueeze_reduced, zeros_like
from .linalg_decompositions import svdvals
from .linalg_products import _LOW_PRECISION
from .linalg_common import _into
from ..core.overridable import overridable


# ---- norms ---------------------------------------------------------------------------------------------------

def _all_dims(dim):
    """vector_norm's dim=None (or []) reduces every dim."""
    return dim is None or (not isinstance(dim, int) and not len(dim))


def _vector_norm_meta(x, ord=2, dim=None, keepdim=False, dtype=None):
    name = "linalg.vector_norm"
    _require_tensor(name, x)
    if x.dtype.category < dt.FLOATING:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {x.dtype.legacy}")
    if dtype is not None:
        if dtype.category < dt.FLOATING:
            raise RuntimeError(f"{name}: dtype should be floating point or complex, but got {dtype.legacy}")
        if dtype.is_complex != x.dtype.is_complex:
            kind = "complex" if x.dtype.is_complex else "real"
            raise RuntimeError(f"{name}: dtype should be {kind} for {kind} inputs, but got {dtype.legacy}")
    dims = tuple(range(x.dim())) if _all_dims(dim) else wrap_dims(dim, x.dim())
    if ord in (math.inf, -math.inf) or ord < 0:
        _check_identity(name, x, dim, dims, ord)
    return reduced_shape(x._size, dims, keepdim), (dtype or x.dtype).to_real()


def _check_identity(name, x, dim, dims, ord):
    """Max-like norms (inf, negative orders) have no identity: refuse reducing over nothing."""
    which = "inf" if ord in (math.inf, -math.inf) else "negative"
    if _all_dims(dim) and x.numel() == 0:
        raise RuntimeError(f"{name} cannot compute the {which} norm on an empty tensor because the operation does "
                           "not have an identity")
    for d in dims:
        if x._size and x._size[d] == 0:
            raise RuntimeError(f"{name} cannot compute the {which} norm on the dimension {d}because this dimension "
                               "is empty and the operation does not have an identity")


def _vector_norm_impl(xp, out, dtype, x, ord=2, dim=None, keepdim=False, dtype_arg=None):
    dims = (dim,) if isinstance(dim, int) else dim
    axis = None if _all_dims(dim) or not x.ndim else tuple(d % x.ndim for d in dims)
    compute = np.float32 if dtype in _LOW_PRECISION else dtype
    if dtype_arg is not None:  # the input is converted to dtype= first
        x = x.astype(dtype_arg.np, copy=False)
    squares_only = ord == 2 and not dt.holds_complex(x.dtype)  # a real number's square is its magnitude's
    a = (x if squares_only else xp.abs(x)).astype(compute, copy=False)
    if ord == math.inf:
        value = a.max(axis=axis, keepdims=keepdim)
    elif ord == -math.inf:
        value = a.min(axis=axis, keepdims=keepdim)
    elif ord == 0:
        value = (a != 0).sum(axis=axis, keepdims=keepdim, dtype=compute)
    elif ord == 1:
        value = a.sum(axis=axis, keepdims=keepdim)
    elif ord == 2:
        value = xp.sqrt((a * a).sum(axis=axis, keepdims=keepdim))
    else:
        value = (a ** ord).sum(axis=axis, keepdims=keepdim) ** (1.0 / ord)
    out[...] = value


structured("linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
           "ScalarType? dtype=None) -> Tensor", _vector_norm_meta, _vector_norm_impl, inplace=False,
           exact_out_dtype=True, method=False)


@overridable
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ord-norm of x over `dim` (every element by default), as a vector: (Σ |x|^ord)^(1/ord), max for inf.

    >>> lantern.linalg.vector_norm(lantern.tensor([3., 4.])).item()
    5.0
    """
    if out is None:
        return call(get("linalg_vector_norm"), (x, ord, dim, keepdim, dtype))
    return call(get("linalg_vector_norm.out"), (x, ord, dim, keepdim, dtype, out))


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _matrix_dims(name, A, dim):
    if isinstance(dim, int):
        raise TypeError(f"linalg_matrix_norm(): argument 'dim' must be tuple of ints, not int (pass dim=({dim}, ...))")
    if len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    d0, d1 = wrap_dims(dim, A.dim())
    return d0, d1


@overridable
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """A matrix norm over the two dims `dim`: 'fro', 'nuc' (sum of singular values), ±2 (largest/smallest singular
    value), ±1 (max/min column sum of |A|), ±inf (max/min row sum).

    >>> lantern.linalg.matrix_norm(lantern.tensor([[1., -2.], [3., 4.]]), 1).item()
    6.0
    """
    name = "linalg.matrix_norm"
    _require_tensor(name, A)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not any(ord == o and type(ord) is type(o) or (not isinstance(ord, str) and not isinstance(o, str) and ord == o)
               for o in _MATRIX_ORDS):
        raise RuntimeError(f"{name}: Order {ord} not supported.")
    d0, d1 = _matrix_dims(name, A, dim)
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        result = vector_norm(A, 2, (d0, d1), keepdim)
    elif ord == "nuc" or ord in (2, -2):
        result = _singular_value_norm(A, ord, d0, d1, keepdim)
    else:
        if A.dtype.category < dt.FLOATING:
            raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.legacy}")
        if ord in (math.inf, -math.inf):
            d0, d1 = d1, d0
        sums = A.abs().sum(d0, keepdim=keepdim)
        if not keepdim and d0 < d1:
            d1 -= 1
        result = _largest(sums, d1, keepdim) if ord > 0 else sums.amin(d1, keepdim=keepdim)
    return _into(out, result, name)


def _largest(norms, dim, keepdim):
    """The max over `dim` of norms (never negative): 0 over an empty dim, as torch's matrix norms give, where the
    min (a negative order) has no such value and raises as amin does."""
    if norms._size[dim] == 0:
        return norms.sum(dim, keepdim=keepdim)
    return norms.amax(dim, keepdim=keepdim)


def _singular_value_norm(A, ord, d0, d1, keepdim):
    s = svdvals(A.movedim((d0, d1), (-2, -1)))
    if ord == "nuc":
        result = s.sum(-1, keepdim=keepdim)
    else:
        result = _largest(s, -1, keepdim) if ord == 2 else s.amin(-1, keepdim=keepdim)
    if keepdim:  # put the two reduced dims back where they were
        result = result.unsqueeze(-1).movedim((-2, -1), (d0, d1))
    return result


@overridable
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.norm: a vector norm when `dim` is an int or A is 1-D, a matrix norm when `dim` is a 2-tuple
    or A is 2-D; with neither ord nor dim, the 2-norm of A flattened.

    >>> lantern.linalg.norm(lantern.tensor([[3., 4.], [0., 0.]])).item()
    5.0
    """
    name = "linalg.norm"
    _require_tensor(name, A)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"{name}: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    elif ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(f"{name}: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.dim()}D.")
    else:
        dims = None
    if ord is None:
        return vector_norm(A, 2, dims, keepdim, dtype=dtype, out=out)
    if (dims is not None and len(dims) == 2) or (dims is None and A.dim() == 2):
        return matrix_norm(A, ord, dims or (-2, -1), keepdim, dtype=dtype, out=out)
    if isinstance(ord, str):
        raise RuntimeError(f"{name}: Order {ord} not supported for vector norms.")
    return vector_norm(A, ord, dims, keepdim, dtype=dtype, out=out)


def vector_norm_backward(grad, x, ord, result, dim, keepdim):
    """PyTorch's linalg_vector_norm_backward: sgn(x) |x|^(p-1) / norm^(p-1), zero where the norm is zero (and,
    for p < 1, where x is); for ±inf the gradient is shared among the entries attaining the norm."""
    sizes = x._size
    dims = None if _all_dims(dim) else dim
    g = unsqueeze_reduced(grad, sizes, dims, keepdim)
    norm = unsqueeze_reduced(result, sizes, dims, keepdim)
    if ord == 0:
        return zeros_like(x)
    if ord == 1:
        return x.sgn() * g
    if ord in (math.inf, -math.inf):
        mask = (x.abs() == norm).to(g.dtype)
        count = mask.sum(tuple(range(x.dim())) if dims is None else dims, True)
        return x.sgn() * (g * mask / count)
    safe = call(get("where"), (norm == 0, 1.0, norm))
    if ord == 2:
        scale = g / safe
        return x * call(get("where"), (norm == 0, 0.0, scale))
    scale = g / safe.pow(ord - 1)
    powers = x.abs().pow(ord - 1)
    if ord < 1:  # |x|^(ord-1) is infinite at x = 0: torch takes the subgradient 0 there
        powers = call(get("where"), (x == 0, 0.0, powers))
    return x.sgn() * powers * call(get("where"), (norm == 0, 0.0, scale))


derivative("linalg_vector_norm", helpers={"vector_norm_backward": vector_norm_backward},
           self="vector_norm_backward(grad, self, ord, result, dim, keepdim)")
