"""Quantization ops: float tensors to quantized ones and back, and a quantized tensor's quantizer read out.

`quantize_per_tensor(x, scale, zero_point, dtype)` stores each x as q = round(x / scale) + zero_point, clamped to
the dtype's integer range; `quantize_per_channel` does so with one (scale, zero_point) per index of `axis`;
`quantize_per_tensor_dynamic` picks scale and zero point from x's range. `dequantize` gives the float32 values
(q - zero_point) * scale, `int_repr` the integers q. The readers (`q_scale`, `q_zero_point`, `qscheme`,
`q_per_channel_scales`, ...) have QuantizedCPU kernels only: on a float tensor they fail at the dispatcher, as in
torch. The kernels of other ops on quantized tensors are in lantern.ops.quantized_kernels.

>>> x = lantern.tensor([-1.0, 0.5, 2.0])
>>> q = lantern.quantize_per_tensor(x, 0.1, 10, lantern.quint8)
>>> q.int_repr(), q.q_scale(), q.q_zero_point(), q.qscheme()
(tensor([ 0, 15, 30], dtype=lantern.uint8), 0.1, 10, lantern.per_tensor_affine)
>>> q.dequantize()
tensor([-1.0000,  0.5000,  2.0000])
"""
import math

import numpy as np

from ..backends.cpu import cpu
from ..backends.quantized import (PerChannelAffine, PerTensorAffine, dequantize_array, from_integers, int_array,
                                  make_quantized, packed_bytes_tensor, quantize_array, quantize_float_qparams_array)
from ..core import dtype as dt
from ..core.dispatch_keys import DispatchKey
from ..core.quantized_dtypes import QuantizedDtype, qint8, qint32, quint8
from ..core.tensor_impl import TensorImpl
from .derivative import nondifferentiable
from .dispatcher import call
from .registry import composite, custom, get
from ..core.overridable import overridable
from ..core import user_warnings

QUANTIZED = DispatchKey.QuantizedCPU
_DEPRECATION = ("torch.quantize_per_tensor, torch.quantize_per_channel and other quantized tensor creation functions "
                "that produce tensors with dtype torch.quint8, torch.qint8, and torch.qint32 are deprecated and will "
                "be removed in a future PyTorch release. Please see https://github.com/pytorch/pytorch/issues/184982 "
                "for more information.")
_warned = []


def _warn_deprecated_once():
    """torch 2.13 warns once per process that quantized tensors are on their way out; so does lantern."""
    if not _warned:
        _warned.append(True)
        user_warnings.warn(_DEPRECATION, UserWarning, stacklevel=4)


def _register(text, kernels, method=True):
    """A custom op whose kernels are given per dispatch key (no backend installs its own: `backends=()`)."""
    op = custom(text, None, backends=(), method=method)
    op.kernels.update(kernels)
    return op


# ---- checks ------------------------------------------------------------------------------------------------------

def _check_float_input(x, what="Quantize only works on Float Tensor, got {}"):
    if x.dtype is not dt.float32:
        raise RuntimeError(what.format(x.dtype.legacy))


def _check_quantized_dtype(dtype):
    if not isinstance(dtype, QuantizedDtype):
        raise RuntimeError(f"ScalarType {dtype.legacy} is not supported in new_qtensor. (quantize into lantern.quint8, "
                           "qint8, qint32, quint4x2 or quint2x4)")


def _not_quantized(op, args):
    raise NotImplementedError(f"Could not run '{op.name}' with arguments from the 'CPU' backend: {op.name} reads a "
                              f"quantized tensor, and this {args[0].dtype.name} tensor is not one (make one with "
                              "lantern.quantize_per_tensor or lantern.quantize_per_channel)")


def _check_zero_point(kernel, zero_point, dtype):
    if zero_point > dtype.qmax:
        raise RuntimeError(f"{kernel} zero_point {zero_point} is above upper bound.")
    if zero_point < dtype.qmin:
        raise RuntimeError(f"{kernel} zero_point {zero_point} is below lower bound.")


# ---- quantize per tensor -----------------------------------------------------------------------------------------

def quantize_per_tensor_values(x, scale, zero_point, dtype):
    """x (float32 CPU) quantized with one scale and zero point, torch's checks first."""
    _check_quantized_dtype(dtype)
    _check_float_input(x)
    if dtype.bits == 8:
        _check_zero_point("quantize_tensor_per_tensor_affine", zero_point, dtype)
    _warn_deprecated_once()
    ints = quantize_array(cpu.array(x), dtype, scale, zero_point, fused=dtype.bits == 8)
    return make_quantized(ints, dtype, PerTensorAffine(scale, zero_point))


def _quantize_per_tensor_kernel(op, args):
    x, scale, zero_point, dtype = args
    return quantize_per_tensor_values(x, scale, zero_point, dtype)


def _quantize_per_tensor_qparams_kernel(op, args):
    x, scale, zero_point, dtype = args
    return quantize_per_tensor_values(x, scale.item(), int(zero_point.item()), dtype)


def _quantize_per_tensor_list_kernel(op, args):
    tensors, scales, zero_points, dtype = args
    return [quantize_per_tensor_values(x, scales[i].item(), int(zero_points[i].item()), dtype)
            for i, x in enumerate(tensors)]


_register("quantize_per_tensor.default(Tensor self, float scale, int zero_point, ScalarType dtype) -> Tensor",
          {DispatchKey.CPU: _quantize_per_tensor_kernel})
_register("quantize_per_tensor.tensor_qparams(Tensor self, Tensor scale, Tensor zero_point, ScalarType dtype) -> Tensor",
          {DispatchKey.CPU: _quantize_per_tensor_qparams_kernel})
_register("quantize_per_tensor.tensors(Tensor[] tensors, Tensor scales, Tensor zero_points, ScalarType dtype) "
          "-> Tensor[]", {DispatchKey.CPU: _quantize_per_tensor_list_kernel})


@overridable
def quantize_per_tensor(input, scale, zero_point, dtype):
    """Quantize a float32 tensor with one scale and zero point: q = clamp(round(x / scale) + zero_point).

    scale and zero_point are numbers or one-element tensors; `input` may also be a list of tensors, with a scale and
    zero point each (tensors of them), which gives a list.

    >>> lantern.quantize_per_tensor(lantern.tensor([0.25, 1.0]), 0.5, 0, lantern.qint8).int_repr()
    tensor([0, 2], dtype=lantern.int8)
    """
    if isinstance(input, (list, tuple)):
        return call(get("quantize_per_tensor.tensors"), (list(input), scale, zero_point, dtype))
    if isinstance(scale, TensorImpl):
        return call(get("quantize_per_tensor.tensor_qparams"), (input, scale, zero_point, dtype))
    if not isinstance(zero_point, int) or isinstance(zero_point, bool):
        raise TypeError(f"quantize_per_tensor() received an invalid combination of arguments - got (Tensor, "
                        f"{type(scale).__name__}, {type(zero_point).__name__}, dtype): zero_point must be an int")
    return call(get("quantize_per_tensor.default"), (input, float(scale), zero_point, dtype))


# ---- dynamic: scale and zero point from the input's range --------------------------------------------------------

_SMALL_SCALE = np.float32(6.1e-5)


def choose_qparams(x_min, x_max, qmin, qmax, reduce_range, preserve_sparsity=False):
    """(scale, zero_point) mapping [min(x_min, 0), max(x_max, 0)] onto [qmin, qmax], as torch's dynamic
    quantization chooses them: the zero point is where 0 lands, taken from whichever end loses less to rounding.

    >>> choose_qparams(-1.0, 3.0, 0, 255, False)
    (0.01568627450980392, 64)
    """
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    if x_min < 0 < x_max and preserve_sparsity:  # symmetric around 0: zero lands mid-range
        symmetric_qmin, symmetric_qmax = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        widest = max(abs(x_min / symmetric_qmin), abs(x_max / symmetric_qmax))
        x_min, x_max = widest * symmetric_qmin, widest * symmetric_qmax
    x_min, x_max = np.float32(min(x_min, 0.0)), np.float32(max(x_max, 0.0))
    scale = (float(x_max) - float(x_min)) / (qmax - qmin)
    if np.float32(scale) == 0 or math.isinf(np.float32(1) / np.float32(scale)):
        scale = 0.1
    if scale < _SMALL_SCALE:
        original, scale = scale, float(_SMALL_SCALE)
        if x_min == 0:
            x_max = _SMALL_SCALE * (qmax - qmin)
        elif x_max == 0:
            x_min = -_SMALL_SCALE * (qmax - qmin)
        else:
            x_min, x_max = x_min * np.float32(scale / original), x_max * np.float32(scale / original)
    from_min, from_max = qmin - float(x_min) / scale, qmax - float(x_max) / scale
    error_min, error_max = abs(qmin) - abs(float(x_min) / scale), abs(qmax) - abs(float(x_max) / scale)
    initial = from_min if error_min < error_max else from_max
    zero_point = qmin if initial < qmin else qmax if initial > qmax else int(np.rint(initial))
    if x_min < 0 < x_max and preserve_sparsity:
        zero_point = (qmin + qmax) // 2 + 1
    return scale, zero_point


def _quantize_dynamic_kernel(op, args):
    x, dtype, reduce_range = args
    if dtype not in (quint8, qint8, dt.float16):
        raise RuntimeError(f"dtype {dtype.legacy}not supported")
    if dtype is dt.float16:
        return x.contiguous().to(dt.float16)
    _check_float_input(x)
    if x.numel() == 0:
        raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")
    values = cpu.array(x)
    scale, zero_point = choose_qparams(float(values.min()), float(values.max()), dtype.qmin, dtype.qmax,
                                       reduce_range)
    return quantize_per_tensor_values(x, scale, zero_point, dtype)


_register("quantize_per_tensor_dynamic(Tensor self, ScalarType dtype, bool reduce_range) -> Tensor",
          {DispatchKey.CPU: _quantize_dynamic_kernel}, method=False)


# ---- quantize per channel ----------------------------------------------------------------------------------------

def _quantize_per_channel_kernel(op, args):
    x, scales, zero_points, axis, dtype = args
    _check_quantized_dtype(dtype)
    if scales.dim() != 1:
        raise RuntimeError("scale tensor must have dimension 1")
    if zero_points.dim() != 1:
        raise RuntimeError("zero_points tensor must have dimension 1")
    if scales.numel() != zero_points.numel():
        raise RuntimeError("number of elements in scales and zero_points must match")
    if not 0 <= axis < x.dim():
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. Got: {axis}Expected: "
                           f"[0, {x.dim()})")
    if x._size[axis] != scales.numel():
        raise RuntimeError(f"length of scales must equal to channel, expected {x._size[axis]} got, {scales.numel()}")
    if dtype.elements_per_byte > 1:
        raise NotImplementedError(f'"quantize_tensor_per_channel_affine" not implemented for \'{dtype.legacy}\'')
    _check_float_input(x, "quantize_tensor_per_channel_affine expects a Float Tensor, got {}")
    shape = [1] * x.dim()
    shape[axis] = -1
    scale_array = cpu.array(scales.detach().to(dt.float64)).reshape(shape)
    float_qparams = zero_points.dtype.is_floating_point
    if float_qparams:
        zp_array = cpu.array(zero_points.detach().to(dt.float32)).reshape(shape)
        ints = quantize_float_qparams_array(cpu.array(x), dtype, scale_array, zp_array)
        stored_zero_points = zero_points.detach().to(dt.float32).clone()
    else:
        zp_array = cpu.array(zero_points.detach().to(dt.int64)).reshape(shape)
        for zp in zp_array.reshape(-1).tolist():
            _check_zero_point("quantize_tensor_per_channel_affine", zp, dtype)
        ints = quantize_array(cpu.array(x), dtype, scale_array, zp_array, fused=False)
        stored_zero_points = zero_points.detach().to(dt.int64).clone()
    _warn_deprecated_once()
    stored_scales = scales.detach().to(dt.float32 if float_qparams else dt.float64).clone()  # as torch keeps them
    quantizer = PerChannelAffine(stored_scales, stored_zero_points, axis)
    return make_quantized(ints, dtype, quantizer)


_register("quantize_per_channel(Tensor self, Tensor scales, Tensor zero_points, int axis, ScalarType dtype) -> Tensor",
          {DispatchKey.CPU: _quantize_per_channel_kernel}, method=False)


# ---- back to values and integers ---------------------------------------------------------------------------------

def _dequantize_kernel(op, args):
    (q,) = args
    out = cpu.empty(q._size, dt.float32)
    cpu.array(out)[...] = dequantize_array(q)
    return out


def _dequantize_float_kernel(op, args):
    """A float tensor dequantizes to itself, in float32 (torch's dequantize of a CPU tensor is .to(float))."""
    (x,) = args
    return x.to(dt.float32)


def _dequantize_list_kernel(op, args):
    (tensors,) = args
    return [dequantize(t) for t in tensors]


def _int_repr_kernel(op, args):
    """The integers, contiguous, as a plain tensor of the int dtype (packed types: their bytes, 1-d)."""
    (q,) = args
    if q.dtype.elements_per_byte > 1:
        return packed_bytes_tensor(q).clone()
    out = cpu.empty(q._size, q.dtype.int_dtype)
    cpu.array(out)[...] = int_array(q)
    return out


_register("dequantize(Tensor self) -> Tensor", {QUANTIZED: _dequantize_kernel, DispatchKey.CPU: _dequantize_float_kernel})
_register("dequantize.tensors(Tensor[] tensors) -> Tensor[]",
          {QUANTIZED: _dequantize_list_kernel, DispatchKey.CPU: _dequantize_list_kernel})
_register("int_repr(Tensor self) -> Tensor", {QUANTIZED: _int_repr_kernel, DispatchKey.CPU: _not_quantized})


@overridable
def dequantize(input):
    """float32 values of a quantized tensor, (q - zero_point) * scale; a list of tensors gives a list. A float
    tensor gives itself in float32.

    >>> lantern.dequantize(lantern.quantize_per_tensor(lantern.tensor([0.3]), 0.25, 0, lantern.quint8))
    tensor([0.2500])
    """
    if isinstance(input, (list, tuple)):
        return call(get("dequantize.tensors"), (list(input),))
    return call(get("dequantize"), (input,))


# ---- the quantizer, read out -------------------------------------------------------------------------------------

def _per_tensor(q, reader):
    quantizer = q._backend.quantizer
    if not isinstance(quantizer, PerTensorAffine):
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.  "
                           f"({reader} reads a per-tensor quantizer; this tensor is quantized "
                           f"{quantizer.qscheme.name}: use q_per_channel_scales() and q_per_channel_zero_points())")
    return quantizer


def _per_channel(q, reader):
    quantizer = q._backend.quantizer
    if not isinstance(quantizer, PerChannelAffine):
        raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || quantizer->qscheme() == "
                           "kPerChannelAffineFloatQParams to be true, but got false.  "
                           f"({reader} reads a per-channel quantizer; this tensor is quantized "
                           f"{quantizer.qscheme.name}: use q_scale() and q_zero_point())")
    return quantizer


def _q_scale(op, args):
    return _per_tensor(args[0], "q_scale").scale


def _q_zero_point(op, args):
    return _per_tensor(args[0], "q_zero_point").zero_point


def _q_per_channel_scales(op, args):
    return _per_channel(args[0], "q_per_channel_scales").scales.clone()


def _q_per_channel_zero_points(op, args):
    return _per_channel(args[0], "q_per_channel_zero_points").zero_points.clone()


def _q_per_channel_axis(op, args):
    return _per_channel(args[0], "q_per_channel_axis").axis


def _qscheme(op, args):
    return args[0]._backend.quantizer.qscheme


for _text, _reader in (("q_scale(Tensor self) -> float", _q_scale),
                       ("q_zero_point(Tensor self) -> int", _q_zero_point),
                       ("q_per_channel_scales(Tensor self) -> Tensor", _q_per_channel_scales),
                       ("q_per_channel_zero_points(Tensor self) -> Tensor", _q_per_channel_zero_points),
                       ("q_per_channel_axis(Tensor self) -> int", _q_per_channel_axis),
                       ("qscheme(Tensor self) -> QScheme", _qscheme)):
    _register(_text, {QUANTIZED: _reader, DispatchKey.CPU: _not_quantized})

# ---- integers that are already quantized -------------------------------------------------------------------------

_QUANTIZED_OF = {dt.uint8: quint8, dt.int8: qint8, dt.int32: qint32}


def _quantized_dtype_of(ints):
    dtype = _QUANTIZED_OF.get(ints.dtype)
    if dtype is None:
        raise RuntimeError("Creation of quantized tensor requires quantized dtype like lantern.quint8 (the integers "
                           f"must be uint8, int8 or int32, not {ints.dtype.name})")
    return dtype


def _make_per_tensor_quantized_tensor(input, scale, zero_point):
    """A quantized tensor holding a copy of the integers `input` (uint8 -> quint8, int8 -> qint8, int32 -> qint32).

    >>> lantern._make_per_tensor_quantized_tensor(lantern.tensor([1, 4], dtype=lantern.uint8), 0.5, 1).dequantize()
    tensor([0.0000, 1.5000])
    """
    dtype = _quantized_dtype_of(input)
    _warn_deprecated_once()
    return from_integers(input.contiguous(), dtype, PerTensorAffine(scale, zero_point), input._size)


def _make_per_channel_quantized_tensor(input, scale, zero_point, axis):
    """The per-channel form: scale (float64) and zero_point (int64) tensors, one entry per index of `axis`."""
    dtype = _quantized_dtype_of(input)
    _warn_deprecated_once()
    quantizer = PerChannelAffine(scale.detach().to(dt.float64).clone(), zero_point.detach().to(dt.int64).clone(), axis)
    return from_integers(input.contiguous(), dtype, quantizer, input._size)


composite("_make_per_tensor_quantized_tensor", _make_per_tensor_quantized_tensor, method=False)
composite("_make_per_channel_quantized_tensor", _make_per_channel_quantized_tensor, method=False)

nondifferentiable("quantize_per_tensor.default", "quantize_per_tensor.tensor_qparams", "quantize_per_tensor.tensors",
                  "quantize_per_tensor_dynamic", "quantize_per_channel", "dequantize", "dequantize.tensors",
                  "int_repr", "q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
                  "q_per_channel_axis", "qscheme")

