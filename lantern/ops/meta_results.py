"""What meta functions return, as named tuples: one type per kind of op, read by field name where that reads better.

- A structured op's meta checks its arguments and returns an OutputMeta: the shape and dtype of the output that the
  runner allocates (or that an in-place or out= tensor must accept) before the kernel fills it.
- A view op's meta returns a ViewMeta: the shape, strides and storage offset of the result over its input's storage
  (and a dtype where the view reinterprets the elements, as view.dtype, view_as_real and real/imag do).

A custom op's meta is different in kind: it is the op's kernel for the meta device (meta_kernel(backend, *args)),
which returns tensors as the op does, so it has no type here.

>>> OutputMeta((2, 3), lantern.float32)
OutputMeta(shape=(2, 3), dtype=lantern.float32)
>>> ViewMeta((3, 2), (1, 3), 0).dtype is None  # None: the view keeps its input's dtype
True
"""
from typing import NamedTuple, Optional

from ..core import dtype as dt


class OutputMeta(NamedTuple):
    """A structured op's output, as its meta computes it."""
    shape: tuple
    dtype: dt.dtype


class ViewMeta(NamedTuple):
    """A view over the input's storage, as a view op's meta computes it."""
    shape: tuple
    strides: tuple
    storage_offset: int
    dtype: Optional[dt.dtype] = None
