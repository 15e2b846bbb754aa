"""Products and distances: outer (ger), kron, cross and linalg_cross, tensordot, einsum (composites over mm,
mul and sum, so autograd needs nothing more), and cdist (a kernel with its derivative).

>>> x = lantern.arange(6).view(2, 3)
>>> lantern.einsum("ij,kj->ik", x.float(), x.float()).tolist()
[[5.0, 14.0], [14.0, 50.0]]
>>> lantern.outer(lantern.tensor([1, 2]), lantern.tensor([3, 4])).tolist()
[[3, 4], [6, 8]]
>>> lantern.cdist(lantern.tensor([[0., 0.]]), lantern.tensor([[3., 4.]])).item()
5.0
"""
import math

from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .meta_util import broadcast_all, wrap_dim, wrap_dims
from .pointwise_common import _require_tensor
from .registry import composite, get, structured
from .derivative import derivative
from .derivative_helpers import zeros_like
from .linalg_products import batched_product
from .tensor_shape import _copy_into, _int_tuple, _interleave
from ..core import user_warnings


# ---- products --------------------------------------------------------------------------------------------------

def outer(input, vec2, *, out=None):
    for name, t in (("self", input), ("vec2", vec2)):
        _require_tensor("outer", t)
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.dim()}-D")
    return _copy_into(input.reshape(input._size[0], 1) * vec2, out, "outer.out")


ger = outer


def kron(input, other, *, out=None):
    """The Kronecker product: every element of input times a copy of other (interleaved reshapes + one mul)."""
    n = max(input.dim(), other.dim())
    a_size = (1,) * (n - input.dim()) + input._size
    b_size = (1,) * (n - other.dim()) + other._size
    a = input.reshape(_interleave(a_size, (1,) * n))
    b = other.reshape(_interleave((1,) * n, b_size))
    return _copy_into((a * b).reshape(tuple(x * y for x, y in zip(a_size, b_size))), out, "kron.out")


def linalg_cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along dim, broadcasting the other dims: a1 b2 - a2 b1, ... (with rolls)."""
    _require_tensor("linalg.cross", input)
    _require_tensor("linalg.cross", other, 2, "other")
    if input.dim() != other.dim():
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. Got {input.dim()} and "
                           f"{other.dim()}")
    d = wrap_dim(dim, input.dim())
    if input._size[d] != 3 or other._size[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input._size[d]} and "
                           f"{other._size[d]}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.legacy} but found {other.dtype.legacy} (linalg.cross "
                           "needs inputs of one dtype: cast one with .to(dtype))")
    broadcast_all([input._size, other._size])
    return input.roll(-1, d) * other.roll(-2, d) - input.roll(-2, d) * other.roll(-1, d)


def cross(input, other, dim=None, *, out=None):
    """linalg_cross along dim; without dim, along the first dim of size 3 (deprecated in PyTorch, with a warning)."""
    if dim is None:
        # stacklevel 3: past the composite's wrapper (registry.observed) to its caller
        user_warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=3)
        sizes = broadcast_all([input._size, other._size])
        dim = next((i for i, s in enumerate(sizes) if s == 3), -1)
    return _copy_into(linalg_cross(input, other, dim=dim), out, "cross.out")


def _expand_dim(t, dim, size):
    return t.expand(t._size[:dim] + (size,) + t._size[dim + 1:])


def tensordot(a, b, dims=2, out=None):
    """Contract dims of a with dims of b: permute both so the contracted dims meet, then one mm."""
    _require_tensor("tensordot", a)
    _require_tensor("tensordot", b, 2, "b")
    if isinstance(dims, int) or (isinstance(dims, TensorImpl) and dims.dim() == 0):
        count = int(dims)
        if count < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={count}")
        if count > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={count}")
        dims_a, dims_b = list(range(a.dim() - count, a.dim())), list(range(count))
    else:
        dims_a, dims_b = (_int_tuple(x.tolist() if isinstance(x, TensorImpl) else x) for x in dims)
        if len(dims_a) != len(dims_b):
            raise RuntimeError(f"both dimension lists should have same length (tensordot got {len(dims_a)} and "
                               f"{len(dims_b)})")
    dims_a = list(wrap_dims(dims_a, a.dim()))
    dims_b = list(wrap_dims(dims_b, b.dim()))
    for da, db in zip(dims_a, dims_b):
        if a._size[da] != b._size[db] and 1 in (a._size[da], b._size[db]):  # a size-1 contracted dim broadcasts
            a, b = (a, _expand_dim(b, db, a._size[da])) if b._size[db] == 1 else (_expand_dim(a, da, b._size[db]), b)
        if a._size[da] != b._size[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._size[da]} in dim {da} "
                               f"and second has size {b._size[db]} in dim {db}")
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    inner = math.prod(a._size[d] for d in dims_a)
    left = a.permute(free_a + dims_a).reshape(math.prod(a._size[d] for d in free_a), inner)
    right = b.permute(dims_b + free_b).reshape(inner, math.prod(b._size[d] for d in free_b))
    shape = [a._size[d] for d in free_a] + [b._size[d] for d in free_b]
    if left._size[0] == 1 and right._size[1] == 1:  # one output element: a dot product (PyTorch's, which autocast
        result = left.reshape(-1).dot(right.reshape(-1)).reshape(shape)  # leaves in float32, unlike mm)
    else:
        result = left.mm(right).reshape(shape)
    return _copy_into(result, out, "tensordot.out")


for _name, _fn in (("outer", outer), ("ger", ger), ("kron", kron), ("cross", cross)):
    composite(_name, _fn)
for _fn in (tensordot, linalg_cross):
    composite(_fn.__name__, _fn, method=False)


# ---- einsum ----------------------------------------------------------------------------------------------------

def _parse_equation(equation, operands):
    """(one index string per operand, output indices), each ellipsis expanded into stand-in characters outside
    [a-zA-Z] (so they never clash with the equation's), right-aligned as broadcasting aligns dims."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(terms) < len(operands) else
                           "einsum(): fewer operands were provided than specified in the equation")
    ellipsis_dims = 0
    parsed = []
    for term, t in zip(terms, operands):
        if term.count("...") > 1 or "." in term.replace("...", ""):
            raise RuntimeError(f"einsum(): found '.' for operand {len(parsed)} that is not part of any ellipsis")
        for ch in term.replace("...", ""):
            if not ch.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index {equation.index(ch)} in the "
                                   f"equation string, subscripts must be in [a-zA-Z]")
        named = len(term.replace("...", ""))
        if "..." in term:
            covered = t.dim() - named
            if covered < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                                   f"number of dimensions ({t.dim()}) for operand {len(parsed)}")
            ellipsis_dims = max(ellipsis_dims, covered)
        elif named != t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) does not match the "
                               f"number of dimensions ({t.dim()}) for operand {len(parsed)} and no ellipsis was "
                               f"given")
        parsed.append((term, t.dim() - named))
    ell = [chr(0x100 + i) for i in range(ellipsis_dims)]  # stand-ins for the ellipsis dims
    expanded = [term.replace("...", "".join(ell[ellipsis_dims - covered:])) for term, covered in parsed]
    if arrow:
        if rhs.count("...") > 1:
            raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
        out = rhs.replace("...", "".join(ell))
        seen = set("".join(expanded))
        for ch in out:
            if ch not in seen:
                raise RuntimeError(f"einsum(): output subscript {ch} does not appear in the equation for any input "
                                   "operand")
        if len(set(out)) != len(out):
            raise RuntimeError("einsum(): output subscript appears more than once in the output")
    else:
        counts = {}
        for ch in "".join(expanded):
            counts[ch] = counts.get(ch, 0) + 1
        out = "".join(ell) + "".join(sorted(ch for ch, c in counts.items() if c == 1 and ch not in ell))
    return expanded, out


def _take_diagonals(t, term):
    """Repeated indices within one operand (`ii`) select the diagonal; returns (tensor, indices without repeats)."""
    while len(set(term)) != len(term):
        ch = next(c for c in term if term.count(c) > 1)
        first, second = term.index(ch), term.index(ch, term.index(ch) + 1)
        if t._size[first] != t._size[second]:
            raise RuntimeError(f"einsum(): subscript {ch} is repeated for operand but the sizes don't match, "
                               f"{t._size[first]} != {t._size[second]}")
        t = t.diagonal(0, first, second)
        term = "".join(c for i, c in enumerate(term) if i not in (first, second)) + ch
    return t, term


def _sum_unneeded(t, term, keep):
    """Sum away the indices of `term` that `keep` (the output and the other operands' indices) lacks."""
    dims = [i for i, c in enumerate(term) if c not in keep]
    if not dims:
        return t, term
    return t.sum(dims), "".join(c for c in term if c in keep)


def _contract(a, ta, b, tb, keep):
    """a (indices ta) times b (indices tb), summing the shared indices that `keep` lacks: one bmm over
    (batch, a-only, shared) x (batch, shared, b-only); returns (tensor, indices)."""
    size = {}
    for t, term in ((a, ta), (b, tb)):
        for c, s in zip(term, t._size):
            if size.get(c, 1) != 1 and s != 1 and s != size[c]:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript {c} has sizes {size[c]} and {s}")
            size[c] = max(size.get(c, 1), s)
    batch = [c for c in ta if c in tb and c in keep]
    summed = [c for c in ta if c in tb and c not in keep]
    only_a = [c for c in ta if c not in tb]
    only_b = [c for c in tb if c not in ta]

    def arrange(t, term, groups):
        order = [term.index(c) for group in groups for c in group]
        t = t.permute(order).expand([size[c] for group in groups for c in group])
        return t.reshape([math.prod(size[c] for c in group) for group in groups])
    left = arrange(a, ta, (batch, only_a, summed))
    right = arrange(b, tb, (batch, summed, only_b))
    result = left.bmm(right).reshape([size[c] for c in batch + only_a + only_b])
    return result, "".join(batch + only_a + only_b)


def einsum(equation, *operands):
    """Einstein summation over any valid equation (ellipsis, repeated indices, implicit output), as diagonals,
    sums, and a chain of pairwise bmm contractions: differentiable through those ops.

    >>> lantern.einsum("ii", lantern.eye(3)).item(), lantern.einsum("i,j", lantern.ones(2), lantern.ones(3)).shape
    (3.0, lantern.Size([2, 3]))
    """
    operands = list(operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands)
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for i, t in enumerate(operands):
        _require_tensor("einsum", t, i + 2, "operands")
    terms, out = _parse_equation(equation, operands)
    items = [_take_diagonals(t, term) for t, term in zip(operands, terms)]
    for k in range(len(items)):
        needed = set(out).union(*(term for j, (_, term) in enumerate(items) if j != k))
        items[k] = _sum_unneeded(*items[k], needed)
    t, term = items[0]
    for k in range(1, len(items)):
        needed = set(out).union(*(tm for _, tm in items[k + 1:]))
        t, term = _contract(t, term, *items[k], needed)
    return t.permute([term.index(c) for c in out])


composite("einsum", einsum, method=False)


# ---- cdist -----------------------------------------------------------------------------------------------------

_MM_MODES = {None: 0, "use_mm_for_euclid_dist_if_necessary": 0,
             "use_mm_for_euclid_dist": 1, "donot_use_mm_for_euclid_dist": 2}


def _cdist_meta(x1, x2, p=2.0, compute_mode=None):
    _require_tensor("cdist", x1, 1, "x1")
    _require_tensor("cdist", x2, 2, "x2")
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.dim()}D")
        if t.dtype.category != dt.FLOATING:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {t.dtype.legacy}")
    if x1._size[-1] != x2._size[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1._size[-1]} X2: {x2._size[-1]}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"cdist expected both inputs to have the same dtype, got {x1.dtype} and {x2.dtype}")
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _MM_MODES:
        raise RuntimeError(f"{compute_mode} is not a valid value for compute_mode")
    batch = broadcast_all([x1._size[:-2], x2._size[:-2]])
    return batch + (x1._size[-2], x2._size[-2]), x1.dtype


def _uses_mm(rows1, rows2, p, compute_mode):
    mode = 0 if compute_mode is None else _MM_MODES[compute_mode]
    return p == 2 and (mode == 1 or (mode == 0 and (rows1 > 25 or rows2 > 25)))


def _cdist_impl(xp, out, dtype, x1, x2, p=2.0, compute_mode=None):
    if out.size == 0:
        return
    work = xp.float32 if dtype in (xp.float16, dt.bfloat16.np) else dtype
    x1, x2 = x1.astype(work, copy=False), x2.astype(work, copy=False)
    if _uses_mm(x1.shape[-2], x2.shape[-2], p, compute_mode):
        out[...] = xp.sqrt(xp.maximum(_squared_distances_by_product(xp, x1, x2), 0))
        return
    diff = xp.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == 0:
        out[...] = (diff != 0).sum(-1)
    elif p == 1:
        out[...] = diff.sum(-1)
    elif p == 2:
        out[...] = xp.sqrt((diff * diff).sum(-1))
    elif p == math.inf:
        out[...] = diff.max(-1) if diff.shape[-1] else 0
    else:
        out[...] = (diff ** p).sum(-1) ** (1.0 / p)


def _squared_distances_by_product(xp, x1, x2):
    """|a|^2 + |b|^2 - 2 a.b for every pair of rows, as PyTorch's _euclidean_dist computes it (for many rows): one
    batched product of [-2a, |a|^2, 1] and [b, 1, |b|^2], so that it rounds the same."""
    batch = xp.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    x1 = xp.broadcast_to(x1, batch + x1.shape[-2:]).reshape((-1,) + x1.shape[-2:])
    x2 = xp.broadcast_to(x2, batch + x2.shape[-2:]).reshape((-1,) + x2.shape[-2:])
    norms1, norms2 = (x1 * x1).sum(-1, keepdims=True), (x2 * x2).sum(-1, keepdims=True)
    left = xp.concatenate([-2 * x1, norms1, xp.ones_like(norms1)], -1)
    right = xp.concatenate([x2, xp.ones_like(norms2), norms2], -1)
    return batched_product(xp, left, xp.swapaxes(right, -1, -2)).reshape(batch + (x1.shape[-2], x2.shape[-2]))


structured("cdist(Tensor x1, Tensor x2, float p=2, str? compute_mode=None) -> Tensor", _cdist_meta, _cdist_impl,
           inplace=False, out=False)


def cdist_backward(grad, x1, x2, p, compute_mode, result, first):
    """The gradient for x1 (first) or x2 of the p-norm distances, zero where a distance is 0 (as PyTorch).

    p = 2 goes through matrix products (no (P, R, M) temporary); a distance of 0 (the matmul route clamps negative
    squares there) gives zero. Other p work on the pairwise differences."""
    if p == 0:
        return zeros_like(x1 if first else x2)
    where = get("where")
    if p == 2:
        live = result > 0
        scaled = call(where, (live, grad / call(where, (live, result, 1.0)), 0.0))
        if first:
            g = x1 * scaled.sum(-1, keepdim=True) - scaled.matmul(x2)
        else:
            g = x2 * scaled.sum(-2).unsqueeze(-1) - scaled.transpose(-1, -2).matmul(x1)
        return g.sum_to_size((x1 if first else x2)._size)
    nonzero = result != 0
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    dist = result.unsqueeze(-1)
    if p == 1:
        pair = diff.sign()
    elif p == math.inf:
        pair = diff.sign() * (diff.abs() == dist).to(diff.dtype)
    else:
        ratio = diff.abs() / call(where, (nonzero.unsqueeze(-1), dist, 1.0))
        ratio = call(where, (diff != 0, ratio, 1.0))  # |0|^(p-1) is inf for p < 1; its sign(0) factor zeroes it
        pair = diff.sign() * ratio.pow(p - 1) * nonzero.unsqueeze(-1).to(diff.dtype)
    pair = pair * grad.unsqueeze(-1)
    g = pair.sum(-2) if first else -pair.sum(-3)
    return g.sum_to_size((x1 if first else x2)._size)


derivative("cdist", name="CdistBackward0", x1="cdist_backward(grad, x1, x2, p, compute_mode, result, True)",
           x2="cdist_backward(grad, x1, x2, p, compute_mode, result, False)",
           helpers={"cdist_backward": cdist_backward})
