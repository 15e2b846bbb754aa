"""Shape ops that move or combine data: flip, roll, rot90, repeat, tile, repeat_interleave, broadcast_to and
broadcast_tensors, atleast_*d, the *stack family, meshgrid, cartesian_prod. The diagonal ops (diag, diag_embed,
trace, block_diag) live in tensor_shape_diagonals, the products (outer, kron, cross, tensordot, einsum, cdist) in
tensor_shape_products.

flip, roll and repeat have kernels and derivatives; the rest are composites of differentiable ops (as PyTorch
composes most of them), so autograd needs nothing more for them.

>>> x = lantern.arange(6).view(2, 3)
>>> x.flip(1).tolist(), x.roll(1, 1).tolist(), x.repeat(1, 2).shape
([[2, 1, 0], [5, 4, 3]], [[2, 0, 1], [5, 3, 4]], lantern.Size([2, 6]))
>>> lantern.hstack([x, x]).shape, [g.tolist() for g in lantern.meshgrid(lantern.arange(2), lantern.arange(2))]
(lantern.Size([2, 6]), [[[0, 0], [1, 1]], [[0, 1], [0, 1]]])
"""

from ..core import dtype as dt
from ..core.layout import contiguous_format
from ..core.size import Size
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .factory import like_strides
from .meta_util import broadcast_all, shape_str, wrap_dim, wrap_dims
from .pointwise_common import _require_tensor
from .registry import composite, custom, get, structured
from .derivative import derivative, nondifferentiable
from ..core import user_warnings


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


derivative("flip", self="grad.flip(dims)")


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


derivative("roll", self="roll_backward(grad, shifts, dims)",
           helpers={"roll_backward": roll_backward})


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


derivative("repeat", self="repeat_backward(grad, repeats, self_meta)",
           helpers={"repeat_backward": repeat_backward})


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


nondifferentiable("repeat_interleave.Tensor")


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


def _check_same_dtype_device(name, tensors):
    for t in tensors[1:]:
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"{name} expects all tensors to have the same dtype, got {tensors[0].dtype} and "
                               f"{t.dtype}")
        if t.device != tensors[0].device:
            raise RuntimeError(f"{name} expects all tensors to be on the same device, got {tensors[0].device} "
                               f"and {t.device}")


def meshgrid(*tensors, indexing=None):
    """Coordinate grids: the i-th output holds tensors[i] varying along dim i ('ij') or with the first two dims
    swapped ('xy', as NumPy's default)."""
    tensors = list(tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors)
    if indexing is None:
        user_warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
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


for _name, _fn in (("fliplr", fliplr), ("flipud", flipud), ("rot90", rot90), ("tile", tile),
                   ("repeat_interleave", repeat_interleave), ("broadcast_to", broadcast_to)):
    composite(_name, _fn)
for _fn in (broadcast_shapes, broadcast_tensors, atleast_1d, atleast_2d, atleast_3d, hstack, vstack, dstack,
            column_stack, meshgrid, cartesian_prod):
    composite(_fn.__name__, _fn, method=False)
composite("row_stack", row_stack, method=False)
