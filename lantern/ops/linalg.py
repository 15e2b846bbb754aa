"""Matrix products: mm, bmm, dot, mv (BLAS through NumPy's matmul), and matmul composed from them as in PyTorch.

>>> (lantern.ones(2, 3) @ lantern.ones(3)).shape, lantern.matmul(lantern.ones(1, 2, 3), lantern.ones(6, 3, 4)).shape
(lantern.Size([2]), lantern.Size([6, 2, 4]))
"""
from ..core import dtype as dt
from .dispatcher import call
from .meta_util import broadcast_shapes
from .pointwise import _require_tensor
from .registry import composite, get, structured
from .derivative import derivative


def _same_dtype(name, a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype.name} != {b.dtype.name} "
                           f"(in {name}; cast one with .to(dtype))")
    if a.dtype is dt.bool:
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")


def _mm_meta(a, b):
    _require_tensor("mm", a)
    _require_tensor("mm", b, 2, "mat2")
    if a.dim() != 2:
        raise RuntimeError(f"self must be a matrix (mm got a {a.dim()}-D tensor of shape {list(a._size)})")
    if b.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix (mm got a {b.dim()}-D tensor of shape {list(b._size)})")
    if a._size[1] != b._size[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._size[0]}x{a._size[1]} and "
                           f"{b._size[0]}x{b._size[1]})")
    _same_dtype("mm", a, b)
    return (a._size[0], b._size[1]), a.dtype


def _matmul_impl(xp, out, dtype, a, b):
    xp.matmul(a, b, out=out)


structured("mm(Tensor self, Tensor mat2) -> Tensor", _mm_meta, _matmul_impl, inplace=False, exact_out_dtype=True)


def _bmm_meta(a, b):
    _require_tensor("bmm", a)
    _require_tensor("bmm", b, 2, "mat2")
    if a.dim() != 3 or b.dim() != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (bmm got shapes {list(a._size)} and {list(b._size)})")
    if a._size[0] != b._size[0] or a._size[2] != b._size[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a._size[0]}, "
                           f"{a._size[2]}] but got: [{b._size[0]}, {b._size[1]}].")
    _same_dtype("bmm", a, b)
    return (a._size[0], a._size[1], b._size[2]), a.dtype


structured("bmm(Tensor self, Tensor mat2) -> Tensor", _bmm_meta, _matmul_impl, inplace=False, exact_out_dtype=True)


def _dot_meta(a, b):
    _require_tensor("dot", a)
    _require_tensor("dot", b, 2, "tensor")
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a._size[0] != b._size[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a._size[0]}] and src [{b._size[0]}] to "
                           f"have the same number of elements, but got {a._size[0]} and {b._size[0]} elements "
                           "respectively")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {a.dtype.legacy} and "
                           f"{b.dtype.legacy}")
    if a.dtype is dt.bool:
        raise NotImplementedError("\"dot\" not implemented for 'Bool'")
    return (), a.dtype


def _dot_impl(xp, out, dtype, a, b):
    out[...] = xp.dot(a, b)


structured("dot(Tensor self, Tensor tensor) -> Tensor", _dot_meta, _dot_impl, inplace=False, exact_out_dtype=True)


def _mv_meta(a, v):
    _require_tensor("mv", a)
    _require_tensor("mv", v, 2, "vec")
    if a.dim() != 2 or v.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {a.dim()}, {v.dim()}")
    if a._size[1] != v._size[0]:
        raise RuntimeError(f"size mismatch, got input ({a._size[0]}), mat ({a._size[0]}x{a._size[1]}), vec "
                           f"({v._size[0]})")
    _same_dtype("mv", a, v)
    return (a._size[0],), a.dtype


structured("mv(Tensor self, Tensor vec) -> Tensor", _mv_meta, _matmul_impl, inplace=False, exact_out_dtype=True)

_mm, _bmm, _dot, _mv = get("mm"), get("bmm"), get("dot"), get("mv")


def matmul(input, other, *, out=None):
    """PyTorch's matmul: dot, mv, mm or a broadcast bmm, choosing by the operands' dims (a composite op).

    With out=, the result is copied into `out` (of the same dtype), which is resized as out= tensors are.

    >>> lantern.matmul(lantern.ones(3), lantern.ones(3, 2)).tolist()
    [3.0, 3.0]
    """
    result = _matmul(input, other)
    if out is None:
        return result
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype.name}, but got {out.dtype.name} instead "
                           "(matmul: pass an out of the operands' dtype)")
    from ..backends.base import resize_out
    resize_out(out, result._size, "matmul.out")
    return out.copy_(result)


def _matmul(input, other):
    _require_tensor("matmul", input)
    _require_tensor("matmul", other, 2, "other")
    da, db = input.dim(), other.dim()
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        return call(_dot, (input, other))
    if da == 2 and db == 1:
        return call(_mv, (input, other))
    if da == 1 and db == 2:
        return call(_mm, (input.unsqueeze(0), other)).squeeze(0)
    if da == 2 and db == 2:
        return call(_mm, (input, other))
    if da >= 3 and db <= 2:
        # fold the batch into the rows: one BLAS call instead of a batched product
        rows = input.reshape(-1, input._size[-1])
        if db == 1:
            return call(_mv, (rows, other)).view(input._size[:-1])
        return call(_mm, (rows, other)).view(input._size[:-1] + (other._size[-1],))
    # general case: broadcast the batch dims, then bmm
    a = input.unsqueeze(0) if da == 1 else input
    b = other.unsqueeze(-1) if db == 1 else other
    batch = broadcast_shapes(a._size[:-2], b._size[:-2])
    n, k, m = a._size[-2], a._size[-1], b._size[-1]
    if b._size[-2] != k:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{_prod(batch)}, {k}] but got: [{_prod(batch)}, {b._size[-2]}].")
    a3 = a.expand(batch + (n, k)).reshape(-1, n, k)
    b3 = b.expand(batch + (k, m)).reshape(-1, k, m)
    out = call(_bmm, (a3, b3)).view(batch + (n, m))
    if da == 1:
        out = out.squeeze(-2)
    if db == 1:
        out = out.squeeze(-1)
    return out


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


composite("matmul", matmul)


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

# ---- linear algebra ----
derivative("mm", self="grad.mm(conj(mat2.t()))", mat2="conj(self.t()).mm(grad)")
derivative("bmm", self="grad.bmm(conj(mat2.transpose(1, 2)))", mat2="conj(self.transpose(1, 2)).bmm(grad)")
derivative("dot", self="grad * conj(tensor)", tensor="grad * conj(self)")
derivative("mv", self="grad.unsqueeze(1) * conj(vec).unsqueeze(0)", vec="conj(self.t()).mv(grad)")
