"""The CPU backend: NumPy arrays over 64-byte aligned storage.

A tensor's array is `np.ndarray(sizes, dtype, storage_bytes, offset * itemsize, strides * itemsize)`: made once
and cached on the tensor (rebuilt only if its storage's buffer was replaced by a resize).

>>> t = lantern.arange(6).view(2, 3).t()
>>> cpu.array(t).strides
(8, 24)
"""
import os
from math import prod as _prod

import numpy as np
from numpy._core._multiarray_umath import __cpu_features__ as _cpu_features

from ..core.allocator import cpu_allocator as _allocator
from ..core.device import CPU
from ..core.dispatch_keys import DispatchKey
from ..core.storage import UntypedStorage as _Storage
from ..core import tensor_impl
from ..core.tensor_impl import contiguous_strides
from . import strict_numpy
from .base import Backend, install_backend

_ndarray = np.ndarray
_frombuffer = np.frombuffer
_new = object.__new__
_allocate = _allocator.allocate


_layouts = {}  # shape -> (numel, contiguous strides, whether 1-d): what CPUBackend.empty needs of a shape


def _layout(shape):
    """empty()'s facts about a shape, computed once per shape (up to 4096 shapes are kept)."""
    layout = (_prod(shape), contiguous_strides(shape), len(shape) == 1)
    if len(_layouts) < 4096:
        _layouts[shape] = layout
    return layout


class CPUBackend(Backend):
    key = DispatchKey.CPU
    device = CPU
    xp = np
    allocator = _allocator

    def array_over(self, storage, shape, dtype):
        return _ndarray(shape, dtype.np, storage._data)

    def empty(self, shape, dtype):
        """A new contiguous tensor (every op's output comes from here, so it is kept short: UntypedStorage._allocate
        and make_tensor written out in place)."""
        layout = _layouts.get(shape)
        n, strides, one_dim = _layout(shape) if layout is None else layout
        nbytes = n * dtype.itemsize
        data = _allocate(nbytes)  # first: a failed allocation leaves no half-made storage to __del__
        storage = _new(_Storage)
        storage._allocator = _allocator
        storage.device = CPU
        storage._nbytes = nbytes
        storage._data = data
        storage._ptr = None
        storage._gen = 0
        storage.resizable = True
        t = _new(tensor_impl.tensor_class)  # new_tensor_object() written out: every op's output passes here
        t._storage = storage
        t._size = shape
        t._stride = strides
        t._offset = 0
        t.dtype = dtype
        t._backend = self
        t._nd = _frombuffer(data, dtype.np, n) if one_dim else _ndarray(shape, dtype.np, data)
        t._nd_gen = 0
        t._vc = [0]
        t._base = None
        return t

    def array(self, t):
        nd = t._nd
        if nd is not None and t._nd_gen == t._storage._gen:
            return nd
        storage = t._storage
        itemsize = t.dtype.itemsize
        # an empty view may sit past the end of its buffer (x[3:] of 3 rows): NumPy needs an in-bounds offset
        offset = 0 if 0 in t._size else t._offset * itemsize
        nd = _ndarray(t._size, t.dtype.np, storage._data, offset, tuple(s * itemsize for s in t._stride))
        t._nd = nd
        t._nd_gen = storage._gen
        return nd

    host_array = array  # a CPU tensor's kernel array is already NumPy's

    def to_host(self, array):
        """A kernel's array as NumPy's, for a host library such as SciPy: on the CPU, the array itself."""
        return array

    def from_host(self, array):
        """A NumPy array as a kernel's array: on the CPU, the array itself."""
        return array


class StrictCPUBackend(CPUBackend):
    """The CPU backend with lantern.backends.strict_numpy as its array library: kernels get strict arrays, which
    refuse NumPy's functions, so a kernel that bypasses `xp` fails its tests. Chosen by LANTERN_ARRAY_LIBRARY=strict
    for a test run (docs/internals/backends.md). A tensor's cached array stays a plain ndarray; users get those."""

    xp = strict_numpy

    def _specialized_structured(self, op):
        return self.run_structured  # the generated runners read the cached (plain) arrays directly

    def run_structured(self, op, args):
        shape, dtype = op.meta(*args)
        out = self.output(op, shape, dtype, args)
        op.impl(self.xp, self.array(out), dtype.np, *self.arrays(op, args))
        return out

    def array(self, t):
        return strict_numpy.strict(CPUBackend.array(self, t))

    host_array = array_or_none = CPUBackend.array
    to_host, from_host = staticmethod(strict_numpy.plain), staticmethod(strict_numpy.strict)


ARRAY_LIBRARIES = {"numpy": CPUBackend, "strict": StrictCPUBackend}


def chosen_backend(library):
    """The CPU backend over the array library LANTERN_ARRAY_LIBRARY names: NumPy unless it says otherwise."""
    if library not in ARRAY_LIBRARIES:
        raise ValueError(f"LANTERN_ARRAY_LIBRARY={library!r} names no array library lantern has: use one of "
                         f"{', '.join(ARRAY_LIBRARIES)}")
    return ARRAY_LIBRARIES[library]()


cpu = chosen_backend(os.environ.get("LANTERN_ARRAY_LIBRARY", "numpy"))
install_backend(cpu)


def get_cpu_capability():
    """torch.backends.cpu.get_cpu_capability(): the widest vector instruction set the CPU kernels may use, named as
    PyTorch names it ('AVX512', 'AVX2' or 'DEFAULT'), here read from NumPy's CPU dispatch (which runs lantern's
    kernels)."""
    if all(_cpu_features.get(f) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")):
        return "AVX512"
    if _cpu_features.get("AVX2") and _cpu_features.get("FMA3"):
        return "AVX2"
    return "DEFAULT"
