"""One index entry per slice along a dim: index_select, index_add, index_copy, index_fill. Each op's record,
kernel and derivative sit together.

>>> x = lantern.arange(6.).view(2, 3)
>>> x.index_select(1, lantern.tensor([2, 0])).tolist()
[[2.0, 0.0], [5.0, 3.0]]
>>> lantern.zeros(3).index_add(0, lantern.tensor([0, 0, 2]), lantern.ones(3)).tolist()
[2.0, 0.0, 1.0]
>>> x.index_fill(1, lantern.tensor([1]), -1.).tolist()
[[0.0, -1.0, 2.0], [3.0, -1.0, 5.0]]
"""
from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .meta_util import shape_str, wrap_dim
from .registry import composite, get, structured
from .derivative import derivative
from .indexing_common import _at_least_1d, _filled, _picked


# ---- index_select / index_add / index_copy / index_fill: whole slices along dim, one per index entry -------------

def _check_index_vector(name, index):
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector (got index of shape {shape_str(index._size)})")
    if index.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index but got: {index.dtype.legacy}")


def _index_select_meta(self, dim, index):
    d = wrap_dim(dim, self.dim())
    _check_index_vector("index_select", index)
    if self.dim() == 0:
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} "
                               "value(s) (a 0-d tensor has one element: index it with [0])")
        return (), self.dtype
    if index.numel() and self.dim() > 1 and self._size[d] == 0:
        raise RuntimeError(f"index_select(): self indexing axis dim should be positive (dimension {d} of "
                           f"{shape_str(self._size)} is empty, so no index can select from it)")
    return self._size[:d] + (index.numel(),) + self._size[d + 1:], self.dtype


def _check_slice_indices(name, index, n, d, error=IndexError, lowest=0):
    bad = (index < lowest) | (index >= n)
    if bad.any():
        raise error(f"{name}(): index {int(index[bad].flat[0])} is out of bounds for dimension {d} with size {n} "
                    "(index out of range in self)")


def _index_select_range_error(self, d):
    """PyTorch's class for an index out of range: its CPU kernels for dim 1 and for empty inputs raise
    RuntimeError ("INDICES element is out of DATA bounds"), the others IndexError."""
    return RuntimeError if self.ndim > 1 and (d == 1 or self.size == 0) else IndexError


def _index_select_impl(xp, out, dtype, self, dim, index):
    self, out, index = _at_least_1d(self), _at_least_1d(out), index.reshape(-1)
    d = dim % self.ndim
    _check_slice_indices("index_select", index, self.shape[d], d, _index_select_range_error(self, d))
    out[...] = xp.take(self, index, axis=d)


structured("index_select(Tensor self, int dim, Tensor index) -> Tensor", _index_select_meta, _index_select_impl,
           inplace=False, out=False, exact_out_dtype=True)  # index_select.out: lantern.ops.out_overlap


def index_select_backward(grad, sizes, dim, index):
    if not sizes:
        return grad
    return _filled(sizes, grad, "zeros").index_add(dim, index, grad)


derivative("index_select", self="index_select_backward(grad, self_meta.size, dim, index)",
           helpers={"index_select_backward": index_select_backward})


def _index_func_meta(name):
    """index_add/index_copy: source's slices along dim go to self's slices named by index."""
    def meta(self, dim, index, source, alpha=1):
        d = wrap_dim(dim, self.dim())
        _check_index_vector(f"{name}_", index)
        if name == "index_copy" and index.dtype is not dt.int64:
            raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {index.dtype.legacy}")
        if source.dtype is not self.dtype:
            raise RuntimeError(f"{name}_(): self and source expected to have the same dtype, but got (self) "
                               f"{self.dtype.legacy} and (source) {source.dtype.legacy} (cast source with "
                               f".to({self.dtype}))")
        rows = source._size[d] if source.dim() else 1
        if index.numel() != rows:
            raise (IndexError if name == "index_copy" else RuntimeError)(
                f"{name}_(): Number of indices ({index.numel()}) should be equal to source.size(dim) ({rows})")
        if source.dim() and self.dim() and (source.dim() != self.dim() or any(
                a != b for i, (a, b) in enumerate(zip(self._size, source._size)) if i != d)):
            raise RuntimeError(f"{name}_(): Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: {shape_str(self._size[:d] + self._size[d + 1:])} at dimension {d} and "
                               f"source slice shape: {shape_str(source._size[:d] + source._size[d + 1:])} at "
                               f"dimension {d}.")
        return self._size, self.dtype
    return meta


def _slices_key(name, out, dim, index, error):
    """(out as at least 1-D, the NumPy key of the slices `index` names along dim)."""
    out = _at_least_1d(out)
    d = dim % out.ndim
    index = index.reshape(-1)
    _check_slice_indices(name, index, out.shape[d], d, error)
    return out, (slice(None),) * d + (index,)


def _index_add_impl(xp, out, dtype, self, dim, index, source, alpha=1):
    out[...] = self
    if source.size == 0 or out.size == 0:  # nothing to add to: PyTorch's kernel never reads the index
        return
    # PyTorch's kernels raise IndexError for an index out of range along a 1-D self or a middle dim, RuntimeError
    # along the first or last dim of more
    middle = out.ndim <= 1 or 0 < dim % out.ndim < out.ndim - 1
    target, key = _slices_key("index_add_", out, dim, index, IndexError if middle else RuntimeError)
    if index.size:
        values = source.reshape(target[key].shape)
        xp.add.at(target, key, values if alpha == 1 else values * alpha)


def _index_copy_impl(xp, out, dtype, self, dim, index, source):
    out[...] = self
    target, key = _slices_key("index_copy_", out, dim, index, IndexError)
    if index.size:
        target[key] = source.reshape(target[key].shape)


structured("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
           _index_func_meta("index_add"), _index_add_impl, exact_out_dtype=True)
structured("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor", _index_func_meta("index_copy"),
           _index_copy_impl, exact_out_dtype=True)


derivative("index_add", self="grad", source="(grad.index_select(dim, index) * alpha).reshape(source_meta.size)")
derivative("index_copy", self="grad.index_fill(dim, index, 0)",
           source="grad.index_select(dim, index).reshape(source_meta.size)")


def _index_fill_meta(self, dim, index, value):
    wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise RuntimeError(f"Index has to be a vector/scalar (index_fill got an index of shape "
                           f"{shape_str(index._size)})")
    if index.dtype is not dt.int64:
        raise IndexError(f"index_fill_(): Expected dtype int64 for index. (got {index.dtype}; pass index.long())")
    if isinstance(value, TensorImpl) and value.dim():
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    return self._size, self.dtype


def _index_fill_impl(xp, out, dtype, self, dim, index, value):
    out[...] = self
    target = _at_least_1d(out)
    d = dim % target.ndim
    index = index.reshape(-1)
    _check_slice_indices("index_fill_", index, target.shape[d], d, lowest=-target.shape[d])
    target[(slice(None),) * d + (index,)] = value


structured("index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", _index_fill_meta,
           _index_fill_impl, out=False)
structured("index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor", _index_fill_meta,
           _index_fill_impl, out=False)


def index_fill(input, dim, index, value):
    """Fill the slices along dim that index names with value (a number or a 0-dim tensor)."""
    overload = "int_Tensor" if isinstance(value, TensorImpl) else "int_Scalar"
    return call(get(f"index_fill.{overload}"), (input, dim, index, value))


def index_fill_(self, dim, index, value):
    overload = "int_Tensor" if isinstance(value, TensorImpl) else "int_Scalar"
    return call(get(f"index_fill_.{overload}"), (self, dim, index, value))


for _fn in (index_fill, index_fill_):
    composite(_fn.__name__, _fn)


derivative("index_fill.int_Scalar", name="IndexFillBackward0", self="grad.index_fill(dim, index, 0)")
derivative("index_fill.int_Tensor", name="IndexFillBackward1", self="grad.index_fill(dim, index, 0)",
           value="_picked(grad, grad.index_fill(dim, index, 0)).sum()", helpers={"_picked": _picked})
