"""Joining and copying: cat, stack, clone, contiguous, copy_, fill_, zero_, and _to_copy (behind .to()).

>>> lantern.cat([lantern.ones(2), lantern.zeros(1)]).tolist(), lantern.stack([lantern.ones(2)] * 3).shape
([1.0, 1.0, 0.0], lantern.Size([3, 2]))
"""
from ..core import dtype as dt
from ..core.layout import contiguous_format, preserve_format
from ..core.tensor_impl import TensorImpl, contiguous_strides
from .meta_util import operands_result_type, shape_str, wrap_dim
from .registry import custom, structured


def _tensor_list(name, tensors):
    if isinstance(tensors, TensorImpl) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{name}(): expected a non-empty list of Tensors")
    for t in tensors:
        if not isinstance(t, TensorImpl):
            raise TypeError(f"expected Tensor as element of the 'tensors' list in {name}(), but got "
                            f"{type(t).__name__}")


def _cat_meta(tensors, dim=0):
    _tensor_list("torch.cat", tensors)
    dtype = operands_result_type([t for t in tensors])
    shaped = [t for t in tensors if t._size != (0,)]  # legacy: 1-D empty tensors are skipped
    if not shaped:
        return (0,), dtype
    ref = shaped[0]
    if ref.dim() == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(dim, ref.dim())
    total = 0
    for i, t in enumerate(tensors):
        if t._size == (0,):
            continue
        if t.dim() != ref.dim():
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.dim()} and {t.dim()}")
        for k in range(ref.dim()):
            if k != d and t._size[k] != ref._size[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref._size[k]} but got size {t._size[k]} for tensor number {i} in the list.")
        total += t._size[d]
    return ref._size[:d] + (total,) + ref._size[d + 1:], dtype


def _cat_impl(xp, out, dtype, arrays, dim=0):
    arrays = [a for a in arrays if a.shape != (0,)]
    if arrays:
        xp.concatenate(arrays, axis=dim % arrays[0].ndim, out=out, casting="unsafe")


structured("cat(Tensor[] tensors, int dim=0) -> Tensor", _cat_meta, _cat_impl, inplace=False)


def _stack_meta(tensors, dim=0):
    _tensor_list("stack", tensors)
    ref = tensors[0]
    for i, t in enumerate(tensors):
        if t._size != ref._size:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {shape_str(ref._size)} at "
                               f"entry 0 and {shape_str(t._size)} at entry {i}")
    d = wrap_dim(dim, ref.dim() + 1)
    return ref._size[:d] + (len(tensors),) + ref._size[d:], operands_result_type(list(tensors))


def _stack_impl(xp, out, dtype, arrays, dim=0):
    xp.stack(arrays, axis=dim % (arrays[0].ndim + 1), out=out, casting="unsafe")


structured("stack(Tensor[] tensors, int dim=0) -> Tensor", _stack_meta, _stack_impl, inplace=False)


# ---- copies ----------------------------------------------------------------------------------------------------

def _preserved_strides(t, memory_format):
    """The strides clone/.to() give: the input's when it is dense (preserve_format), else contiguous."""
    if memory_format is None:
        memory_format = preserve_format
    if memory_format is preserve_format and t.is_non_overlapping_and_dense():
        return t._stride
    if memory_format in (None, preserve_format, contiguous_format):
        return contiguous_strides(t._size)
    from ..core.layout import channels_last
    if memory_format is channels_last:
        if t.dim() != 4:
            raise RuntimeError("required rank 4 tensor to use channels_last format")
        n, c, h, w = t._size
        return (h * w * c, 1, w * c, c)
    raise RuntimeError(f"unsupported memory_format {memory_format}")


def empty_like_strided(backend, t, dtype, memory_format=preserve_format):
    return backend.empty_strided(t._size, _preserved_strides(t, memory_format), dtype)


def _clone_kernel(backend, self, memory_format=preserve_format):
    out = empty_like_strided(backend, self, self.dtype, memory_format)
    backend.array(out)[...] = backend.array(self)
    return out


def _clone_meta(backend, self, memory_format=preserve_format):
    return empty_like_strided(backend, self, self.dtype, memory_format)


custom("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", _clone_kernel, _clone_meta)


def _check_copy_shapes(self, src):
    from .meta_util import broadcast_shapes
    try:
        shape = broadcast_shapes(self._size, src._size)
    except RuntimeError:
        shape = None
    if shape != self._size:
        raise RuntimeError(f"The size of tensor a ({self._size[-1] if self._size else 1}) must match the size of "
                           f"tensor b ({src._size[-1] if src._size else 1}) at non-singleton dimension "
                           f"{max(self.dim() - 1, 0)} (copy_ from shape {shape_str(src._size)} into "
                           f"{shape_str(self._size)})")


def _copy_kernel(backend, self, src, non_blocking=False):
    from .meta_util import type_name
    if not isinstance(src, TensorImpl):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type_name(src)}")
    _check_copy_shapes(self, src)
    from ..backends.base import internal_overlap_check
    internal_overlap_check(self, "copy_")
    dst = backend.array(self)
    if src.device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    s = src._backend.array(src)
    if src.device != self.device:
        s = backend.from_host(s) if hasattr(backend, "from_host") else s
    backend.xp.copyto(dst, s, casting="unsafe")
    self._vc[0] += 1
    return self


def _copy_meta(backend, self, src, non_blocking=False):
    _check_copy_shapes(self, src)
    self._vc[0] += 1
    return self


custom("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", _copy_kernel, _copy_meta)


def _fill_kernel(backend, self, value):
    if isinstance(value, TensorImpl):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        value = value.item()
    from ..backends.base import internal_overlap_check
    internal_overlap_check(self, "fill_")
    if self.dtype.category < dt.FLOATING and isinstance(value, float) and value != value:
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    backend.fill(self, value)
    self._vc[0] += 1
    return self


def _zero_kernel(backend, self):
    return _fill_kernel(backend, self, 0)


custom("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)", _fill_kernel, _fill_kernel)
custom("zero_(Tensor(a!) self) -> Tensor(a!)", _zero_kernel, _zero_kernel)


def _to_copy_kernel(backend, self, dtype=None, device=None, memory_format=preserve_format):
    from .dispatcher import backend_for_device
    target = backend if device is None else backend_for_device(device)
    dtype = dtype or self.dtype
    out = empty_like_strided(target, self, dtype, memory_format)
    if target.device.type == "meta":
        return out
    if self.device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    src = backend.array(self)
    target.xp.copyto(target.array(out), target.from_host(src) if target is not backend else src, casting="unsafe")
    return out


custom("_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None, "
       "MemoryFormat? memory_format=None) -> Tensor", _to_copy_kernel, _to_copy_kernel)
