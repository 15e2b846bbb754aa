"""Factories: ops that make tensors from sizes and values (empty, zeros, ones, full, arange, linspace, logspace, eye),
plus tril/triu. They have no tensor inputs, so the dispatcher picks the backend from their `device` argument.

>>> lantern.arange(3).dtype, lantern.arange(3.).dtype, lantern.full((2,), 7).dtype
(lantern.int64, lantern.float32, lantern.int64)
"""
import math

import numpy as np

from ..core import dtype as dt
from ..core.promotion import wrapped_scalar_dtype
from .pointwise import _require_tensor
from .registry import custom, structured

_FACTORY_KW = "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, " \
              "bool requires_grad=False"


def _sizes(name, size):
    size = tuple(size)
    for s in size:
        if not isinstance(s, int) and not hasattr(s, "__index__"):
            raise TypeError(f"{name}(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _filled(name, value):
    def kernel(backend, size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
               memory_format=None):
        t = backend.empty(_sizes(name, size), dtype or dt.get_default_dtype())
        if value is not None:
            backend.fill(t, value)
        return _finish(t, requires_grad)
    return kernel


for _name, _value in (("empty", None), ("zeros", 0), ("ones", 1)):
    _k = _filled(_name, _value)
    custom(f"{_name}(int[] size, {_FACTORY_KW}, MemoryFormat? memory_format=None) -> Tensor", _k, _k)


def _full(backend, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    if dtype is None:
        dtype = wrapped_scalar_dtype(fill_value.item() if hasattr(fill_value, "item") else fill_value)
    t = backend.empty(_sizes("full", size), dtype)
    backend.fill(t, fill_value)
    return _finish(t, requires_grad)


custom(f"full(int[] size, Scalar fill_value, {_FACTORY_KW}) -> Tensor", _full, _full)


def _empty_strided(backend, size, stride, dtype=None, layout=None, device=None, pin_memory=None,
                   requires_grad=False):
    t = backend.empty_strided(_sizes("empty_strided", size), tuple(stride), dtype or dt.get_default_dtype())
    return _finish(t, requires_grad)


custom(f"empty_strided(int[] size, int[] stride, {_FACTORY_KW}) -> Tensor", _empty_strided, _empty_strided)


def _is_float(x):
    return isinstance(x, float) or (hasattr(x, "dtype") and getattr(x.dtype, "is_floating_point", False)) \
        or isinstance(x, np.floating)


def _scalar(x):
    return x.item() if hasattr(x, "item") else x


def _arange(backend, start, end=None, step=1, dtype=None, layout=None, device=None, pin_memory=None,
            requires_grad=False):
    if end is None:
        start, end = 0, start
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    if dtype is None:
        dtype = dt.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else dt.int64
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = max(math.ceil((end - start) / step), 0)
    t = backend.empty((n,), dtype)
    if backend.xp is not None:
        xp = backend.xp
        if dtype.category <= dt.INTEGRAL and all(isinstance(v, int) for v in (start, end, step)):
            vals = xp.arange(start, start + n * step, step, dtype=np.int64)[:n]
        else:
            vals = xp.arange(n, dtype=np.float64) * step + start
        backend.array(t)[...] = vals
    return _finish(t, requires_grad)


custom(f"arange(Scalar start, Scalar? end=None, Scalar step=1, {_FACTORY_KW}) -> Tensor", _arange, _arange)


def _linspace_values(xp, start, end, steps):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return xp.linspace(start, end, steps, dtype=np.complex128 if isinstance(start + end, complex) else np.float64)


def _linspace(backend, start, end, steps, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=False):
    start, end = _scalar(start), _scalar(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    t = backend.empty((steps,), dtype or dt.get_default_dtype())
    if backend.xp is not None:
        backend.array(t)[...] = _linspace_values(backend.xp, start, end, steps)
    return _finish(t, requires_grad)


custom(f"linspace(Scalar start, Scalar end, int steps, {_FACTORY_KW}) -> Tensor", _linspace, _linspace)


def _logspace(backend, start, end, steps, base=10.0, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=False):
    start, end = _scalar(start), _scalar(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    t = backend.empty((steps,), dtype or dt.get_default_dtype())
    if backend.xp is not None:
        backend.array(t)[...] = backend.xp.power(float(base), _linspace_values(backend.xp, start, end, steps))
    return _finish(t, requires_grad)


custom(f"logspace(Scalar start, Scalar end, int steps, float base=10.0, {_FACTORY_KW}) -> Tensor",
       _logspace, _logspace)


def _eye(backend, n, m=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    m = n if m is None else m
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    t = backend.empty((n, m), dtype or dt.get_default_dtype())
    if backend.xp is not None:
        backend.array(t)[...] = backend.xp.eye(n, m)
    return _finish(t, requires_grad)


custom(f"eye(int n, int? m=None, {_FACTORY_KW}) -> Tensor", _eye, _eye)


def _tri_meta(name):
    def meta(self, diagonal=0):
        _require_tensor(name, self)
        if self.dim() < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return self._size, self.dtype
    return meta


def _tri_impl(fn):
    def impl(xp, out, dtype, self, diagonal=0):
        out[...] = fn(self, diagonal)
    return impl


structured("tril(Tensor self, int diagonal=0) -> Tensor", _tri_meta("tril"), _tri_impl(np.tril))
structured("triu(Tensor self, int diagonal=0) -> Tensor", _tri_meta("triu"), _tri_impl(np.triu))
