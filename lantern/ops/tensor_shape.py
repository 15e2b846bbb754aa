"""Shape ops that move or combine data: flip, roll, repeat, tile, repeat_interleave, the *stack family, rot90,
diag, diag_embed, trace, outer, kron, cross, tensordot, einsum, block_diag, cartesian_prod, meshgrid, cdist.

flip, roll, repeat, diag_embed, trace and cdist have kernels and derivatives; the rest are composites of
differentiable ops (as PyTorch composes most of them), so autograd needs nothing more for them.

>>> x = lantern.arange(6).view(2, 3)
>>> x.flip(1).tolist(), x.roll(1, 1).tolist(), x.repeat(1, 2).shape
([[2, 1, 0], [5, 4, 3]], [[2, 0, 1], [5, 3, 4]], lantern.Size([2, 6]))
>>> lantern.einsum("ij,kj->ik", x.float(), x.float()).tolist()
[[5.0, 14.0], [14.0, 50.0]]
"""
import math
import warnings

from ..core import dtype as dt
from ..core.layout import contiguous_format
from ..core.size import Size
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .factory import like_strides
from .meta_util import broadcast_all, operands_result_type, shape_str, wrap_dim, wrap_dims
from .pointwise_common import _require_tensor
from .registry import composite, custom, get, structured
from .derivative import derivative, nondifferentiable
from .derivative_helpers import zeros_like


def _int_tuple(value):
    """An int or a sequence of ints (PyTorch's int[1] arguments) as a tuple."""
    return (value,) if isinstance(value, int) else tuple(value)


def _copy_into(result, out, op_name):
    """Finish a composite's out= form: resize `out` like out= tensors are, then copy the result in."""
    if out is None:
        return result
    from ..backends.base import resize_out
    resize_out(out, result._size, op_name)
    return out.copy_(result)


# ---- flip, roll --------------------------------------------------------------------------------------------------

def _flip(backend, self, dims):
    """A copy laid out as empty_like(self) (a dense or empty input's strides kept), the dims reversed."""
    _require_tensor("flip", self)
    axes = wrap_dims(_int_tuple(dims), self.dim())
    out = backend.empty_strided(self._size, like_strides(self, None), self.dtype)
    if backend.xp is not None and out.numel():
        a = backend.array(self)
        backend.array(out)[...] = backend.xp.flip(a, axis=axes) if axes and a.ndim else a  # 0-d: dims 0, -1 pass
    return out


custom("flip(Tensor self, int[] dims) -> Tensor", _flip, _flip)


def _roll_meta(self, shifts, dims=()):
    _require_tensor("roll", self)
    shifts, dims = _int_tuple(shifts), _int_tuple(dims)
    if not shifts:
        raise RuntimeError(f"`shifts` required (roll of a tensor of shape {shape_str(self._size)})")
    if dims or len(shifts) != 1:
        if len(shifts) != len(dims):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
        if self.numel() == 0:  # PyTorch returns a clone of an empty tensor before checking the dims
            return self._size, self.dtype
        if dims and self.dim() == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions (roll of a 0-d tensor: call it "
                             "without dims)")
        for d in dims:
            wrap_dim(d, self.dim())
    return self._size, self.dtype


def _roll_impl(xp, out, dtype, self, shifts, dims=()):
    shifts, dims = _int_tuple(shifts), _int_tuple(dims)
    if not dims:  # no dims: roll the flattened tensor
        out[...] = xp.roll(self.reshape(-1), shifts[0]).reshape(self.shape)
    else:
        out[...] = xp.roll(self, shifts, axis=dims)


def _roll(backend, self, shifts, dims=()):
    """A contiguous copy rolled along dims; an empty input gives a clone, its strides kept, as in PyTorch."""
    _roll_meta(self, shifts, dims)
    if self.numel() == 0 and (_int_tuple(dims) or self.dim() == 1):  # a clone: an empty tensor's strides kept
        return backend.empty_strided(self._size, like_strides(self, None), self.dtype)
    out = backend.empty(self._size, self.dtype)
    if backend.xp is not None:
        _roll_impl(backend.xp, backend.array(out), self.dtype, backend.array(self), shifts, dims)
    return out


custom("roll(Tensor self, int[1] shifts, int[1] dims=[]) -> Tensor", _roll, _roll)


def roll_backward(grad, shifts, dims):
    return grad.roll(tuple(-s for s in _int_tuple(shifts)), dims)


def fliplr(input):
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip((1,))


def flipud(input):
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip((0,))


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by k quarter turns from dims[0] towards dims[1] (flip + transpose, as PyTorch composes it)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    n = input.dim()
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    if dims[0] == dims[1] or abs(dims[0] - dims[1]) == n:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    d0, d1 = wrap_dim(dims[0], n), wrap_dim(dims[1], n)
    k %= 4
    if k == 1:
        return input.flip((d1,)).transpose(d0, d1)
    if k == 2:
        return input.flip((d0, d1))
    if k == 3:
        return input.flip((d0,)).transpose(d0, d1)
    return input.clone(memory_format=contiguous_format)


# ---- repeat, tile, repeat_interleave ---------------------------------------------------------------------------

def _interleave(outer, inner):
    return tuple(v for pair in zip(outer, inner) for v in pair)


def _repeat_meta(self, repeats):
    _require_tensor("repeat", self)
    repeats = tuple(repeats)
    if len(repeats) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           f"tensor (repeat of shape {shape_str(self._size)} by {list(repeats)})")
    padded = (1,) * (len(repeats) - self.dim()) + self._size
    shape = tuple(r * s for r, s in zip(repeats, padded))
    for n in shape:  # the sizes, not the repeats: a negative repeat of an empty dim gives size 0, as in PyTorch
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(shape)} (repeat of "
                               f"shape {shape_str(self._size)} by {list(repeats)}: repeats must be >= 0)")
    return shape, self.dtype


def _repeat_impl(xp, out, dtype, self, repeats):
    """Write through a (r0, s0, r1, s1, ...) view of the output, with self broadcast along the r dims."""
    if out.size == 0:
        return
    repeats = tuple(repeats)
    lead = len(repeats) - self.ndim
    padded = (1,) * lead + self.shape
    src = self.reshape(padded)[_interleave((None,) * len(padded), (slice(None),) * len(padded))]
    out.reshape(_interleave(repeats, padded))[...] = src


structured("repeat(Tensor self, int[] repeats) -> Tensor", _repeat_meta, _repeat_impl, inplace=False, out=False)


def repeat_backward(grad, repeats, meta):
    """Sum the gradient over the copies: view it as (r0, s0, r1, s1, ...) and sum the r dims."""
    repeats = tuple(repeats)
    padded = (1,) * (len(repeats) - len(meta.size)) + tuple(meta.size)
    summed = grad.reshape(_interleave(repeats, padded)).sum(tuple(range(0, 2 * len(repeats), 2)))
    return summed.reshape(meta.size)


def tile(input, *dims):
    """repeat, with fewer dims than the tensor meaning leading 1s."""
    dims = dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims
    dims = tuple(dims)
    return input.repeat((1,) * (input.dim() - len(dims)) + dims)


def _repeat_interleave_index(backend, repeats, output_size=None):
    """repeat_interleave(repeats): each index i repeated repeats[i] times (what indexes the other overloads)."""
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype not in (dt.int32, dt.int64):
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{repeats.dtype.legacy}' "
                                  "(repeats must be an int32 or int64 tensor)")
    if backend.xp is None:
        if output_size is None:
            raise NotImplementedError("repeat_interleave on the meta device needs output_size= (the result's "
                                      "length depends on the values of repeats)")
        return backend.empty((output_size,), repeats.dtype)
    counts = backend.array(repeats)
    if counts.size and counts.min() < 0:
        raise RuntimeError("repeats can not be negative")
    total = int(counts.sum())
    if output_size is not None and output_size != total:
        raise RuntimeError(f"allocated size does not match required size (repeat_interleave: output_size="
                           f"{output_size} but repeats sum to {total})")
    out = backend.empty((total,), repeats.dtype)
    xp = backend.xp
    backend.array(out)[...] = xp.repeat(xp.arange(counts.size), counts)
    return out


custom("repeat_interleave.Tensor(Tensor repeats, *, int? output_size=None) -> Tensor", _repeat_interleave_index,
       _repeat_interleave_index)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """repeat_interleave(input, repeats, dim=None): each element (or slice along dim) repeated `repeats` times
    (an int, or a tensor with one count per element); repeat_interleave(repeats): the indices that would do so."""
    if repeats is None:
        return call(get("repeat_interleave.Tensor"), (input, output_size))
    _require_tensor("repeat_interleave", input)
    if dim is not None and input.dim() == 0:  # PyTorch refuses every dim of a 0-d input here, 0 and -1 too
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got {dim}) "
                         "(repeat_interleave of a 0-d tensor: pass no dim)")
    x = input.flatten() if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, x.dim())
    if isinstance(repeats, TensorImpl):
        if repeats.dim() == 0 or repeats._size == (1,):
            repeats = repeats.reshape(1).expand(x._size[d] if x.dim() else 1)
        elif repeats.dim() == 1 and repeats._size[0] != x._size[d]:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats._size[0]} and input.size({d}) = {x._size[d]}")
        index = call(get("repeat_interleave.Tensor"), (repeats, output_size))
        return x[(slice(None),) * d + (index,)]
    if repeats < 0:
        raise RuntimeError("Repeats can not be negative")
    if x.dim() == 0:
        x = x.reshape(1)
    size = list(x._size)
    expanded = x.unsqueeze(d + 1).expand(size[:d + 1] + [repeats] + size[d + 1:])
    return expanded.clone(memory_format=contiguous_format).flatten(d, d + 1)


# ---- broadcasting, atleast_*d, the stack family ------------------------------------------------------------------

def broadcast_to(input, size):
    return input.expand(tuple(size))


def broadcast_shapes(*shapes):
    return Size(broadcast_all([(s,) if isinstance(s, int) else tuple(s) for s in shapes]))


def broadcast_tensors(*tensors):
    tensors = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    for i, t in enumerate(tensors):
        _require_tensor("broadcast_tensors", t, i + 1, "tensors")
    shape = tuple(broadcast_all([t._size for t in tensors]))
    return tuple(t if t._size == shape else t.expand(shape) for t in tensors)  # as torch: no view when no change


def _atleast(ndim, lift):
    def fn(*tensors):
        many = len(tensors) != 1 or isinstance(tensors[0], (list, tuple))
        items = tensors[0] if len(tensors) == 1 and many else tensors
        out = tuple(t if t.dim() >= ndim else lift(t) for t in items)
        return out if many else out[0]
    fn.__name__ = f"atleast_{ndim}d"
    fn.__doc__ = f"The tensor (or each of several) viewed with at least {ndim} dims (new dims of size 1)."
    return fn


atleast_1d = _atleast(1, lambda t: t.reshape(1))
atleast_2d = _atleast(2, lambda t: t.unsqueeze(0) if t.dim() == 1 else t.reshape(1, 1))
atleast_3d = _atleast(3, lambda t: t.unsqueeze(-1) if t.dim() == 2 else
                      t.unsqueeze(0).unsqueeze(-1) if t.dim() == 1 else t.reshape(1, 1, 1))


def _stack_list(name, tensors):
    if isinstance(tensors, TensorImpl) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def _cat(tensors, dim, out):
    if out is None:
        return call(get("cat"), (list(tensors), dim))
    return call(get("cat.out"), (list(tensors), dim, out))


def hstack(tensors, *, out=None):
    tensors = atleast_1d(list(_stack_list("hstack", tensors)))
    return _cat(tensors, 0 if tensors[0].dim() == 1 else 1, out)


def vstack(tensors, *, out=None):
    return _cat(atleast_2d(list(_stack_list("vstack", tensors))), 0, out)


def dstack(tensors, *, out=None):
    return _cat(atleast_3d(list(_stack_list("dstack", tensors))), 2, out)


def column_stack(tensors, *, out=None):
    tensors = _stack_list("column_stack", tensors)
    return _cat([t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in tensors], 1, out)


row_stack = vstack


# ---- diagonals -------------------------------------------------------------------------------------------------

def _diag_embed_meta(self, offset=0, dim1=-2, dim2=-1):
    _require_tensor("diag_embed", self)
    d1, d2 = wrap_dim(dim1, self.dim() + 1), wrap_dim(dim2, self.dim() + 1)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    side = (self._size[-1] if self.dim() else 1) + abs(offset)
    shape = list(self._size[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, side)
    return tuple(shape), self.dtype


def _diag_embed_impl(xp, out, dtype, self, offset=0, dim1=-2, dim2=-1):
    d1, d2 = wrap_dim(dim1, out.ndim), wrap_dim(dim2, out.ndim)
    out[...] = 0
    moved = xp.moveaxis(out, (d1, d2), (-2, -1))
    k = xp.arange(self.shape[-1] if self.ndim else 1)
    moved[..., k + max(-offset, 0), k + max(offset, 0)] = self


structured("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor", _diag_embed_meta,
           _diag_embed_impl, inplace=False, out=False)


def diag(input, diagonal=0, *, out=None):
    """A 1-D tensor's diagonal matrix (the entries on the `diagonal`-th diagonal), or a matrix's diagonal."""
    _require_tensor("diag", input)
    if input.dim() == 1:
        result = input.diag_embed(diagonal, 0, 1)
    elif input.dim() == 2:
        result = input.diagonal(diagonal).clone(memory_format=contiguous_format)  # a new row-major vector
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    return _copy_into(result, out, "diag.out")


def _trace_meta(self):
    _require_tensor("trace", self)
    if self.dtype is dt.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
    return (), dt.int64 if self.dtype.category == dt.INTEGRAL else self.dtype


def _trace_impl(xp, out, dtype, self):
    half = dtype in (xp.float16, dt.bfloat16.np)  # half types accumulate in float32, as PyTorch's
    out[...] = xp.trace(self, dtype=xp.float32 if half else dtype)


structured("trace(Tensor self) -> Tensor", _trace_meta, _trace_impl, inplace=False, out=False)


def trace_backward(grad, meta):
    return zeros_like(meta).diagonal_scatter(grad.expand(min(meta.size)), 0, 0, 1)


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
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=3)
        sizes = broadcast_all([input._size, other._size])
        dim = next((i for i, s in enumerate(sizes) if s == 3), -1)
    return _copy_into(linalg_cross(input, other, dim=dim), out, "cross.out")


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
        if a._size[da] != b._size[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._size[da]} in dim {da} "
                               f"and second has size {b._size[db]} in dim {db}")
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    inner = math.prod(a._size[d] for d in dims_a)
    left = a.permute(free_a + dims_a).reshape(math.prod(a._size[d] for d in free_a), inner)
    right = b.permute(dims_b + free_b).reshape(inner, math.prod(b._size[d] for d in free_b))
    result = left.mm(right).reshape([a._size[d] for d in free_a] + [b._size[d] for d in free_b])
    return _copy_into(result, out, "tensordot.out")


def _check_same_dtype_device(name, tensors):
    for t in tensors[1:]:
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"{name} expects all tensors to have the same dtype, got {tensors[0].dtype} and "
                               f"{t.dtype}")
        if t.device != tensors[0].device:
            raise RuntimeError(f"{name} expects all tensors to be on the same device, got {tensors[0].device} "
                               f"and {t.device}")


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) placed along the diagonal of a zero matrix: zero-padded rows, then cat."""
    blocks = []
    for i, t in enumerate(tensors):
        _require_tensor("block_diag", t, i + 1, "tensors")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        blocks.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    if not blocks:
        return call(get("empty"), ((1, 0), None, None, None, None, False, None))
    dtype = operands_result_type(list(tensors))
    width = sum(b._size[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b._size[1]
        pieces = [b.new_zeros((b._size[0], left), dtype=dtype), b.to(dtype), b.new_zeros((b._size[0], right),
                                                                                            dtype=dtype)]
        rows.append(call(get("cat"), (pieces, 1)))
        left += b._size[1]
    return call(get("cat"), (rows, 0))


def meshgrid(*tensors, indexing=None):
    """Coordinate grids: the i-th output holds tensors[i] varying along dim i ('ij') or with the first two dims
    swapped ('xy', as NumPy's default)."""
    tensors = list(tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=3)  # past the composite's wrapper (registry.observed) to its caller
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid: Expected at least one tensor in the list")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    _check_same_dtype_device("meshgrid", tensors)
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    shape = tuple(t.numel() for t in tensors)
    grids = []
    for i, t in enumerate(tensors):
        view_shape = [1] * len(shape)
        view_shape[i] = -1
        grids.append(t.view(view_shape).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (itertools.product order)."""
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {shape_str(t._size)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return call(get("stack"), ([g.flatten() for g in grids], 1))


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


_MM_SQUARED_FLOOR = 1e-30  # the matmul route clamps squared distances here (as PyTorch) before the sqrt


def _uses_mm(rows1, rows2, p, compute_mode):
    mode = 0 if compute_mode is None else _MM_MODES[compute_mode]
    return p == 2 and (mode == 1 or (mode == 0 and (rows1 > 25 or rows2 > 25)))


def _cdist_impl(xp, out, dtype, x1, x2, p=2.0, compute_mode=None):
    if out.size == 0:
        return
    work = xp.float32 if dtype in (xp.float16, dt.bfloat16.np) else dtype
    x1, x2 = x1.astype(work, copy=False), x2.astype(work, copy=False)
    if _uses_mm(x1.shape[-2], x2.shape[-2], p, compute_mode):  # |a|^2 + |b|^2 - 2 a.b, as PyTorch for many rows
        squares = (x1 * x1).sum(-1)[..., :, None] + (x2 * x2).sum(-1)[..., None, :]
        out[...] = xp.sqrt(xp.maximum(squares - 2 * xp.matmul(x1, xp.swapaxes(x2, -1, -2)), _MM_SQUARED_FLOOR))
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


structured("cdist(Tensor x1, Tensor x2, float p=2, str? compute_mode=None) -> Tensor", _cdist_meta, _cdist_impl,
           inplace=False, out=False)


def cdist_backward(grad, x1, x2, p, compute_mode, result, first):
    """The gradient for x1 (first) or x2 of the p-norm distances, zero where a distance is 0 (as PyTorch).

    p = 2 goes through matrix products (no (P, R, M) temporary); a distance at the matmul route's floor (within a
    factor 2, which float32 rounding needs) counts as 0, so identical points get exactly zero. Other p work on the
    pairwise differences."""
    if p == 0:
        return zeros_like(x1 if first else x2)
    where = get("where")
    if p == 2:
        floor = 2 * math.sqrt(_MM_SQUARED_FLOOR) if _uses_mm(x1._size[-2], x2._size[-2], p, compute_mode) else 0.0
        live = result > floor
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


for _name, _fn in (("fliplr", fliplr), ("flipud", flipud), ("rot90", rot90), ("tile", tile),
                   ("repeat_interleave", repeat_interleave), ("broadcast_to", broadcast_to), ("diag", diag),
                   ("outer", outer), ("ger", ger), ("kron", kron), ("cross", cross), ("tensordot", tensordot)):
    composite(_name, _fn, method=_name != "tensordot")
for _fn in (broadcast_shapes, broadcast_tensors, atleast_1d, atleast_2d, atleast_3d, hstack, vstack, dstack,
            column_stack, block_diag, meshgrid, cartesian_prod, einsum, linalg_cross):
    composite(_fn.__name__, _fn, method=False)
composite("row_stack", row_stack, method=False)


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

_HELPERS = {"roll_backward": roll_backward, "repeat_backward": repeat_backward, "trace_backward": trace_backward,
            "cdist_backward": cdist_backward}
derivative("flip", self="grad.flip(dims)")
derivative("roll", self="roll_backward(grad, shifts, dims)", helpers=_HELPERS)
derivative("repeat", self="repeat_backward(grad, repeats, self_meta)", helpers=_HELPERS)
derivative("diag_embed", self="grad.diagonal(offset, dim1, dim2)")
derivative("trace", self="trace_backward(grad, self_meta)", helpers=_HELPERS)
derivative("cdist", name="CdistBackward0", x1="cdist_backward(grad, x1, x2, p, compute_mode, result, True)",
           x2="cdist_backward(grad, x1, x2, p, compute_mode, result, False)", helpers=_HELPERS)
nondifferentiable("repeat_interleave.Tensor")
