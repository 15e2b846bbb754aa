"""The QuantizedCPU backend: what a quantized tensor is, and the arithmetic between its integers and real values.

A quantized tensor is a strided tensor like any other (storage, sizes, strides, offset) whose storage holds small
integers; a **quantizer** says what they mean. Per tensor: value = (q - zero_point) * scale. Per channel: slice i
along `axis` has its own scales[i] and zero_points[i]. The quantizer lives in the tensor's backend (one backend
object per quantizer, key QuantizedCPU), so everything that keeps a tensor's backend keeps its quantizer too: a
view, detach(), deepcopy.

>>> q = lantern.quantize_per_tensor(lantern.tensor([-1.0, 0.5, 2.0]), 0.1, 10, lantern.quint8)
>>> q._backend, q._backend.quantizer
(<lantern QuantizedCPU backend>, PerTensorAffine(scale=0.1, zero_point=10))
>>> int_array(q)
array([ 0, 15, 30], dtype=uint8)

The arithmetic copies what torch's CPU kernels compute, rounding included: float32 throughout, ties to even.
"""
import numpy as np

from ..core.dispatch_keys import DispatchKey
from ..core.quantized_dtypes import per_channel_affine, per_channel_affine_float_qparams, per_tensor_affine
from ..core.tensor_impl import contiguous_strides, make_tensor
from .cpu import CPUBackend, cpu

# ---- quantizers --------------------------------------------------------------------------------------------------


class PerTensorAffine:
    """One scale (a Python float, kept as given) and one integer zero point for every element."""

    qscheme = per_tensor_affine
    __slots__ = ("scale", "zero_point")

    def __init__(self, scale, zero_point):
        self.scale, self.zero_point = float(scale), int(zero_point)

    def same_as(self, other):
        return isinstance(other, PerTensorAffine) and (self.scale, self.zero_point) == (other.scale, other.zero_point)

    def __repr__(self):
        return f"PerTensorAffine(scale={self.scale}, zero_point={self.zero_point})"


class PerChannelAffine:
    """scales (float64 CPU tensor) and zero_points (int64, or float32 for per_channel_affine_float_qparams), one per
    index of dim `axis`."""

    __slots__ = ("scales", "zero_points", "axis")

    def __init__(self, scales, zero_points, axis):
        self.scales, self.zero_points, self.axis = scales, zero_points, axis

    @property
    def qscheme(self):
        return per_channel_affine if not self.zero_points.dtype.is_floating_point else per_channel_affine_float_qparams

    def same_as(self, other):
        return (isinstance(other, PerChannelAffine) and self.axis == other.axis
                and np.array_equal(cpu.array(self.scales), cpu.array(other.scales))
                and np.array_equal(cpu.array(self.zero_points), cpu.array(other.zero_points)))

    def __repr__(self):
        return (f"PerChannelAffine(scales={cpu.array(self.scales).tolist()}, "
                f"zero_points={cpu.array(self.zero_points).tolist()}, axis={self.axis})")


# ---- the backend -------------------------------------------------------------------------------------------------


class QuantizedCPUBackend(CPUBackend):
    """CPU memory read through a quantizer. Kernels of other keys never get its integers: `array` refuses (they
    would compute on the integers as if they were the values); the QuantizedCPU kernels use `int_array`."""

    key = DispatchKey.QuantizedCPU

    def __init__(self, quantizer):
        self.quantizer = quantizer

    def array(self, t):
        raise RuntimeError(f"a quantized tensor ({t.dtype.name}) has no plain array: its storage holds integers q "
                           "standing for (q - zero_point) * scale. Use .dequantize() for the values or .int_repr() "
                           "for the integers first.")

    array_or_none = array

    def host_array(self, t):
        """The values a user reads (item(), float(), printing): float32, dequantized."""
        return dequantize_array(t)

    def empty(self, shape, dtype):
        """A new contiguous quantized tensor over uninitialised storage (packed types: whole bytes)."""
        n = int(np.prod(shape, dtype=np.int64))
        holder = cpu.empty((dtype.storage_bytes(n) // dtype.itemsize,), dtype.int_dtype)
        return guard(make_tensor(holder._storage, tuple(shape), contiguous_strides(tuple(shape)), 0, dtype, self))

    def __repr__(self):
        return "<lantern QuantizedCPU backend>"


class IntegersNotValues(np.ndarray):
    """The array cached on a quantized tensor (`t._nd`), where the kernels of other keys look first: its integers,
    refusing arithmetic and conversion. The dispatcher lets a 0-dim CPU operand join any backend, so a dense op
    given a 0-dim quantized tensor runs the CPU kernel; this makes that kernel fail, naming the fix, instead of
    computing on the integers as if they were the values."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise _not_values()

    def __array_function__(self, func, types, args, kwargs):
        raise _not_values()

    def astype(self, *args, **kwargs):
        raise _not_values()


def _not_values():
    return RuntimeError("a quantized tensor's integers are not its values: an op without a quantized kernel met a "
                        "quantized operand (a 0-dim one joins dense ops). Call .dequantize() on it first.")


def guarded_array(t):
    """What a quantized tensor caches as its array: its integers, in an IntegersNotValues view (packed types:
    nothing, their integers have no strided view)."""
    if t.dtype.elements_per_byte > 1:
        return None
    return CPUBackend.array(cpu, _int_alias(t)).view(IntegersNotValues)


def make_quantized(int_values, dtype, quantizer):
    """A new contiguous quantized tensor of `dtype` holding the integer array `int_values` (already in range)."""
    out = QuantizedCPUBackend(quantizer).empty(int_values.shape, dtype)
    write_int_array(out, int_values)
    return out


def from_integers(ints, dtype, quantizer, size):
    """A new quantized tensor of `size` whose integers are the plain tensor `ints` (for packed dtypes: their
    bytes, 1-d, as int_repr gives them)."""
    out = QuantizedCPUBackend(quantizer).empty(tuple(size), dtype)
    if dtype.elements_per_byte > 1:
        _packed_bytes(out)[...] = cpu.array(ints).reshape(-1)
    else:
        write_int_array(out, cpu.array(ints).reshape(tuple(size)))
    return out


def guard(t):
    """t, with its cached array the guarded view of its integers (see IntegersNotValues)."""
    t._nd = guarded_array(t)
    return t


def quantized_equal(a, b):
    """torch.equal of tensors one of which is quantized: the same dtype, quantizer, size and integers."""
    return (a.is_quantized and b.is_quantized and a.dtype is b.dtype and a._size == b._size
            and a._backend.quantizer.same_as(b._backend.quantizer) and np.array_equal(int_array(a), int_array(b)))


# ---- integers in and out of storage ------------------------------------------------------------------------------


def int_array(t):
    """A quantized tensor's integers as a NumPy array of its int dtype (packed types: unpacked, a copy)."""
    dtype = t.dtype
    if dtype.elements_per_byte == 1:
        return CPUBackend.array(cpu, _int_alias(t))
    return _unpack(_packed_bytes(t), dtype.bits, t.numel()).reshape(t._size)


def write_int_array(t, values):
    """Store integers into a contiguous quantized tensor (packing them where its dtype does)."""
    dtype = t.dtype
    if dtype.elements_per_byte == 1:
        CPUBackend.array(cpu, _int_alias(t))[...] = values
        return
    _packed_bytes(t)[...] = _pack(np.ascontiguousarray(values, dtype=np.uint8).reshape(-1), dtype.bits)


def _int_alias(t):
    """t's elements as a plain tensor of its int dtype (same storage, sizes, strides)."""
    return make_tensor(t._storage, t._size, t._stride, t._offset, t.dtype.int_dtype, cpu)


def packed_bytes_tensor(t):
    """The storage bytes of a contiguous packed tensor (quint4x2, quint2x4), as a 1-d uint8 tensor."""
    n = t.dtype.storage_bytes(t.numel())
    return make_tensor(t._storage, (n,), (1,), t._offset, t.dtype.int_dtype, cpu)


def _packed_bytes(t):
    return CPUBackend.array(cpu, packed_bytes_tensor(t))


def _pack(values, bits):
    per = 8 // bits
    padded = np.zeros(-(-values.size // per) * per, dtype=np.uint8)
    padded[:values.size] = values
    lanes = padded.reshape(-1, per).astype(np.uint16) << (np.arange(per, dtype=np.uint16) * bits)
    return lanes.sum(axis=1).astype(np.uint8)


def _unpack(packed, bits, numel):
    per = 8 // bits
    lanes = (packed[:, None] >> (np.arange(per, dtype=np.uint8) * bits)) & ((1 << bits) - 1)
    return lanes.reshape(-1)[:numel].astype(np.uint8)


# ---- values <-> integers -----------------------------------------------------------------------------------------


def quantize_array(x, dtype, scale, zero_point, fused):
    """float32 values -> integers in [qmin, qmax], as torch's kernels round them.

    `fused`: torch's per-tensor quint8/qint8 kernel (FBGEMM) rounds x * (1/scale) + zero_point once (a fused
    multiply-add); its other kernels round the product to float32 first. Both round ties to even. The packed types
    round the product and add the zero point after rounding. scale and zero_point may be arrays that broadcast
    against x (per channel). Non-finite values land where each of torch's kernels puts them.
    """
    x = np.asarray(x, dtype=np.float32)
    scale = np.asarray(scale, dtype=np.float32)
    with np.errstate(all="ignore"):
        inverse = np.where(scale == 0, np.float32(np.inf), np.float32(1) / scale).astype(np.float32)
        if fused:
            shifted = (x.astype(np.float64) * inverse.astype(np.float64) + zero_point).astype(np.float32)
        elif dtype.elements_per_byte > 1:
            shifted = np.rint((x * inverse).astype(np.float32)).astype(np.float64) + zero_point
        else:
            shifted = ((x * inverse).astype(np.float32) + np.asarray(zero_point, dtype=np.float32)).astype(np.float32)
        rounded = np.rint(shifted).astype(np.float64)
    return _saturate(rounded, dtype, fused)


def quantize_float_qparams_array(x, dtype, scales, zero_points):
    """per_channel_affine_float_qparams: round(x / scale + zero_point) with a float zero point (scale 0 divides by
    1, as torch does)."""
    x = np.asarray(x, dtype=np.float32)
    scales = np.asarray(scales, dtype=np.float32)
    with np.errstate(all="ignore"):
        inverse = np.where(scales == 0, np.float32(1), np.float32(1) / scales).astype(np.float32)
        shifted = ((x * inverse).astype(np.float32) + np.asarray(zero_points, dtype=np.float32)).astype(np.float32)
        rounded = np.rint(shifted).astype(np.float64)
    return _saturate(rounded, dtype, fused=False)


def _saturate(rounded, dtype, fused):
    """Clamp to [qmin, qmax]; NaN (and, for the packed types, infinities) go where torch's kernels send them."""
    if fused:
        nan_target = dtype.qmax
    elif dtype.elements_per_byte > 1:
        nan_target = 0
        rounded = np.where(np.isinf(rounded), 0, rounded)
    else:
        nan_target = dtype.qmin if dtype.bits == 32 else 0
    rounded = np.where(np.isnan(rounded), nan_target, rounded)
    return np.clip(rounded, dtype.qmin, dtype.qmax).astype(dtype.int_dtype.np)


def dequantize_array(t):
    """A quantized tensor's values: float32(q - zero_point) * float32(scale), per tensor or per channel (a float
    zero point subtracts in float32)."""
    q = int_array(t)
    quantizer = t._backend.quantizer
    if isinstance(quantizer, PerTensorAffine):
        return (q.astype(np.int64) - quantizer.zero_point).astype(np.float32) * np.float32(quantizer.scale)
    shape = [1] * q.ndim
    shape[quantizer.axis] = -1
    scales = cpu.array(quantizer.scales).astype(np.float32).reshape(shape)
    zero_points = cpu.array(quantizer.zero_points).reshape(shape)
    if zero_points.dtype.kind == "f":
        return ((q.astype(np.float32) - zero_points.astype(np.float32)) * scales).astype(np.float32)
    return ((q.astype(np.int64) - zero_points).astype(np.float32) * scales).astype(np.float32)
