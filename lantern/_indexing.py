"""`x[index]` and `x[index] = value`, as PyTorch's python_variable_indexing.cpp and ATen's TensorIndexing.h do them.

The index is walked left to right. Ints, slices, None and `...` become one dispatched view op each (select, slice,
unsqueeze; a bare `...` is alias), so the result shares storage and autograd records SelectBackward0 /
SliceBackward0. Index tensors, lists and Python bools are collected instead, and the walk ends with one
`index.Tensor` call (a copy) or, on assignment, one `index_put_` (in place). A basic assignment copies into the
view: `copy_` for a tensor value, `fill_` for a scalar.

>>> x = lantern.arange(48).view(6, 8)
>>> y = x[1:5:2, 1:4]
>>> y.stride(), y.storage_offset(), y.data_ptr() - x.data_ptr()
((16, 1), 9, 72)
>>> x[[0, 5], -1].tolist()
[7, 47]
>>> x[x > 45] = 0
>>> x[5].tolist(), x._version
([40, 41, 42, 43, 44, 45, 0, 0], 1)
"""
import collections.abc
import operator

import numpy as np

from ._construct import tensor
from .core import dtype as dt
from .core import tensor_impl
from .core.reference import mode, specialisation
from .core.state import tls
from .core.tensor_impl import TensorImpl
from .backends.cpu import CPUBackend
from .ops.dispatcher import call
from .ops.meta_util import type_name
from .ops.registry import get
from .ops.shape import scalar_in
from .core import user_warnings

_SELECT, _SLICE, _UNSQUEEZE, _ALIAS = get("select"), get("slice"), get("unsqueeze"), get("alias")
_VIEW, _EXPAND, _COPY_, _FILL_ = get("view"), get("expand"), get("copy_"), get("fill_")
_INDEX, _INDEX_PUT_ = get("index.Tensor"), get("index_put_")
_MASK_DTYPES = (dt.bool, dt.uint8)


def getitem(t, index):
    """t[index]: a view for basic indices, a new tensor once an index tensor, list or bool is involved."""
    if _is_int(index):
        return _select(t, 0, index, 0)
    if isinstance(index, slice):
        return _slice(t, 0, index, skip_full=False)
    if index is None:
        return call(_UNSQUEEZE, (t, 0))
    if index is Ellipsis:
        return call(_ALIAS, (t,))
    if index is True or index is False:
        t = call(_UNSQUEEZE, (t, 0))
        return call(_INDEX, (t, [_bool_index(index, t)]))
    walk = _walk(t, index)
    if not walk.indices:
        return call(_ALIAS, (t,)) if walk.result is t else walk.result
    return call(_INDEX, (walk.result, walk.device_indices()))


def setitem(t, index, value):
    """t[index] = value, in place whatever the index: copy_/fill_ into a view, or index_put_. A Python number is
    converted to t's dtype first and fills a view as it is; only index_put_ needs it as a 0-dim tensor."""
    value = _checked_value(t, value)
    if _array_write_applies(t, index, value):
        return setitem_on_arrays(t, index, value)
    if index is False:
        return
    if index is Ellipsis:
        return _copy_to(t, value)
    if index is None or index is True:
        return _copy_to(call(_UNSQUEEZE, (t, 0)), value)
    if _is_int(index):
        return _copy_to(_select(t, 0, index, 0), value)
    if isinstance(index, slice):
        return _copy_to(_slice(t, 0, index, skip_full=True), value)
    walk = _walk(t, index)
    if not walk.indices:
        return _copy_to(walk.result, value)
    value = _as_tensor(t, value)
    stripped = _strip_leading_ones(value._size)
    if stripped != value._size:
        value = call(_VIEW, (value, stripped))
    call(_INDEX_PUT_, (walk.result, walk.device_indices(), value, False))


@specialisation(replaces="setitem's view op (select or slice) and its copy_ or fill_ for one int or slice index",
                when="fast paths on, nothing watching the dispatcher; _array_write_applies(t, index, value)",
                parity_test="tests/test_indexing.py::test_setitem_on_arrays", ops=("select", "slice", "copy_", "fill_"))
def setitem_on_arrays(t, index, value):
    """t[index] = value written straight into t's array (Python's int and slice indexing address the elements that
    select and slice view), with the one version bump that copy_ or fill_ makes."""
    backend = t._backend
    backend.array(t)[index] = value if not isinstance(value, TensorImpl) else backend.array(value)
    t._bump_version()


def _array_write_applies(t, index, value):
    """Whether setitem_on_arrays serves t[index] = value: a plain tensor of the CPU backend that no graph needs (nor
    does a tensor value), shares no element twice and is indexed by one int in range or one forward slice; the
    value a number (already converted to t's dtype) or a tensor of t's dtype, backend and the target's exact shape
    in another storage. Anything else (broadcasting, casts, errors, autograd) takes the readable path."""
    if not mode.fast or tls.observed or type(t) is not tensor_impl.tensor_class or type(t._backend) is not CPUBackend:
        return False
    if not t._size or t._requires_grad or t._grad_fn is not None or t._is_inference or _shares_elements(t):
        return False
    n = t._size[0]
    if type(index) is int:
        if not -n <= index < n:
            return False
        target = t._size[1:]
    elif type(index) is slice and _plain_slice_part(index.start) and _plain_slice_part(index.stop) and (
            index.step is None or (type(index.step) is int and index.step > 0)):
        target = (len(range(*index.indices(n))),) + t._size[1:]
    else:
        return False
    if not isinstance(value, TensorImpl):
        return True
    return (type(value) is tensor_impl.tensor_class and value._backend is t._backend and value.dtype is t.dtype
            and value._size == target and value._storage is not t._storage and not value._requires_grad
            and value._grad_fn is None)


def _plain_slice_part(x):
    return x is None or type(x) is int


def _shares_elements(t):
    """Whether t is expanded: several of its elements are one memory location (the readable path refuses it)."""
    return any(s == 0 and n > 1 for n, s in zip(t._size, t._stride))


# ---- the walk over an index tuple -------------------------------------------------------------------------------

class _Walk:
    """One pass over an index tuple: `result` gathers the view ops, `indices` the tensors for advanced indexing.

    `dim` is the dim of `result` the next item applies to; `covered` counts the dims `indices` spans so far (a
    mask spans one per mask dim), so each index tensor lands at its dim, with None for the dims between.
    """

    def __init__(self, t, items):
        self.original = t
        self.result = t
        self.dim = 0
        self.specified = _count_specified(items)
        self.indices = []
        self.covered = 0
        if self.specified > t.dim():
            raise IndexError(f"too many indices for tensor of dimension {t.dim()}")

    def step(self, item, real_dim):
        if item is True or item is False:
            self.unsqueeze()
            self.record(_bool_index(item, self.result))
        elif _is_int(item):
            self.result = _select(self.result, self.dim, item, real_dim)
        elif isinstance(item, slice):
            self.result = _slice(self.result, self.dim, item, skip_full=True)
            self.dim += 1
        elif item is Ellipsis:
            self.dim += self.original.dim() - self.specified
        elif item is None:
            self.unsqueeze()
            self.dim += 1
        elif isinstance(item, TensorImpl):
            self.tensor(item, real_dim)
        elif _is_sequence(item):
            self.record(_sequence_to_index(item, self.original))
        else:
            self.result = _select(self.result, self.dim, _as_index(item), real_dim)

    def unsqueeze(self):
        self.result = call(_UNSQUEEZE, (self.result, self.dim))

    def tensor(self, item, real_dim):
        """A 0-dim integer tensor acts as an int (a view); a 0-dim bool as a Python bool; others are recorded."""
        if item.dim() != 0 or item.dtype.category > dt.INTEGRAL:
            self.record(item)
        elif item.dtype in _MASK_DTYPES:
            self.unsqueeze()
            self.record(_bool_index(bool(item.item()), self.result))
        else:
            self.result = _select(self.result, self.dim, int(item.item()), real_dim)

    def record(self, index):
        self.indices += [None] * (self.dim - self.covered)
        self.indices.append(index)
        self.covered = self.dim = self.dim + (index.dim() if index.dtype in _MASK_DTYPES else 1)

    def device_indices(self):
        """Index tensors on the device of what they index (PyTorch lets CPU indices index any device)."""
        dev = self.result.device
        return [i if i is None or i.device == dev else i.to(dev) for i in self.indices]


def _walk(t, index):
    items = _as_tuple(index)
    walk = _Walk(t, items)
    for real_dim, item in enumerate(items):
        walk.step(item, real_dim)
    return walk


def _count_specified(items):
    """How many of the tensor's dims the index names: all but None, ..., and bools; a mask names its dims."""
    n = 0
    for item in items:
        if isinstance(item, TensorImpl):
            n += item.dim() if item.dtype in _MASK_DTYPES else 1
        elif not (item is None or item is Ellipsis or item is True or item is False):
            n += 1
    return n


def _as_tuple(index):
    """NumPy's legacy rule: a short list holding a slice, None, ..., a tensor or a sequence is a tuple of indices."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, TensorImpl) or not _is_sequence(index) or len(index) >= 32:
        return (index,)
    if any(i is None or i is Ellipsis or isinstance(i, (slice, TensorImpl)) or _is_sequence(i) for i in index):
        user_warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; use x[tuple(seq)] "
                      "instead of x[seq]. A future PyTorch reads it as x[torch.tensor(seq)].", UserWarning,
                      stacklevel=4)
        return tuple(index)
    return (index,)


def _is_int(x):
    return (type(x) is int) or isinstance(x, np.integer)


def _is_sequence(x):
    return isinstance(x, (collections.abc.Sequence, np.ndarray)) and not isinstance(x, TensorImpl)


def _as_index(item):
    try:
        return operator.index(item)
    except TypeError:
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                         f"indices (got {type(item).__name__})") from None


# ---- one step each -------------------------------------------------------------------------------------------------

def _select(t, dim, index, real_dim):
    """t.select(dim, index) after PyTorch's bounds check, whose message names the dim of the original index."""
    index = operator.index(index)
    if not t._size:
        if index == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                             "in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"index {index} is out of bounds for dimension 0 with size 0")
    size = t._size[dim] if dim < t.dim() else None  # past the last dim (after two ...), select itself complains
    if size is not None and not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {real_dim} with size {size}")
    return call(_SELECT, (t, dim, index))


def _slice(t, dim, s, skip_full):
    """t.slice(dim, start, stop, step). Inside a tuple (`skip_full`) a slice covering the whole dim is no op at all."""
    step = 1 if s.step is None else operator.index(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    start = None if s.start is None else operator.index(s.start)
    stop = None if s.stop is None else operator.index(s.stop)
    if step < 0:
        raise ValueError("step must be greater than zero")
    if skip_full and dim < t.dim() and not start and step == 1 and (stop is None or stop >= t._size[dim]):
        return t
    return call(_SLICE, (t, dim, start, stop, step))


def _bool_index(value, like):
    """True indexes a new size-1 dim as [0], False as [] (so x[False] is empty)."""
    return tensor([0] if value else [], dtype=dt.int64, device=like.device)


def _sequence_to_index(seq, like):
    """A list (or array) as an index tensor: bool stays a mask, any other kind becomes int64."""
    index = tensor(seq, device=like.device)
    return index if index.dtype in _MASK_DTYPES else index.to(dt.int64)


# ---- assignment ----------------------------------------------------------------------------------------------------

def _checked_value(t, value):
    """A tensor stays as it is; a Python number is converted to t's dtype as PyTorch converts it to a 0-dim tensor
    of that dtype (RuntimeError if it overflows), before the index is looked at.

    >>> _checked_value(lantern.zeros(2, dtype=lantern.uint8), -1), _checked_value(lantern.zeros(2).long(), 2.7)
    (255, 2)
    """
    if isinstance(value, TensorImpl):
        return value
    if isinstance(value, (bool, int, float, complex, np.integer)):
        return scalar_in(value, t.dtype, "fill_")
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    raise TypeError(f"can't assign a {name} to a {type_name(t)}")


def _as_tensor(t, value):
    """value, or a number as a 0-dim tensor of t's dtype and device."""
    if isinstance(value, TensorImpl):
        return value
    return call(_FILL_, (t._backend.empty((), t.dtype), value))


def _strip_leading_ones(size):
    """NumPy's backward-compatible rule: leading size-1 dims of an assigned value are dropped."""
    i = 0
    while i < len(size) and size[i] == 1:
        i += 1
    return size[i:]


def _copy_to(dst, src):
    """Write src into the view dst: fill_ for a number, copy_ when shapes agree, fill_ for a CPU scalar, else copy_
    of src expanded."""
    if not isinstance(src, TensorImpl):
        call(_FILL_, (dst, src))
    elif dst._size == src._size:
        call(_COPY_, (dst, src, False))
    elif not src._size and src.device.type == "cpu":
        call(_FILL_, (dst, src))
    else:
        src = call(_VIEW, (src, _strip_leading_ones(src._size)))
        call(_COPY_, (dst, call(_EXPAND, (src, dst._size)), False))
