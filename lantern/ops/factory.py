"""Factories: ops that make tensors from sizes and values (empty, zeros, ones, full, arange, linspace, logspace, eye,
empty_strided), the `*_like` composites, and tril/triu. Factories have no tensor inputs, so the dispatcher picks the
backend from their `device` argument; on the meta device they make shapes and strides only.

>>> lantern.arange(3).dtype, lantern.arange(3.).dtype, lantern.full((2,), 7).dtype
(lantern.int64, lantern.float32, lantern.int64)
>>> lantern.zeros_like(lantern.ones(2, 3).t()).stride()   # preserve_format keeps a dense input's strides
(1, 3)
"""
import math
import operator

import numpy as np

from ..core import determinism, dtype as dt
from ..core.cuda_as_cpu import SWITCH as CUDA_AS_CPU
from ..core.dispatch_keys import DispatchKey
from ..core.layout import channels_last, channels_last_3d, contiguous_format, preserve_format, strided
from ..core.promotion import wrapped_scalar_dtype
from ..core.quantized_dtypes import refuse_quantized_dtype
from ..core.tensor_impl import TensorImpl, contiguous_strides
from .dispatcher import call
from .meta_util import iterator_strides, strides_in_order
from .pointwise_common import _require_tensor
from .registry import composite, custom, get, structured
from .sparse_coo import empty_sparse_like
from .derivative import derivative

FACTORY_KW = "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, " \
              "bool requires_grad=False"

# The C++ type names PyTorch's conversion and bounds errors print ("value cannot be converted to type int ...").
C_TYPE_NAMES = {
    dt.bool: "bool", dt.uint8: "unsigned char", dt.int8: "signed char", dt.int16: "short", dt.int32: "int",
    dt.int64: "long", dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16", dt.float32: "float",
    dt.float64: "double", dt.complex32: "c10::complex<c10::Half>", dt.complex64: "c10::complex<float>",
    dt.complex128: "c10::complex<double>",
}

FLOAT_MAX = {d: dt.finfo(d).max for d in (dt.float16, dt.bfloat16, dt.float32, dt.float64)}


# ---- argument checks shared by every factory ------------------------------------------------------------------

def int_arg(fn, name, value):
    """An int argument (a Python or NumPy integer, or an integer 0-dim tensor); bools and floats are refused."""
    if isinstance(value, (bool, np.bool_)) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(value).__name__}")
    value = operator.index(value)
    if not -1 << 63 <= value < 1 << 63:
        raise TypeError(f"{fn}(): argument '{name}' failed to unpack {value}: Overflow when unpacking long long "
                        "(sizes must fit in a 64-bit int)")
    return value


def size_arg(fn, size):
    """`size` as a tuple of non-negative ints, with PyTorch's errors for anything else."""
    if isinstance(size, TensorImpl) or not hasattr(size, "__iter__"):
        raise TypeError(f"{fn}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    size = tuple(int_arg(fn, "size", s) for s in size)
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return size


def check_options(layout, pin_memory):
    if layout is not None and layout is not strided:
        raise RuntimeError(f"lantern implements only the strided layout, not {layout}")
    if pin_memory and not CUDA_AS_CPU.on:  # in cuda-as-cpu mode pinned memory is ordinary memory
        raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
                           "allocator is available on this system.")


def finish(t, requires_grad):
    """Mark a new tensor as a leaf that requires grad, if asked (only floating and complex tensors can)."""
    if requires_grad:
        if t.dtype.category < dt.FLOATING:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


def scalar_value(x):
    """A Python number from a number, NumPy scalar or one-element tensor."""
    return x.item() if hasattr(x, "item") else x


def checked_value(value, dtype):
    """`value` as it will be stored in `dtype`; RuntimeError where PyTorch's checked conversion overflows.

    Integers wrap into uint8 from as low as -255 (two's complement, as in C), floats must fit the integer range,
    and floating dtypes refuse finite values beyond their range (inf and nan pass)."""
    value = scalar_value(value)
    if isinstance(value, int) and not -2**63 <= value < 2**64:
        raise OverflowError("int too big to convert")
    if dtype is dt.bool:
        return bool(value)
    if isinstance(value, complex):
        if dtype.category == dt.COMPLEX:
            return value
        if value.imag != 0:
            raise _overflow(dtype)
        value = value.real
    if dtype.category == dt.INTEGRAL:
        return _checked_int(value, dtype)
    if math.isfinite(value) and abs(value) > FLOAT_MAX[dtype.to_real()]:
        raise _overflow(dtype)
    return value


def _checked_int(value, dtype):
    info = np.iinfo(dtype.np)
    if isinstance(value, float):
        if not math.isfinite(value) or not info.min <= value <= info.max:
            raise _overflow(dtype)
        return int(value)
    value = int(value)
    low = -info.max if dtype is dt.uint8 else info.min
    if not low <= value <= info.max:
        raise _overflow(dtype)
    return value % 256 if dtype is dt.uint8 else value


def _overflow(dtype):
    return RuntimeError(f"value cannot be converted to type {C_TYPE_NAMES[dtype]} without overflow")


def not_implemented_for(kernel, dtype):
    """The error PyTorch's dtype switch raises when a kernel has no case for `dtype`."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{dtype.legacy}\'')


# ---- strides for memory formats -------------------------------------------------------------------------------

def format_strides(size, memory_format):
    """Strides of a new dense tensor of `size` laid out in `memory_format` (contiguous or channels-last)."""
    if memory_format is None or memory_format is contiguous_format:
        return contiguous_strides(size)
    if memory_format is channels_last or memory_format is channels_last_3d:
        rank = 4 if memory_format is channels_last else 5
        if len(size) != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {memory_format.name} format")
        # channels fastest, then the spatial dims from last to first, then the batch
        order = (1,) + tuple(range(rank - 1, 1, -1)) + (0,)
        return strides_in_order(size, order)
    raise RuntimeError(f"unsupported memory format {memory_format}")


def like_strides(t, memory_format):
    """The strides `empty_like(t, memory_format=...)` gives; preserve_format copies a dense input's strides."""
    if memory_format is None or memory_format is preserve_format:
        if t.is_non_overlapping_and_dense():
            return t._stride
        return iterator_strides(t._size, [(t._size, t._stride)])
    return format_strides(t._size, memory_format)


# ---- empty / zeros / ones / full / empty_strided --------------------------------------------------------------

def new_tensor(backend, fn, size, dtype, layout=None, pin_memory=None, memory_format=None):
    """An uninitialised tensor for factory `fn`, after the checks every factory makes."""
    check_options(layout, pin_memory)
    size = size_arg(fn, size)
    dtype = dtype or dt.get_default_dtype()
    refuse_quantized_dtype(dtype)
    if memory_format is None or memory_format is contiguous_format:
        return backend.empty(size, dtype)
    return backend.empty_strided(size, format_strides(size, memory_format), dtype)


def _filled(name, value):
    def kernel(backend, size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
               memory_format=None):
        t = new_tensor(backend, name, size, dtype, layout, pin_memory, memory_format)
        if value is not None:
            backend.fill(t, value)
        elif determinism.fills_uninitialized_memory():
            backend.fill(t, determinism.uninitialized_fill_value(t.dtype))
        return finish(t, requires_grad)
    return kernel


for _name, _value in (("empty", None), ("zeros", 0), ("ones", 1)):
    _k = _filled(_name, _value)
    custom(f"{_name}(int[] size, {FACTORY_KW}, MemoryFormat? memory_format=None) -> Tensor", _k, _k)


def _full(backend, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    dtype = dtype or wrapped_scalar_dtype(scalar_value(fill_value))
    t = new_tensor(backend, "full", size, dtype, layout, pin_memory)
    backend.fill(t, checked_value(fill_value, dtype))
    return finish(t, requires_grad)


custom(f"full(int[] size, Scalar fill_value, {FACTORY_KW}) -> Tensor", _full, _full)


def _empty_strided(backend, size, stride, dtype=None, layout=None, device=None, pin_memory=None,
                   requires_grad=False):
    check_options(layout, pin_memory)
    size = size_arg("empty_strided", size)
    stride = tuple(int_arg("empty_strided", "stride", s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    refuse_quantized_dtype(dtype)
    t = backend.empty_strided(size, stride, dtype or dt.get_default_dtype())
    if determinism.fills_uninitialized_memory():
        backend.fill(t, determinism.uninitialized_fill_value(t.dtype))
    return finish(t, requires_grad)


custom(f"empty_strided(int[] size, int[] stride, {FACTORY_KW}) -> Tensor", _empty_strided,
       _empty_strided)


def _empty_permuted(backend, size, physical_layout, dtype=None, layout=None, device=None, pin_memory=None,
                    requires_grad=False):
    """A dense tensor whose dims lie in memory in the order physical_layout lists them, outermost first: (0, 2, 3,
    1) is NHWC for an NCHW size. Not empty(size).permute(...): the sizes stay in size's order."""
    size = size_arg("empty_permuted", size)
    if len(size) != len(physical_layout):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(physical_layout)} (empty_permuted: "
                           "name each dim of size once in physical_layout)")
    for i, d in enumerate(physical_layout):
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {len(size) - 1}, but got {d} "
                               f"at index {i}).  NB: negative dims not currently supported; file an issue if you "
                               f"want it. (empty_permuted of size {list(size)})")
    if len(set(physical_layout)) != len(physical_layout):
        raise RuntimeError(f"Duplicate dim not allowed (empty_permuted: physical_layout {list(physical_layout)} "
                           "must name each dim once)")
    stride = [0] * len(size)
    for d, s in zip(physical_layout, contiguous_strides(tuple(size[d] for d in physical_layout))):
        stride[d] = s
    return _empty_strided(backend, size, stride, dtype, layout, device, pin_memory, requires_grad)


custom(f"empty_permuted(int[] size, int[] physical_layout, {FACTORY_KW}) -> Tensor", _empty_permuted,
       _empty_permuted, method=False)


# ---- ranges: arange / linspace / logspace ---------------------------------------------------------------------

def _range_number(x):
    x = scalar_value(x)
    if isinstance(x, complex):
        raise RuntimeError("value cannot be converted to type double without overflow")
    return x


def _is_float(x):
    return isinstance(x, (float, np.floating))


def _arange_size(start, end, step, xstart, xend, xstep, dtype):
    """PyTorch's length rule: exact integer arithmetic for int64, else ceil((end - start) / step) in double."""
    if not (math.isfinite(xstart) and math.isfinite(xend)):
        raise RuntimeError(f"unsupported range: {xstart:g} -> {xend:g}")
    if not ((xstep > 0 and xend >= xstart) or (xstep < 0 and xend <= xstart)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is dt.int64:
        return (xend - xstart + xstep - (1 if xstep > 0 else -1)) // xstep
    return math.ceil((float(end) - float(start)) / float(step))


def _arange(backend, start, end=None, step=1, dtype=None, layout=None, device=None, pin_memory=None,
            requires_grad=False):
    if end is None:
        start, end = 0, start
    start, end, step = _range_number(start), _range_number(end), _range_number(step)
    if dtype is None:
        dtype = dt.get_default_dtype() if any(_is_float(v) for v in (start, end, step)) else dt.int64
    if dtype.category not in (dt.INTEGRAL, dt.FLOATING):
        raise not_implemented_for("arange_cpu", dtype)
    # like PyTorch, bounds and step are first converted to the dtype's accumulate type: int(0.5) == 0 for ints
    to_acc = int if dtype.category == dt.INTEGRAL else float
    xstart, xend, xstep = to_acc(start), to_acc(end), to_acc(step)
    if xstep == 0:
        # PyTorch's own quirk: a step that only truncates to 0 (0.5 for an int dtype) is a ValueError
        raise (ValueError if step else RuntimeError)("step must be nonzero")
    n = _arange_size(start, end, step, xstart, xend, xstep, dtype)
    t = new_tensor(backend, "arange", (n,), dtype, layout, pin_memory)
    if backend.xp is not None:
        acc = np.int64 if to_acc is int else np.float64
        backend.array(t)[...] = xstart + xstep * backend.xp.arange(n, dtype=acc)
    return finish(t, requires_grad)


custom(f"arange(Scalar start, Scalar? end=None, Scalar step=1, {FACTORY_KW}) -> Tensor", _arange, _arange)


_LINSPACE_WORK_DTYPES = {dt.float32: np.float32, dt.complex64: np.complex64}   # others: float64 / complex128


def _linspace_values(xp, start, end, steps, dtype):
    """start + i*step for the first half, end - (steps-1-i)*step for the second, as PyTorch computes it, so that
    both ends are exact; in the output's precision for float32 and complex64, as PyTorch's kernel."""
    wide = np.complex128 if isinstance(start, complex) or isinstance(end, complex) else np.float64
    kind = _LINSPACE_WORK_DTYPES.get(dtype, wide)
    start, end = kind(start), kind(end)
    if steps == 1:
        return xp.full(1, start, dtype=kind)
    step = (end - start) / (steps - 1)
    i = xp.arange(steps, dtype=kind)
    half = steps // 2
    return xp.where(xp.arange(steps) < half, start + step * i, end - step * (steps - 1 - i))


def _space(fn, backend, start, end, steps, dtype, layout, pin_memory):
    """The tensor and the exponents/values (None on meta) that linspace and logspace share."""
    steps = int_arg(fn, "steps", steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = scalar_value(start), scalar_value(end)
    is_complex = isinstance(start, complex) or isinstance(end, complex)
    dtype = dtype or (dt.default_complex_dtype() if is_complex else dt.get_default_dtype())
    if dtype is dt.bool:
        raise not_implemented_for(f"{fn}_cpu", dtype)
    if dtype.category == dt.INTEGRAL:
        start, end = int(start.real), int(end.real)
    t = new_tensor(backend, fn, (steps,), dtype, layout, pin_memory)
    values = None if backend.xp is None else _linspace_values(backend.xp, start, end, steps, dtype)
    return t, values


def _store(backend, t, values):
    """Write computed values, keeping only the real part for real dtypes and truncating for integer ones."""
    if t.dtype.category < dt.COMPLEX and values.dtype.kind == "c":
        values = values.real
    backend.array(t)[...] = values


def _linspace(backend, start, end, steps, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=False):
    t, values = _space("linspace", backend, start, end, steps, dtype, layout, pin_memory)
    if values is not None:
        _store(backend, t, values)
    return finish(t, requires_grad)


custom(f"linspace(Scalar start, Scalar end, int steps, {FACTORY_KW}) -> Tensor", _linspace, _linspace)


def _logspace(backend, start, end, steps, base=10.0, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=False):
    t, exponents = _space("logspace", backend, start, end, steps, dtype, layout, pin_memory)
    if exponents is not None:
        _store(backend, t, backend.xp.power(float(base), exponents))
    return finish(t, requires_grad)


custom(f"logspace(Scalar start, Scalar end, int steps, float base=10.0, {FACTORY_KW}) -> Tensor",
       _logspace, _logspace)


def _eye(backend, n, m=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    n = int_arg("eye", "n", n)
    m = n if m is None else int_arg("eye", "m", m)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    t = new_tensor(backend, "eye", (n, m), dtype, layout, pin_memory)
    if backend.xp is not None:
        backend.array(t)[...] = backend.xp.eye(n, m)
    return finish(t, requires_grad)


custom(f"eye(int n, int? m=None, {FACTORY_KW}) -> Tensor", _eye, _eye)


# ---- *_like: composites over empty_strided, so they run on any backend and never join a graph ------------------

def empty_like_of(fn, input, dtype=None, layout=None, device=None, pin_memory=None, memory_format=preserve_format):
    """An uninitialised tensor shaped like `input`, strided by `memory_format` (the start of every *_like); in a
    sparse layout (input's, or the one asked for), one with no specified elements."""
    _require_tensor(fn, input)
    if (layout or input.layout) is not strided:
        return empty_sparse_like(input, dtype, layout)
    if input.is_quantized and dtype in (None, input.dtype):  # same quantizer, integers uninitialised (as torch)
        return input._backend.empty(input._size, input.dtype)
    if input._backend.key is DispatchKey.FuncTorchBatched:  # under vmap: batched, each example its own (torch's rule)
        return input.new_empty_strided(input._size, like_strides(input, memory_format), dtype=dtype or input.dtype,
                                       device=device)
    return call(get("empty_strided"), (input._size, like_strides(input, memory_format), dtype or input.dtype,
                                       layout, device or input.device, pin_memory, False))


def finish_like(t, requires_grad):
    """Finish a *_like result whose values came from an in-place op: filling it was part of making it, so it
    starts at version 0 like any new tensor."""
    t._vc[0] = 0
    return finish(t, requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
               memory_format=preserve_format):
    return finish(empty_like_of("empty_like", input, dtype, layout, device, pin_memory, memory_format),
                  requires_grad)


def zeros_like(input, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
               memory_format=preserve_format):
    t = empty_like_of("zeros_like", input, dtype, layout, device, pin_memory, memory_format)
    return finish_like(t.zero_(), requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
              memory_format=preserve_format):
    t = empty_like_of("ones_like", input, dtype, layout, device, pin_memory, memory_format)
    return finish_like(t.fill_(1), requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
              memory_format=preserve_format):
    t = empty_like_of("full_like", input, dtype, layout, device, pin_memory, memory_format)
    return finish_like(t.fill_(checked_value(fill_value, t.dtype)), requires_grad)


for _fn in (empty_like, zeros_like, ones_like, full_like):
    composite(_fn.__name__, _fn, method=False)


# ---- tril / triu ------------------------------------------------------------------------------------------------

def _tri_meta(name):
    def meta(self, diagonal=0):
        _require_tensor(name, self)
        if self.dim() < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return self._size, self.dtype
    return meta


def _tri_impl(name):
    """The kernel of tril or triu: xp.<name> of the input, written to the output."""
    def impl(xp, out, dtype, self, diagonal=0):
        out[...] = getattr(xp, name)(self, diagonal)
    return impl


structured("tril(Tensor self, int diagonal=0) -> Tensor", _tri_meta("tril"), _tri_impl("tril"))
structured("triu(Tensor self, int diagonal=0) -> Tensor", _tri_meta("triu"), _tri_impl("triu"))


# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

derivative("tril", self="grad.tril(diagonal)")
derivative("triu", self="grad.triu(diagonal)")
