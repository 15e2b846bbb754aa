"""torch.linalg's functions written with other ops (they need no derivative of their own): vecdot, vander,
multi_dot, tensorinv, tensorsolve, cond, diagonal and matmul, and the torch-level ones beside them
(torch.vander, chain_matmul, pinverse, the deprecated torch.qr).

>>> lantern.linalg.vander(lantern.tensor([1, 2, 3])).tolist()
[[1, 1, 1], [1, 2, 4], [1, 3, 9]]
"""
import math

from ..core import dtype as dt
from .dispatcher import call
from .pointwise_common import _require_tensor
from .reduction import out_return_type, return_type
from .registry import COMPOSITES, composite, get
from .linalg_common import _check_matrices, _into
from .linalg_decompositions import pinv, qr as linalg_qr, svdvals
from .linalg_norms import matrix_norm
from .linalg_solvers import inv_ex, inv, solve
from .linalg_triangular import deprecated
from ..core.overridable import overridable


@overridable
def vecdot(x, y, *, dim=-1, out=None):
    """Σ conj(x) y along dim, the vectors broadcasting against each other.

    >>> lantern.linalg.vecdot(lantern.tensor([[1., 2.], [3., 4.]]), lantern.tensor([1., 1.])).tolist()
    [3.0, 7.0]
    """
    name = "linalg.vecdot"
    _require_tensor(name, x, 1, "x")
    _require_tensor(name, y, 2, "y")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"{name}: Expected x and y to have the same dtype, but found x of type {x.dtype.legacy} "
                           f"and y of type {y.dtype.legacy} instead")
    if x.dtype.category < dt.FLOATING:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {x.dtype.legacy}")
    return _into(out, (x.conj() * y).sum(dim), name)


@overridable
def vander(x, *, N=None):
    """The Vandermonde matrices of the vectors in x's last dim: columns x^0, x^1, ..., x^(N-1) (N = x's length).

    >>> lantern.linalg.vander(lantern.tensor([2., 3.]), N=3).tolist()
    [[1.0, 2.0, 4.0], [1.0, 3.0, 9.0]]
    """
    _require_tensor("linalg.vander", x, 1, "x")
    if x.dtype is dt.bool or x.dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{x.dtype.legacy}")
    if x.dim() == 0:  # a 0-d x is one value: a 1 x N matrix, as torch gives
        x = x.unsqueeze(0)
    n = N if N is not None else x._size[-1]
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    # integers widen to int64 as cumprod widens them
    powers = x.unsqueeze(-1).expand(x._size + (n - 1,)).cumprod(-1)
    return call(get("cat"), ([powers.new_ones(x._size + (1,)), powers], -1))


def torch_vander(x, N=None, increasing=False):
    """torch.vander: x^(N-1), ..., x^1, x^0 across (x^0 first with increasing=True), for a 1-D x.

    >>> lantern.vander(lantern.tensor([1, 2, 3]), N=3).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    _require_tensor("vander", x)
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._size[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n == 0:
        result_dtype = dt.int64 if x.dtype.category < dt.FLOATING else x.dtype
        return x.new_empty((x._size[0], 0)).to(result_dtype)
    result = vander(x, N=n)
    return result if increasing else result.flip(-1)


def _matrix_chain_order(shapes):
    """The cheapest parenthesisation of a chain of matrix products (the classic O(n^3) dynamic programme):
    order[i][j] is where the product of matrices i..j splits."""
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    count = len(shapes)
    cost = [[0] * count for _ in range(count)]
    order = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], order[i][j] = c, k
    return order


def _chain(matrices, order, i, j):
    if i == j:
        return matrices[i]
    k = order[i][j]
    return _chain(matrices, order, i, k) @ _chain(matrices, order, k + 1, j)


def _check_multi_dot(tensors):
    name = "multi_dot()"
    if len(tensors) < 2:
        raise RuntimeError(f"{name}: expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        _require_tensor("multi_dot", t, i + 1, "tensors")
        where = "first" if i == 0 else "last" if i == len(tensors) - 1 else None
        if where and t.dim() not in (1, 2):
            raise RuntimeError(f"{name}: the {where} tensor must be 1D or 2D but got {t.dim()}D")
        if where is None and t.dim() != 2:
            raise RuntimeError(f"{name}: tensor {i} must be 2D but got {t.dim()}D")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"{name}: all tensors must have be the same dtype but tensor 0 is "
                               f"{tensors[0].dtype.legacy.lower()} and tensor {i} {t.dtype.legacy.lower()}")
    matrices = [tensors[0].unsqueeze(0) if tensors[0].dim() == 1 else tensors[0], *tensors[1:-1],
                tensors[-1].unsqueeze(-1) if tensors[-1].dim() == 1 else tensors[-1]]
    for i in range(len(matrices) - 1):
        if matrices[i]._size[1] != matrices[i + 1]._size[0]:
            raise RuntimeError(f"{name}: tensors {i} and {i + 1} with shapes {list(tensors[i]._size)} and "
                               f"{list(tensors[i + 1]._size)} cannot be multiplied")
    return matrices


@overridable
def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices, in the order that needs the fewest multiplications; the first may be
    a row vector (1-D) and the last a column vector (1-D), which leave the result without that dim.

    >>> lantern.linalg.multi_dot([lantern.ones(3), lantern.ones(3, 2), lantern.ones(2)]).item()
    6.0
    """
    tensors = list(tensors)
    matrices = _check_multi_dot(tensors)
    result = _chain(matrices, _matrix_chain_order([m._size for m in matrices]), 0, len(matrices) - 1)
    if tensors[0].dim() == 1:
        result = result.squeeze(0)
    if tensors[-1].dim() == 1:
        result = result.squeeze(-1)
    return _into(out, result, "linalg.multi_dot")


def chain_matmul(*matrices, out=None):
    """Deprecated torch.chain_matmul: linalg.multi_dot of 2-D matrices."""
    deprecated("torch.chain_matmul", "torch.linalg.multi_dot")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return _into(out, matrices[0].clone(), "chain_matmul")
    return multi_dot(matrices, out=out)


@overridable
def tensorinv(A, ind=2, *, out=None):
    """The 'inverse' of A for tensordot: tensordot(tensorinv(A, ind), A, ind) is the identity, A.shape[:ind]
    and A.shape[ind:] having equal products.

    >>> lantern.linalg.tensorinv(lantern.eye(4).reshape(2, 2, 4) * 2, ind=2).shape
    lantern.Size([4, 2, 2])
    """
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A._size[:ind]), math.prod(A._size[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return _into(out, inv(A.reshape(rows, cols)).reshape(A._size[ind:] + A._size[:ind]), "linalg.tensorinv")


@overridable
def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.dim()) = B: A's leading dims are B's shape, its trailing ones X's (dims moves
    those dims of A to the end first).

    >>> lantern.linalg.tensorsolve(lantern.eye(6).reshape(6, 2, 3), lantern.ones(6)).shape
    lantern.Size([2, 3])
    """
    if dims is not None:
        dims = [dims] if isinstance(dims, int) else list(dims)
        A = A.movedim(dims, list(range(A.dim() - len(dims), A.dim())))
    result_shape = A._size[B.dim():]
    rows, cols = math.prod(A._size[:B.dim()]), math.prod(result_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return _into(out, solve(A.reshape(rows, cols), B.reshape(rows)).reshape(result_shape), "linalg.tensorsolve")


_SVD_ORDERS = (None, 2, -2, "nuc")
_INVERSE_ORDERS = ("fro", 1, -1, math.inf, -math.inf)


@overridable
def cond(A, p=None, *, out=None):
    """The condition number of each matrix in the p-norm: σ_max / σ_min for p = None or 2 (σ_min / σ_max for
    -2, Σσ Σ1/σ for 'nuc'), otherwise ||A||_p ||A^-1||_p, which is inf for a singular matrix.

    >>> lantern.linalg.cond(lantern.tensor([[2., 0.], [0., 0.5]])).item()
    4.0
    """
    name = "linalg.cond"
    _require_tensor(name, A)
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor must have at least 2 dimensions.")
    if p not in _SVD_ORDERS + _INVERSE_ORDERS:
        raise RuntimeError(f"{name} got an invalid norm type: {p}")
    if p in _INVERSE_ORDERS or p == "nuc":
        _check_matrices(f"{name}(ord={p})", A)
    if not A.numel():
        result = A.new_zeros(A._size[:-2], dtype=A.dtype.to_real())
    elif p in _SVD_ORDERS:
        S = svdvals(A)
        if p == "nuc":
            result = S.sum(-1) * (1 / S).sum(-1)
        else:
            largest, smallest = S.select(-1, 0), S.select(-1, -1)
            result = smallest / largest if p == -2 else largest / smallest
    else:
        inverse, info = inv_ex(A)
        result = matrix_norm(A, p) * matrix_norm(inverse, p)
        result = call(get("where"), (info > 0, math.inf, result))
    return _into(out, result, name)


@overridable
def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """A view of the diagonals of A's matrices: Tensor.diagonal with torch.linalg's defaults (the last two dims).

    >>> lantern.linalg.diagonal(lantern.eye(2)).tolist()
    [1.0, 1.0]
    """
    return A.diagonal(offset, dim1, dim2)


@overridable
def matmul(input, other, *, out=None):
    """torch.linalg.matmul: the same function as torch.matmul."""
    return COMPOSITES["matmul"](input, other, out=out)


def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with singular values below rcond * σ_max treated as zero."""
    return pinv(input, rtol=rcond)


torch_qr_rt = return_type("qr", ["Q", "R"])
torch_qr_out_rt = out_return_type(torch_qr_rt)


def torch_qr(input, some=True, *, out=None):
    """Deprecated torch.qr: linalg.qr's (Q, R), reduced (some=True) or complete."""
    deprecated("torch.qr", "torch.linalg.qr")
    Q, R = linalg_qr(input, "reduced" if some else "complete")
    if out is None:
        return torch_qr_rt(Q, R)
    return torch_qr_out_rt(_into(out[0], Q, "qr"), _into(out[1], R, "qr"))


composite("vander", torch_vander, method=False)
composite("chain_matmul", chain_matmul, method=False)
composite("pinverse", pinverse)
composite("qr", torch_qr)
