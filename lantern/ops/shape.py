"""Joining and copying: cat, stack, clone, contiguous, copy_, fill_, zero_, and _to_copy (behind .to()).

>>> lantern.cat([lantern.ones(2), lantern.zeros(1)]).tolist(), lantern.stack([lantern.ones(2)] * 3).shape
([1.0, 1.0, 0.0], lantern.Size([3, 2]))
"""
import math
import numbers

import ml_dtypes
import numpy as np

from ..core import dtype as dt
from ..core.layout import channels_last, channels_last_3d, contiguous_format, preserve_format
from ..core.quantized_dtypes import refuse_quantized_dtype
from ..core.tensor_impl import TensorImpl, contiguous_strides
from .meta_util import (
    PARTIAL, broadcast_shapes, iterator_strides, operands_result_type, overlap_status, shape_str, strides_in_order,
    wrap_dim,
)
from .registry import composite, custom, structured
from .derivative import derivative
from .dispatcher import backend_for_device
from ..core import user_warnings


def _tensor_list(name, tensors, empty_error):
    if isinstance(tensors, TensorImpl) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise empty_error(f"{name}(): expected a non-empty list of Tensors")
    for t in tensors:
        if not isinstance(t, TensorImpl):
            raise TypeError(f"expected Tensor as element of the 'tensors' list in {name}(), but got "
                            f"{type(t).__name__}")


def _cat_meta(tensors, dim=0):
    _tensor_list("torch.cat", tensors, ValueError)
    for i, t in enumerate(tensors):  # every tensor, before the dim is checked: PyTorch's order
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated (use stack, or "
                               "unsqueeze it first)")
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
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.dim()} and {t.dim()} (cat: "
                               f"tensor {i} of shape {list(t._size)} beside one of shape {list(ref._size)})")
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


structured("cat(Tensor[] tensors, int dim=0) -> Tensor", _cat_meta, _cat_impl, inplace=False,
           out=False)  # cat.out: lantern.ops.out_overlap


def _stack_meta(tensors, dim=0):
    _tensor_list("stack", tensors, RuntimeError)
    ref = tensors[0]
    d = wrap_dim(dim, ref.dim() + 1)  # the dim first, then the sizes: PyTorch's order
    for i, t in enumerate(tensors):
        if t._size != ref._size:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {shape_str(ref._size)} at "
                               f"entry 0 and {shape_str(t._size)} at entry {i}")
    return ref._size[:d] + (len(tensors),) + ref._size[d:], operands_result_type(list(tensors))


def _stack_impl(xp, out, dtype, arrays, dim=0):
    xp.stack(arrays, axis=dim % (arrays[0].ndim + 1), out=out, casting="unsafe")


structured("stack(Tensor[] tensors, int dim=0) -> Tensor", _stack_meta, _stack_impl, inplace=False)


# ---- copies ----------------------------------------------------------------------------------------------------

def _preserved_strides(t, memory_format):
    """The strides clone/.to() give: with preserve_format, the input's when it is dense, else dense strides in the
    input's stride order; or those of the memory format asked for."""
    if memory_format is None or memory_format is preserve_format:
        return t._stride if t.is_non_overlapping_and_dense() else iterator_strides(t._size, [(t._size, t._stride)])
    if memory_format is contiguous_format:
        return contiguous_strides(t._size)
    rank = {channels_last: 4, channels_last_3d: 5}.get(memory_format)
    if rank is None:
        raise RuntimeError(f"unsupported memory_format {memory_format}")
    if t.dim() != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {memory_format.name} format")
    return channels_last_strides(t._size)


def channels_last_strides(size):
    """Strides with the channel dim fastest, then the spatial dims, then the batch: (N, C, H, W) -> (HWC, 1, WC, C)."""
    return strides_in_order(size, (1,) + tuple(range(len(size) - 1, 1, -1)) + (0,))  # fastest first: C, W, H, (D,) N


def empty_like_strided(backend, t, dtype, memory_format=preserve_format):
    return backend.empty_strided(t._size, _preserved_strides(t, memory_format), dtype)


def _clone_kernel(backend, self, memory_format=preserve_format):
    out = empty_like_strided(backend, self, self.dtype, memory_format)
    backend.array(out)[...] = backend.array(self)
    return out


def _clone_meta(backend, self, memory_format=preserve_format):
    return empty_like_strided(backend, self, self.dtype, memory_format)


custom("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", _clone_kernel, _clone_meta)


def _check_copy(self, src):
    """copy_ broadcasts src to self's shape, and refuses to write where src is being read (partial overlap)."""
    shape = broadcast_shapes(self._size, src._size)
    if shape != self._size:
        raise RuntimeError(f"output with shape {shape_str(self._size)} doesn't match the broadcast shape "
                           f"{shape_str(shape)} (copy_ from shape {shape_str(src._size)})")
    from ..backends.base import internal_overlap_check
    internal_overlap_check(self, "copy_")
    if self._storage is src._storage and overlap_status(self, src) == PARTIAL:  # only a shared storage overlaps
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           f"operation. (copy_ of shape {shape_str(self._size)} from an overlapping view)")


def copy_values(xp, dst, src):
    """dst[...] = src with PyTorch's casts: complex into bool is "nonzero" (either part), complex into another real
    dtype keeps the real part, with PyTorch's UserWarning."""
    if dt.holds_complex(src.dtype) and dst.dtype == bool:
        xp.copyto(dst, src != 0)
        return
    if dt.holds_complex(src.dtype) and not dt.holds_complex(dst.dtype):
        user_warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=5)
        src = src.real if src.dtype.kind == "c" else ml_dtypes.real(src)  # complex32's .real is itself
    xp.copyto(dst, src, casting="unsafe")


def _copy_kernel(backend, self, src, non_blocking=False):
    if not isinstance(src, TensorImpl):  # a Python number: PyTorch's argument parser makes it a 0-dim tensor
        return _fill_kernel(backend, self, src)
    _check_copy(self, src)
    dst = backend.array(self)
    if src.device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    s = src._backend.array(src)
    if src.device != self.device:  # between devices: through the host
        s = backend.from_host(src._backend.to_host(s))
    copy_values(backend.xp, dst, s)
    self._bump_version()
    return self


def _copy_meta(backend, self, src, non_blocking=False):
    if not isinstance(src, TensorImpl):
        return _fill_kernel(backend, self, src)
    _check_copy(self, src)
    self._bump_version()
    return self


custom("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", _copy_kernel, _copy_meta)


def _fill_kernel(backend, self, value):
    """Fill with a number or a 0-dim tensor. Unlike PyTorch's fill_(number), lantern refuses to write into an
    expanded tensor, as it does for every in-place op (pytorch#4664: no silent writes to shared elements)."""
    from ..backends.base import internal_overlap_check
    internal_overlap_check(self, "fill_")
    if isinstance(value, TensorImpl):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        if value.device.type == "meta" or self.device.type == "meta":
            self._bump_version()
            return self
        value = value.item()
        if isinstance(value, complex) and not self.dtype.is_complex:
            value = value.real  # a complex tensor value fills a real tensor with its real part, as in PyTorch
    backend.fill(self, scalar_in(value, self.dtype, "fill_"))
    self._bump_version()
    return self


def _zero_kernel(backend, self):
    from ..backends.base import internal_overlap_check
    internal_overlap_check(self, "zero_")
    backend.fill(self, 0)
    self._bump_version()
    return self


def scalar_in(value, dtype, op_name):
    """A Python number converted to dtype the way PyTorch's checked_convert does, or RuntimeError on overflow.

    Floats truncate into integers; a negative int (not a float) wraps into an unsigned type down to -max;
    out-of-range values, nan/inf into integers and complex numbers with an imaginary part into real types are
    refused.

    >>> scalar_in(-1, dt.uint8, "fill_"), scalar_in(1.7, dt.int64, "fill_")
    (255, 1)
    """
    if not isinstance(value, numbers.Number):
        raise TypeError(f"{op_name}(): argument 'value' must be Number, not {type(value).__name__}")
    if dtype is dt.bool or dtype.is_complex:
        return bool(value) if dtype is dt.bool else value
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        if value.imag != 0:
            raise _overflow(value, dtype, op_name)
        value = value.real
    if dtype.category == dt.INTEGRAL:
        low, high = _INT_RANGE[dtype]
        if isinstance(value, numbers.Integral):
            low = -high if low == 0 else low  # -1 fills a uint8 tensor with 255
        if value != value or not low <= value <= high:
            raise _overflow(value, dtype, op_name)
        return int(value) % (1 << 8 * dtype.itemsize) if dtype.np.kind == "u" else int(value)  # -1 wraps to 255
    if value == value and abs(value) != math.inf and abs(value) > _FLOAT_MAX[dtype]:
        raise _overflow(value, dtype, op_name)
    return value


_INT_RANGE = {d: (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max)) for d in dt.ALL if d.category == dt.INTEGRAL}
_FLOAT_MAX = {d: dt.finfo(d).max for d in dt.ALL if d.category == dt.FLOATING}


def _overflow(value, dtype, op_name):
    return RuntimeError(f"value cannot be converted to type {dtype.name} without overflow ({op_name} of {value!r} "
                        f"into a {dtype.name} tensor)")


custom("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)", _fill_kernel, _fill_kernel)
custom("zero_(Tensor(a!) self) -> Tensor(a!)", _zero_kernel, _zero_kernel)


def fill(input, value):
    """A new tensor like input (dtype, shape, memory format) filled with value, a number or a 0-dim tensor: fill_'s
    functional form. input gets a zero gradient and a value tensor the gradient's sum, as in PyTorch.

    >>> lantern.fill(lantern.zeros(2, dtype=lantern.int64), 2.7).tolist()
    [2, 2]
    """
    result = input.clone().fill_(value)
    if isinstance(value, TensorImpl) and value.requires_grad:
        result = result + (value - value.detach()).to(result.dtype)  # adds zero; value's gradient flows through it
    return result


def resize_as_(input, the_template, *, memory_format=None):
    """input resized in place to the_template's shape: input.resize_as_(the_template)."""
    return input.resize_as_(the_template, memory_format=memory_format)


composite("fill", fill, method=False)
composite("resize_as_", resize_as_, method=False)  # the method is Tensor's own


def _to_copy_kernel(backend, self, dtype=None, device=None, memory_format=preserve_format):
    target = backend if device is None else backend_for_device(device)
    dtype = dtype or self.dtype
    refuse_quantized_dtype(dtype)
    out = empty_like_strided(target, self, dtype, memory_format)
    if target.device.type == "meta":
        return out
    if self.device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    src = backend.array(self)
    copy_values(target.xp, target.array(out), target.from_host(backend.to_host(src)) if target is not backend else src)
    return out


custom("_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None, "
       "MemoryFormat? memory_format=None) -> Tensor", _to_copy_kernel, _to_copy_kernel)


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

# ---- joining and copying ----
derivative("cat", tensors="cat_backward(grad, tensors_meta, dim)")  # PyTorch saves the sizes, not the inputs
derivative("stack", tensors="list(grad.unbind(dim))")
derivative("clone", self="grad")
derivative("_to_copy", name="ToCopyBackward0", self="to_copy_backward(grad, self_meta)")
derivative("copy_", name="CopyBackwards", self="zeros_like(grad)", src="to_copy_backward(grad, src_meta)")
derivative("fill_", name="FillBackward2", self="zeros_like(grad)")
derivative("zero_", self="zeros_like(grad)")
