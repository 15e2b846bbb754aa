"""Masks: masked_fill, masked_select, masked_scatter; nonzero and argwhere, whose result sizes depend on the
values (so a meta tensor cannot run them), and nonzero_static, whose size is given. Each op's record, kernel and
derivative sit together.

>>> x = lantern.arange(12).view(3, 4)
>>> x.masked_fill(x > 9, 0)[2].tolist(), x.masked_select(x > 9).tolist()
([8, 9, 0, 0], [10, 11])
>>> lantern.tensor([[0, 1], [2, 0]]).nonzero().tolist()
[[0, 1], [1, 0]]
"""
from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .factory import C_TYPE_NAMES, checked_value
from .call_by_name import call_op as _op
from .dispatcher import call
from .meta_util import broadcast_shapes, shape_str
from .registry import composite, custom, get, structured
from .derivative import derivative, nondifferentiable
from .indexing_common import _filled, _picked, _sum_to


# ---- masks: masked_fill, masked_select, masked_scatter --------------------------------------------------------

def _check_bool_mask(name, mask):
    if mask.dtype is not dt.bool:
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype "
                           f"{C_TYPE_NAMES[mask.dtype]} (pass mask.bool())")


def _masked_fill_meta(self, mask, value):
    _check_bool_mask("masked_fill_", mask)
    if isinstance(value, TensorImpl) and value.dim():
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    if not isinstance(value, TensorImpl):
        checked_value(value, self.dtype)  # a complex value into a real tensor, 300 into uint8: RuntimeError
    elif value.dtype.is_complex and not self.dtype.is_complex:
        raise RuntimeError(f"value cannot be converted to type {C_TYPE_NAMES[self.dtype]} without overflow")
    return broadcast_shapes(self._size, mask._size), self.dtype


def _masked_fill_impl(xp, out, dtype, self, mask, value):
    out[...] = self
    if not hasattr(value, "dtype"):
        value = checked_value(value, dt.from_numpy_dtype(dtype))  # as stored: -1 into uint8 is 255
    xp.copyto(out, value, where=mask, casting="unsafe")


structured("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", _masked_fill_meta,
           _masked_fill_impl, out=False)
structured("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", _masked_fill_meta,
           _masked_fill_impl, out=False)


def masked_fill(input, mask, value):
    """value (a number or a 0-dim tensor) where mask is True, input elsewhere; mask broadcasts with input."""
    overload = "Tensor" if isinstance(value, TensorImpl) else "Scalar"
    return call(get(f"masked_fill.{overload}"), (input, mask, value))


def masked_fill_(self, mask, value):
    overload = "Tensor" if isinstance(value, TensorImpl) else "Scalar"
    return call(get(f"masked_fill_.{overload}"), (self, mask, value))


for _fn in (masked_fill, masked_fill_):
    composite(_fn.__name__, _fn)


derivative("masked_fill.Scalar", name="MaskedFillBackward0", self="_sum_to(grad.masked_fill(mask, 0), self_meta.size)",
           helpers={"_sum_to": _sum_to})
derivative("masked_fill.Tensor", name="MaskedFillBackward1", self="_sum_to(grad.masked_fill(mask, 0), self_meta.size)",
           value="_picked(grad, grad.masked_fill(mask, 0)).sum()",
           helpers={"_sum_to": _sum_to, "_picked": _picked})


def _masked_select_shape(self, mask):
    if mask.dtype is not dt.bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask (got {mask.dtype}; pass mask.bool())")
    return broadcast_shapes(self._size, mask._size)


def _masked_select(backend, self, mask):
    shape = _masked_select_shape(self, mask)
    if backend.xp is None:
        raise NotImplementedError(
            f"masked_select: the result's size depends on the mask's values, which a meta tensor of shape "
            f"{shape_str(mask._size)} does not have.")
    xp = backend.xp
    picked = xp.broadcast_to(backend.array(self), shape)[xp.broadcast_to(backend.array(mask), shape)]
    out = backend.empty(picked.shape, self.dtype)
    backend.array(out)[...] = picked
    return out


custom("masked_select(Tensor self, Tensor mask) -> Tensor", _masked_select, _masked_select)


def masked_select_backward(grad, meta, mask):
    shape = broadcast_shapes(meta.size, mask._size)
    return _sum_to(_filled(shape, grad, "zeros").masked_scatter(mask, grad), meta.size)


derivative("masked_select", self="masked_select_backward(grad, self_meta, mask)",
           helpers={"masked_select_backward": masked_select_backward})


def _masked_scatter_meta(self, mask, source):
    _check_bool_mask("masked_scatter_", mask)
    if source.dtype is not self.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{self.dtype.legacy} and {source.dtype.legacy}")
    return broadcast_shapes(self._size, mask._size), self.dtype


def _masked_scatter_impl(xp, out, dtype, self, mask, source):
    mask = xp.broadcast_to(mask, out.shape)
    count = int(xp.count_nonzero(mask))
    if count > source.size:
        raise RuntimeError(f"Number of elements of source < number of ones in mask (masked_scatter: source has "
                           f"{source.size} elements, the mask {count} ones)")
    out[...] = self
    out[mask] = source.reshape(-1)[:count]


structured("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", _masked_scatter_meta,
           _masked_scatter_impl, out=False)


def masked_scatter_backward(grad, mask, sizes):
    """source's gradient: grad at the mask's places, in order, then zeros for the source elements not used."""
    picked = grad.masked_select(mask)
    numel = 1
    for n in sizes:
        numel *= n
    if picked.numel() < numel:
        picked = _op("cat", [picked, _filled((numel - picked.numel(),), grad, "zeros")], 0)
    return picked.view(sizes)


derivative("masked_scatter", self="_sum_to(grad.masked_fill(mask, 0), self_meta.size)",
           source="masked_scatter_backward(grad, mask, source_meta.size)",
           helpers={"_sum_to": _sum_to, "masked_scatter_backward": masked_scatter_backward})


# ---- nonzero, argwhere: data-dependent sizes ---------------------------------------------------------------

def _nonzero(backend, self):
    if backend.xp is None:
        raise NotImplementedError(
            f"nonzero: the result's size depends on the values of the input (shape {shape_str(self._size)}), "
            "which a meta tensor does not have.")
    xp = backend.xp
    a = backend.array(self)
    if a.ndim == 0:  # one row with no columns when the value is nonzero
        count = int(a != 0)
        return backend.empty_strided((count, 0), (1, count), dt.int64)
    columns = xp.nonzero(a)
    count = len(columns[0])
    out = backend.empty_strided((count, a.ndim), (1, count), dt.int64)  # column-major, as ATen's
    if count:
        backend.array(out)[...] = xp.stack(columns, axis=1)
    return out


custom("nonzero.default(Tensor self) -> Tensor", _nonzero, _nonzero)


def nonzero(input, *, out=None, as_tuple=False):
    """The indices of the nonzero elements: an (n, input.dim()) tensor, or with as_tuple one 1-D tensor per dim
    (NumPy's nonzero; a 0-dim input counts as 1-D)."""
    if out is not None:
        if out.dtype is not dt.int64:
            raise RuntimeError(f"nonzero: Expected out tensor to have scalar type Long but got scalar type"
                               f"{out.dtype.legacy}")
        result = call(get("nonzero.default"), (input,))
        out._resize(result._size[::-1])  # laid out as nonzero's own result: (ndim, n) transposed
        out.set_(out.untyped_storage(), out.storage_offset(), result._size, out.stride()[::-1])
        return out.copy_(result)
    if not as_tuple:
        return call(get("nonzero.default"), (input,))
    if input.dim() == 0:
        input = input.reshape(1)
    return call(get("nonzero.default"), (input,)).unbind(1)


def argwhere(input):
    """input.nonzero(): the indices of the nonzero elements, one row each."""
    return call(get("nonzero.default"), (input,))


for _fn in (nonzero, argwhere):
    composite(_fn.__name__, _fn)


nondifferentiable("nonzero.default")


def _nonzero_static(backend, self, size, fill_value=-1):
    """nonzero with a fixed number of rows: the first `size` indices of nonzero elements, padded with fill_value
    rows when there are fewer (row-major; a 0-dim input has no columns). Its shape does not depend on the values,
    so a meta tensor runs it too."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer (got size={size} for an input "
                           f"of shape {shape_str(self._size)})")
    out = backend.empty((size, self.dim()), dt.int64)
    if backend.xp is not None and out.numel():
        found = backend.array(call(get("nonzero.default"), (self,)))[:size]
        rows = backend.array(out)
        rows[...] = fill_value
        rows[:len(found)] = found
    return out


custom("nonzero_static(Tensor self, *, int size, int fill_value=-1) -> Tensor", _nonzero_static, _nonzero_static)
nondifferentiable("nonzero_static")
