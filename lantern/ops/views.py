"""View ops: each meta is arithmetic on (sizes, strides, offset); the result shares storage and version counter.

A meta returns (sizes, strides, offset), plus the new dtype for views that reinterpret the bytes (real, view.dtype).

>>> x = lantern.arange(12).view(3, 4)
>>> x.t().stride(), x[:, 1].storage_offset(), x.unsqueeze(2).stride()
((1, 4), 1, (4, 1, 1))
"""
from ..core import dtype as dt
from ..core.tensor_impl import contiguous_strides
from .meta_util import shape_str, wrap_dim, wrap_dims
from .registry import view
from .derivative import derivative, nondifferentiable
from .derivative_helpers import narrow_backward_on_arrays, slice_backward_on_arrays
from .derivative_specialisation import on_float_arrays, specialise_derivative


def infer_size(shape, numel, op="view"):
    """Resolve one -1 in `shape` so that it holds `numel` elements."""
    shape = list(shape)
    infer = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s}")
        else:
            known *= s
    if infer is not None:
        if known == 0 or numel % known != 0:
            raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size {numel}")
        shape[infer] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def view_strides(old_size, old_stride, new_size):
    """Strides that let `new_size` view memory laid out as (old_size, old_stride), or None (PyTorch computeStride)."""
    if not old_size:
        return tuple(1 for _ in new_size)
    numel = 1
    for s in old_size:
        numel *= s
    if numel == 0:
        if tuple(old_size) == tuple(new_size):
            return tuple(old_stride)
        return contiguous_strides(new_size)
    new_stride = [0] * len(new_size)
    view_d = len(new_size) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_size) - 1, -1, -1):
        tensor_numel *= old_size[tensor_d]
        if tensor_d == 0 or (old_size[tensor_d - 1] != 1 and
                             old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_size[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_size[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def _view_meta(self, size):
    size = infer_size(size, self.numel())
    stride = view_strides(self._size, self._stride, size)
    if stride is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
            "two contiguous subspaces). Use .reshape(...) instead. "
            f"(view of a tensor with shape {shape_str(self._size)} and strides {list(self._stride)} "
            f"as {shape_str(size)})")
    return size, stride, self._offset


view("view(Tensor(a) self, int[] size) -> Tensor(a)", _view_meta)
# reshape's copy path: a view of a fresh clone that no one else sees, so PyTorch treats it as a new tensor (no
# _base, not recorded as a view: UnsafeViewBackward0)
view("_unsafe_view(Tensor self, int[] size) -> Tensor", _view_meta, sets_base=False)


def _view_dtype_meta(self, dtype):
    old, new = self.dtype.itemsize, dtype.itemsize
    if old == new:
        return self._size, self._stride, self._offset, dtype
    if not self._size:
        raise RuntimeError("self.dim() cannot be 0 to view " + f"{self.dtype.legacy} as {dtype.legacy} "
                           "(different element sizes)")
    if self._stride[-1] != 1:
        raise RuntimeError("self.stride(-1) must be 1 to view " + f"{self.dtype.legacy} as {dtype.legacy} "
                           "(different element sizes)")
    if new > old:
        ratio = new // old
        if self._size[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view {self.dtype.legacy} as "
                               f"{dtype.legacy} (different element sizes), but got {self._size[-1]}")
        if self._offset % ratio:
            raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} to view {self.dtype.legacy} "
                               f"as {dtype.legacy} (different element sizes), but got {self._offset}")
        for s in self._stride[:-1]:
            if s % ratio:
                raise RuntimeError(f"self.stride(i) must be divisible by {ratio} for every i < dim-1 to view "
                                   f"{self.dtype.legacy} as {dtype.legacy} (different element sizes)")
        size = self._size[:-1] + (self._size[-1] // ratio,)
        stride = tuple(s // ratio for s in self._stride[:-1]) + (1,)
        return size, stride, self._offset // ratio, dtype
    ratio = old // new
    size = self._size[:-1] + (self._size[-1] * ratio,)
    stride = tuple(s * ratio for s in self._stride[:-1]) + (1,)
    return size, stride, self._offset * ratio, dtype


view("view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)", _view_dtype_meta, sets_base=False)


def _as_strided_meta(self, size, stride, storage_offset=None):
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape (as_strided: size {shape_str(size)}, "
                           f"stride {list(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    offset = self._offset if storage_offset is None else storage_offset
    if all(size):
        need = (offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1) * self.dtype.itemsize
        have = self._storage.nbytes()
        if need > have:
            raise RuntimeError(f"setStorage: sizes {shape_str(size)}, strides {list(stride)}, storage offset "
                               f"{offset}, and itemsize {self.dtype.itemsize} requiring a storage size of {need} "
                               f"are out of bounds for storage of size {have}")
    return size, stride, offset


view("as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)", _as_strided_meta)


def _t_meta(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return self._size[::-1], self._stride[::-1], self._offset


view("t(Tensor(a) self) -> Tensor(a)", _t_meta)


def _transpose_meta(self, dim0, dim1):
    n = self.dim()
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    size, stride = list(self._size), list(self._stride)
    if n:
        size[d0], size[d1] = size[d1], size[d0]
        stride[d0], stride[d1] = stride[d1], stride[d0]
    return tuple(size), tuple(stride), self._offset


view("transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", _transpose_meta)


def _permute_meta(self, dims):
    n = self.dim()
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}".replace("(sparse_coo)", ""))
    dims = wrap_dims(dims, n)
    return tuple(self._size[d] for d in dims), tuple(self._stride[d] for d in dims), self._offset


view("permute(Tensor(a) self, int[] dims) -> Tensor(a)", _permute_meta)


def _expand_meta(self, size):
    size = tuple(size)
    n = self.dim()
    if len(size) < n:
        raise RuntimeError(f"expand(torch.{self.dtype.legacy}Tensor{{{shape_str(self._size)}}}, "
                           f"size={shape_str(size)}): the number of sizes provided ({len(size)}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({n})")
    lead = len(size) - n
    out_size, out_stride = [], []
    for i, s in enumerate(size):
        j = i - lead
        if j < 0:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            out_size.append(s)
            out_stride.append(0)
            continue
        have = self._size[j]
        if s == -1:
            s = have
        if have == s:
            out_size.append(s)
            out_stride.append(self._stride[j])
        elif have == 1 and s >= 0:
            out_size.append(s)
            out_stride.append(0)
        elif have == 1:  # PyTorch makes a tensor of negative size here and fails computing its numel
            raise RuntimeError(f"The expanded size of the tensor ({s}) must be non-negative, or -1 to keep the "
                               f"existing size, at dimension {i}.  Target sizes: {shape_str(size)}.  Tensor sizes: "
                               f"{shape_str(self._size)}")
        else:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({have}) at "
                               f"non-singleton dimension {i}.  Target sizes: {shape_str(size)}.  Tensor sizes: "
                               f"{shape_str(self._size)}")
    for i in reversed(range(lead)):  # a new dim of size 1 strides over the dims after it, as in PyTorch
        if out_size[i] == 1:
            out_stride[i] = out_size[i + 1] * out_stride[i + 1] if i + 1 < len(size) else 0
    return tuple(out_size), tuple(out_stride), self._offset


view("expand(Tensor(a) self, int[] size) -> Tensor(a)", _expand_meta)


def _squeeze_meta(self, dim=None):
    n = self.dim()
    dims = range(n) if dim is None else wrap_dims(dim, n)
    keep = [i for i in range(n) if not (i in dims and self._size[i] == 1)]
    return tuple(self._size[i] for i in keep), tuple(self._stride[i] for i in keep), self._offset


view("squeeze(Tensor(a) self, int[]? dim=None) -> Tensor(a)", _squeeze_meta)


def _unsqueeze_meta(self, dim):
    n = self.dim()
    d = wrap_dim(dim, n + 1)
    new_stride = self._size[d] * self._stride[d] if d < n else 1
    return (self._size[:d] + (1,) + self._size[d:], self._stride[:d] + (new_stride,) + self._stride[d:],
                    self._offset)


view("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", _unsqueeze_meta)


def _select_meta(self, dim, index):
    n = self.dim()
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    size = self._size[d]
    if index < -size or index >= size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    if index < 0:
        index += size
    return (self._size[:d] + self._size[d + 1:], self._stride[:d] + self._stride[d + 1:],
                    self._offset + index * self._stride[d])


view("select(Tensor(a) self, int dim, int index) -> Tensor(a)", _select_meta)


def _slice_meta(self, dim=0, start=None, end=None, step=1):
    n = self.dim()
    if n == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    size = self._size[d]
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    length = (end - start + step - 1) // step
    return (self._size[:d] + (length,) + self._size[d + 1:],
                    self._stride[:d] + (self._stride[d] * step,) + self._stride[d + 1:],
                    self._offset + start * self._stride[d])


view("slice(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor(a)", _slice_meta)


def _narrow_meta(self, dim, start, length):
    n = self.dim()
    if n == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:  # before the dim and start are checked, as in PyTorch
        raise RuntimeError(f"narrow(): length must be non-negative (got {length}).")
    d = wrap_dim(dim, n)
    size = self._size[d]
    if hasattr(start, "dim") and (start.dim() or start.dtype.category != dt.INTEGRAL):
        raise RuntimeError(f"start must be an 0-dim integral Tensor. (narrow: got a {start.dtype} tensor of shape "
                           f"{list(start._size)}; pass an int or a 0-dim integer tensor)")
    start = start.__index__()  # a 0-d integer tensor (narrow.Tensor) gives its value: sizes hold ints only
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _slice_meta(self, d, start, start + length, 1)


view("narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)", _narrow_meta)


def _diagonal_meta(self, offset=0, dim1=0, dim2=1):
    n = self.dim()
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    storage_offset = self._offset
    if offset >= 0:
        length = max(min(self._size[d1], self._size[d2] - offset), 0)
        if length:
            storage_offset += offset * self._stride[d2]
    else:
        length = max(min(self._size[d1] + offset, self._size[d2]), 0)
        if length:
            storage_offset -= offset * self._stride[d1]
    keep = [i for i in range(n) if i not in (d1, d2)]
    size = tuple(self._size[i] for i in keep) + (length,)
    stride = tuple(self._stride[i] for i in keep) + (self._stride[d1] + self._stride[d2],)
    return size, stride, storage_offset


view("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", _diagonal_meta)


def _unfold_meta(self, dimension, size, step):
    n = self.dim()
    d = wrap_dim(dimension, n)
    have = self._size[d] if n else 1
    if size > have:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {have} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (have - size) // step + 1
    st = self._stride[d] if n else 1
    if n == 0:
        return (size,), (1,), self._offset
    return (self._size[:d] + (count,) + self._size[d + 1:] + (size,),
                    self._stride[:d] + (st * step,) + self._stride[d + 1:] + (st,), self._offset)


view("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)", _unfold_meta)


def _complex_part_meta(part):
    def meta(self):
        if not self.dtype.is_complex:
            if part == 1:
                raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
            return self._size, self._stride, self._offset
        return self._size, tuple(s * 2 for s in self._stride), self._offset * 2 + part, self.dtype.to_real()
    return meta


view("real(Tensor(a) self) -> Tensor(a)", _complex_part_meta(0))
view("imag(Tensor(a) self) -> Tensor(a)", _complex_part_meta(1))


def _unflatten_meta(self, dim, sizes):
    n = self.dim()
    d = wrap_dim(dim, n)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    sizes = infer_size(sizes, self._size[d])
    new_size = self._size[:d] + sizes + self._size[d + 1:]
    return _view_meta(self, new_size)


view("unflatten(Tensor(a) self, int dim, int[] sizes) -> Tensor(a)", _unflatten_meta)


def _alias_meta(self):
    return self._size, self._stride, self._offset


view("alias(Tensor(a) self) -> Tensor(a)", _alias_meta, method=False)


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

# ---- views ----
derivative("view", self="grad.reshape(self_meta.size)")
derivative("_unsafe_view", name="UnsafeViewBackward0", self="grad.reshape(self_meta.size)")
derivative("t", self="grad.t()")
derivative("transpose", self="grad.transpose(dim0, dim1)")
derivative("permute", self="permute_backward(grad, dims)")
derivative("expand", self="grad.sum_to_size(self_meta.size)")
derivative("squeeze", name=lambda args: "SqueezeBackward0" if args[1] is None else
           "SqueezeBackward1" if isinstance(args[1], int) else "SqueezeBackward2",
           self="grad.reshape(self_meta.size)")
derivative("unsqueeze", self="grad.squeeze(dim)")
derivative("select", self="select_backward(grad, self_meta, dim, index)")
derivative("slice", self="slice_backward(grad, self_meta, dim, start, end, step)")
derivative("narrow", name="SliceBackward0", self="narrow_backward(grad, self_meta, dim, start, length)")
specialise_derivative("slice", {"slice_backward(grad, self_meta, dim, start, end, step)": (
    "slice_backward_on_arrays(grad, self_meta, dim, start, end, step)", "on_float_arrays(grad)")},
    helpers={"slice_backward_on_arrays": slice_backward_on_arrays, "on_float_arrays": on_float_arrays})
specialise_derivative("narrow", {"narrow_backward(grad, self_meta, dim, start, length)": (
    "narrow_backward_on_arrays(grad, self_meta, dim, start, length)", "on_float_arrays(grad)")},
    helpers={"narrow_backward_on_arrays": narrow_backward_on_arrays, "on_float_arrays": on_float_arrays})
derivative("diagonal", self="diagonal_backward(grad, self_meta, offset, dim1, dim2)")
derivative("as_strided", self="as_strided_backward(grad, self_meta, size, stride, storage_offset)")
derivative("unfold", self="unfold_backward(grad, self_meta, dimension, size, step)")
derivative("unflatten", name="ViewBackward0", self="grad.reshape(self_meta.size)")
derivative("alias", self="grad")
derivative("real", self="to_copy_backward(grad, self_meta)")
derivative("imag", self="grad.to(self_meta.dtype) * 1j")
nondifferentiable("view.dtype")
