"""Tensors over memory that already exists: `frombuffer` (any object with Python's buffer protocol) and `from_file`
(a file's bytes, mapped or read), plus the deprecated `range` (arange with its end included).

>>> import lantern as torch
>>> data = bytearray(b"\\x01\\x00\\x02\\x00")
>>> t = torch.frombuffer(data, dtype=torch.int16)
>>> t[0] = 7; t.tolist(), data[0]                       # one memory: the tensor writes into the bytearray
([7, 2], 7)
"""
import math
import os

import numpy as np

from ._construct import _wrap_ndarray
from .core import dtype as dt
from .core.warn_always import warn_once
from .ops.dispatcher import call
from .ops.factory import finish
from .ops.registry import get
from .core import user_warnings

_NOT_WRITABLE = ("The given buffer is not writable, and PyTorch does not support non-writable tensors. This means you "
                 "can write to the underlying (supposedly non-writable) buffer using the tensor. You may want to copy "
                 "the buffer to protect its data or make it writable before converting it to a tensor. This type of "
                 "warning will be suppressed for the rest of this program.")


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over `buffer`'s bytes from byte `offset` on: `count` elements of `dtype` or, with a negative
    count, as many as the rest of the buffer holds."""
    try:
        raw = np.frombuffer(buffer, dtype=np.uint8)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length, itemsize = raw.size, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({length} "
                         "bytes) minus 1")
    if count < 0:
        if (length - offset) % itemsize:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({itemsize})")
        count = (length - offset) // itemsize
    elif offset + count * itemsize > length:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({length} bytes)")
    if memoryview(buffer).readonly:
        warn_once(_NOT_WRITABLE)  # the tensor can still write into it, as torch's
    elements = raw[offset:offset + count * itemsize].view(dtype.np)
    return finish(_wrap_ndarray(elements), requires_grad)


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    """A 1-D tensor of `size` elements over a file's bytes, mapped into memory. shared=True maps the file itself, so
    writes reach it (and a shorter file is extended); otherwise the mapping is private (copy-on-write): the tensor's
    writes stay in the process, and pages it never wrote show the file as it is."""
    dtype = dtype or dt.get_default_dtype()
    nbytes = size * dtype.itemsize
    if not isinstance(filename, str):
        raise TypeError(f"from_file(): argument 'filename' (position 1) must be str, not {type(filename).__name__}")
    mode = "read-write" if shared else "read-only"
    if not os.path.exists(filename) and not shared:
        raise RuntimeError(f"unable to open file <{filename}> in {mode} mode: No such file or directory (2)")
    if shared:
        if not os.path.exists(filename) or os.path.getsize(filename) < nbytes:
            with open(filename, "ab") as f:
                f.truncate(nbytes)
    else:
        have = os.path.getsize(filename)
        if have < nbytes:
            raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required mapping size "
                               f"<{nbytes}>")
    if nbytes == 0:
        raw = np.zeros(0, np.uint8)
    else:
        raw = np.memmap(filename, dtype=np.uint8, mode="r+" if shared else "c", shape=(nbytes,))
    return finish(_wrap_ndarray(raw.view(dtype.np)), requires_grad)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """start, start + step, ... up to and including `end` (deprecated by torch: use arange, which stops before
    end). Float by default, as torch's."""
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    user_warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    start, end, step = (float(v) for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    steps = call(get("arange"), (n, None, 1, dt.float64, layout, device, None, False))
    values = (steps * step + start).to(dtype or dt.get_default_dtype())
    if out is not None:
        return out._resize((n,)).copy_(values)
    return finish(values, requires_grad)
