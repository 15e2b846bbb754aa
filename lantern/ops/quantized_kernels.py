"""The QuantizedCPU kernels of general ops: views, copies and comparisons of quantized tensors; every other op
refuses, with the exception class torch's dispatcher raises for it.

A view of a quantized tensor shares its storage and its quantizer, so views are the same arithmetic on sizes and
strides as for any tensor. A per-channel quantizer follows its axis: selecting one channel leaves a per-tensor
quantizer, slicing the channel dim slices the scales, unsqueeze/squeeze move the axis; views that would reorder
strides (t, permute, expand, as_strided, ...) are refused, as torch refuses them.

>>> q = lantern.quantize_per_tensor(lantern.tensor([[1.0, 2.0], [3.0, 4.0]]), 0.5, 0, lantern.quint8)
>>> q.t().int_repr(), q[1].q_scale()
(tensor([[2, 6],
        [4, 8]], dtype=lantern.uint8), 0.5)
>>> q + q
Traceback (most recent call last):
NotImplementedError: Could not run 'add' with arguments from the 'QuantizedCPU' backend: lantern has no quantized kernel for add (torch has few). Compute on q.dequantize() and quantize the result again.
"""
import numbers

import numpy as np

from ..backends.cpu import cpu
from ..backends.quantized import (PerChannelAffine, PerTensorAffine, QuantizedCPUBackend, guard, int_array,
                                  quantize_array, quantize_float_qparams_array, write_int_array)
from ..core import dtype as dt
from ..core.dispatch_keys import DispatchKey
from ..core.size import wrap_dim
from ..core.tensor_impl import TensorImpl, contiguous_strides, make_tensor
from . import registry
from .dispatcher import call
from .op_kinds import OpKind
from .split_views import SEVERAL_VIEWS

QUANTIZED = DispatchKey.QuantizedCPU
_STRUCTURED = (OpKind.STRUCTURED, OpKind.STRUCTURED_INPLACE, OpKind.STRUCTURED_OUT)
# arithmetic that promotes its operands' dtypes (a quantized one fails there) and wraps Python numbers into tensors
# (a quantized operand then fails at allocating the output)
_WRAPS_NUMBERS = {"add", "sub", "mul", "div", "true_divide", "rsub"}
# clamp's other forms, which torch's quantized clamp does not cover: they fail at type promotion
_PROMOTES_NUMBERS = {"clamp_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_"}


# ---- views -------------------------------------------------------------------------------------------------------

def _view_kernel(op, args):
    base = args[0]
    view = op.meta(*args)
    size, stride, offset = view[0], view[1], view[2]
    if len(view) == 4 and view[3] is not base.dtype:
        raise RuntimeError(f"{op.name}: a quantized tensor's elements cannot be reinterpreted as {view[3].name} "
                           "(take .int_repr() or .dequantize() first)")
    if base.dtype.elements_per_byte > 1:
        _check_packed_view(op, base, size, stride, offset)
    quantizer = base._backend.quantizer
    backend = base._backend
    if isinstance(quantizer, PerChannelAffine):
        backend = QuantizedCPUBackend(_per_channel_view(op, args, quantizer, size))
    root = base._base if base._base is not None else base
    return guard(make_tensor(base._storage, size, stride, offset, base.dtype, backend, None, base._vc,
                             root if op.sets_base else None))


def _check_packed_view(op, base, size, stride, offset):
    """Packed elements (two or four per byte) are reachable in their stored order only."""
    if offset != base._offset or (any(size) and tuple(stride) != contiguous_strides(tuple(size))):
        raise NotImplementedError(
            f"{op.name} of a {base.dtype.name} tensor: its elements are packed {base.dtype.elements_per_byte} to a "
            "byte, so only views that keep them in order (view, reshape, flatten, unsqueeze, squeeze) can address "
            "them")


def _uniform_only(op):
    return RuntimeError(f"Setting strides is possible only on uniformly quantized tensor ({op.name} of a "
                        "per-channel quantized tensor: dequantize() it, or quantize per tensor)")


def _per_channel_view(op, args, quantizer, size):
    """The quantizer of a view of a per-channel quantized tensor: PerChannelAffine with the axis moved or the scales
    sliced, or PerTensorAffine when one channel is left."""
    base, axis, name = args[0], quantizer.axis, op.schema.name
    if name in ("alias",):
        return quantizer
    if name == "select":
        dim = wrap_dim(args[1], base.dim())
        if dim == axis:
            return _one_channel(quantizer, wrap_index(args[2], base._size[dim]))
        return PerChannelAffine(quantizer.scales, quantizer.zero_points, axis - (dim < axis))
    if name in ("slice", "narrow"):
        dim = wrap_dim(args[1], base.dim())
        if dim != axis:
            return quantizer
        if name == "narrow":
            start = args[2] if args[2] >= 0 else args[2] + base._size[dim]
            channels = range(start, start + args[3])
        else:
            channels = range(*slice(args[2], args[3], args[4]).indices(base._size[dim]))
        if len(channels) == 1:
            return _one_channel(quantizer, channels[0])
        pick = list(channels)
        return PerChannelAffine(quantizer.scales[pick], quantizer.zero_points[pick], axis)
    if name == "unsqueeze":
        dim = wrap_dim(args[1], base.dim() + 1)
        return PerChannelAffine(quantizer.scales, quantizer.zero_points, axis + (dim <= axis))
    if name == "squeeze":
        removed = _squeezed_dims(base, args[1])
        if axis in removed:
            return _one_channel(quantizer, 0)
        return PerChannelAffine(quantizer.scales, quantizer.zero_points, axis - sum(d < axis for d in removed))
    if name in ("view", "_unsafe_view", "unflatten"):
        channels = quantizer.scales.numel()
        if axis >= len(size) or size[axis] != channels:
            raise RuntimeError(f"length of scales must equal to channel, expected "
                               f"{size[axis] if axis < len(size) else 'a dim ' + str(axis)} got, {channels}")
        return quantizer
    raise _uniform_only(op)


def wrap_index(index, n):
    return index + n if index < 0 else index


def _squeezed_dims(t, dim):
    if dim is None:
        dims = range(t.dim())
    else:
        dims = [wrap_dim(d, t.dim()) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
    return [d for d in dims if t._size[d] == 1]


def _one_channel(quantizer, channel):
    if quantizer.zero_points.dtype.is_floating_point:
        raise RuntimeError("a view keeping one channel of a per_channel_affine_float_qparams tensor has no per-tensor "
                           "quantizer with a float zero point (dequantize() it first)")
    return PerTensorAffine(quantizer.scales[channel].item(), int(quantizer.zero_points[channel].item()))


# ---- copies ------------------------------------------------------------------------------------------------------

def _clone_kernel(op, args):
    """A contiguous copy of the integers, with the same quantizer (torch's quantized clone is contiguous)."""
    q = args[0]
    out = q._backend.empty(q._size, q.dtype)
    write_int_array(out, int_array(q))
    return out


def _copy_kernel(op, args):
    """copy_ into a quantized tensor: float values are quantized with its quantizer; a quantized source brings its
    integers and its quantizer (as torch does)."""
    self, src = args[0], args[1]
    if self.dtype.elements_per_byte > 1:
        raise NotImplementedError(f'"copy_" not implemented for \'{self.dtype.legacy}\'')
    if not isinstance(src, TensorImpl):
        return _fill_kernel(op, (self, src))
    if src._size != self._size:
        raise RuntimeError(f"copy_ into a quantized tensor needs a source of its shape: got {list(src._size)} for "
                           f"{list(self._size)} (quantized copies do not broadcast)")
    if src.is_quantized:
        if src.dtype is not self.dtype:
            raise RuntimeError("Expected self.scalar_type() == src.scalar_type() to be true, but got false.  (copy_ "
                               f"of a {src.dtype.name} tensor into a {self.dtype.name} one)")
        int_array(self)[...] = int_array(src)
        self._backend = QuantizedCPUBackend(src._backend.quantizer)
    else:
        if src.dtype is not dt.float32:
            raise RuntimeError(f"Quantize only works on Float Tensor, got {src.dtype.legacy}")
        int_array(self)[...] = _quantize_like(self, cpu.array(src))
    self._bump_version()
    return self


def _fill_kernel(op, args):
    """fill_ a quantized tensor with a number (or a 0-dim tensor's): the number, quantized."""
    self, value = args
    if self.dtype.elements_per_byte > 1:
        raise NotImplementedError(f'"fill_" not implemented for \'{self.dtype.legacy}\'')
    if isinstance(value, TensorImpl):
        value = value.item()
    int_array(self)[...] = _quantize_like(self, np.full(self._size, value, dtype=np.float32))
    self._bump_version()
    return self


def _quantize_like(q, values):
    """float32 `values` (q's shape) as integers under q's quantizer."""
    quantizer = q._backend.quantizer
    if isinstance(quantizer, PerTensorAffine):
        return quantize_array(values, q.dtype, quantizer.scale, quantizer.zero_point, fused=q.dtype.bits == 8)
    shape = [1] * q.dim()
    shape[quantizer.axis] = -1
    scales = cpu.array(quantizer.scales).reshape(shape)
    zero_points = cpu.array(quantizer.zero_points).reshape(shape)
    if zero_points.dtype.kind == "f":
        return quantize_float_qparams_array(values, q.dtype, scales, zero_points)
    return quantize_array(values, q.dtype, scales, zero_points, fused=False)


def _to_copy_kernel(op, args):
    q, dtype = args[0], args[1]
    if dtype is not None and dtype is not q.dtype:
        raise RuntimeError(f"Creation of quantized tensor requires quantized dtype like lantern.quint8 (a "
                           f"{q.dtype.name} tensor converts to {dtype.name} only through .dequantize())")
    if args[2] is not None and str(args[2]) != "cpu":
        raise NotImplementedError(f"Could not run '_to_copy' with arguments from the 'QuantizedCPU' backend: "
                                  f"lantern keeps quantized tensors on the CPU only (asked for {args[2]})")
    return _clone_kernel(op, args[:1])


# ---- comparisons: on the values ----------------------------------------------------------------------------------

def _compare_kernel(op, args):
    """eq/ne/lt/le/gt/ge of quantized tensors compare their dequantized values (a bool result)."""
    values = tuple(a.dequantize() if isinstance(a, TensorImpl) and a.is_quantized else a for a in args)
    return call(op, values)


# ---- ops torch has quantized kernels for (per tensor only) --------------------------------------------------------

def _per_tensor_source(op, args):
    """The first quantized tensor among args (lists too), after refusing per-channel ones as torch does."""
    tensors = [a for a in args if isinstance(a, TensorImpl)]
    tensors += [t for a in args if isinstance(a, (list, tuple)) for t in a if isinstance(t, TensorImpl)]
    quantized = [t for t in tensors if t.is_quantized]
    for t in quantized:
        if not isinstance(t._backend.quantizer, PerTensorAffine):
            raise RuntimeError(f"Only per-tensor quantization is supported in '{op.name}' (this tensor is quantized "
                               f"{t.qscheme().name}: dequantize() it first)")
        if t.dtype.elements_per_byte > 1:
            raise NotImplementedError(f'"{op.name}" not implemented for \'{t.dtype.legacy}\'')
    return quantized[0]


def _replace_quantized(args, convert):
    return tuple(convert(a) if isinstance(a, TensorImpl) and a.is_quantized else
                 type(a)(convert(t) if isinstance(t, TensorImpl) and t.is_quantized else t for t in a)
                 if isinstance(a, (list, tuple)) else a for a in args)


def _map_results(result, convert):
    if type(result) is tuple or type(result) is list:
        return type(result)(convert(r) for r in result)
    if isinstance(result, tuple):  # a named return type: sort's (values, indices)
        return type(result)(*(convert(r) for r in result))
    return convert(result)


def _integer_kernel(op, args):
    """Ops that only pick, order or repeat elements (flip, sort, topk, max, index_select, ...) run on the integers;
    the integer results are the quantized result, under the input's quantizer (indices stay plain). With a
    positive scale, integers order as their values do."""
    source = _per_tensor_source(op, args)
    ints = source.dtype.int_dtype

    def wrap(t):
        if not isinstance(t, TensorImpl) or t.dtype is not ints:
            return t
        return guard(make_tensor(t._storage, t._size, t._stride, t._offset, source.dtype, source._backend))
    return _map_results(call(op, _replace_quantized(args, lambda q: q.int_repr())), wrap)


def _values_kernel(op, args):
    """Ops that compute new values (relu, clamp, masked_fill, max pooling, cat) run on the dequantized values, and
    the result is quantized again with the first quantized input's scale and zero point, as torch's quantized
    kernels requantize (cat brings every input to the first one's)."""
    source = _per_tensor_source(op, args)
    if op.schema.name in ("cat", "stack"):
        tensors = args[0]
        if any(not t.is_quantized for t in tensors):
            _refuse(op, args)
        if len({t.dtype for t in tensors}) > 1:
            raise RuntimeError("All dtypes must be the same.")
    functional = _FUNCTIONAL.get(op.name, op.functional)
    result = call(functional, _replace_quantized(args, lambda q: q.dequantize()))
    if functional is not op:  # in place: the new values go into self's integers
        self = args[0]
        int_array(self)[...] = _quantize_like(self, cpu.array(result))
        self._bump_version()
        return self

    def requantize(t):
        if not isinstance(t, TensorImpl) or t.dtype is not dt.float32:
            return t
        out = source._backend.empty(t._size, source.dtype)
        write_int_array(out, _quantize_like(out, cpu.array(t)))
        return out
    return _map_results(result, requantize)


# torch's fixed output grids of the bounded functions: (scale, zero_point) per dtype, covering [0, 1] or [-1, 1]
_UNIT = {"quint8": (1 / 256, 0), "qint8": (1 / 256, -128), "qint32": (2.0 ** -32, 0)}
_FIXED_QPARAMS = {"sigmoid": _UNIT, "hardsigmoid": _UNIT,
                  "tanh": {"quint8": (2 / 256, 128), "qint8": (2 / 256, 0), "qint32": (2.0 ** -31, 0)}}


def _fixed_grid_kernel(op, args):
    """sigmoid, tanh, hardsigmoid: computed on the values, quantized onto the fixed grid torch's kernels use for
    their bounded output, whatever the input's scale."""
    source = _per_tensor_source(op, args)
    scale, zero_point = _FIXED_QPARAMS[op.schema.name][source.dtype.name]
    values = call(op, _replace_quantized(args, lambda q: q.dequantize()))
    return _quantized_values(values, source.dtype, PerTensorAffine(scale, zero_point))


def _gelu_kernel(op, args):
    """gelu on the values, quantized with the input's zero point and its scale rounded to float32 (as torch's)."""
    source = _per_tensor_source(op, args)
    quantizer = source._backend.quantizer
    values = call(op, _replace_quantized(args, lambda q: q.dequantize()))
    return _quantized_values(values, source.dtype, PerTensorAffine(float(np.float32(quantizer.scale)),
                                                                    quantizer.zero_point))


def _upsample_kernel(op, args):
    """Nearest upsampling picks elements (exact on the values, quantized again). The interpolating modes, whose
    rounding torch does in integers, are not written."""
    if not args[2].startswith("nearest"):
        _refuse(op, args)
    return _values_kernel(op, args)


def _quantized_values(values, dtype, quantizer):
    out = QuantizedCPUBackend(quantizer).empty(values._size, dtype)
    write_int_array(out, _quantize_like(out, cpu.array(values)))
    return out


_INTEGER_OPS = ("flip", "repeat", "index_select", "index.Tensor", "sort", "topk", "max", "min", "max.dim", "min.dim")
_VALUE_OPS = ("relu", "relu_", "clamp", "hardtanh", "hardtanh_", "masked_fill.Scalar", "masked_fill_.Scalar", "cat",
              "stack", "max_pool2d_with_indices")
_FUNCTIONAL = {"masked_fill_.Scalar": registry.get("masked_fill.Scalar")}


# ---- everything else refuses -------------------------------------------------------------------------------------

def _refuse(op, args):
    """No quantized kernel: the error torch's dispatcher gives for the same call."""
    tensors = [args[i] for i in op.tensor_positions if isinstance(args[i], TensorImpl)]
    tensors += [t for i in op.list_positions for t in args[i] if isinstance(t, TensorImpl)]
    if op.kind in _STRUCTURED and op.functional.schema.name in _WRAPS_NUMBERS:
        plain = [t for t in tensors if not t.is_quantized]
        if plain:
            first, second = (tensors[0], plain[0]) if tensors[0].is_quantized else \
                (tensors[0], next(t for t in tensors if t.is_quantized))
            raise RuntimeError(f"promoteTypes with quantized numbers is not handled yet; figure out what the correct "
                               f"rules should be, offending types: {first.dtype.legacy} {second.dtype.legacy} ({op.name}"
                               f": dequantize() the quantized operand first)")
        if any(isinstance(args[i], numbers.Number) for i in op.tensor_positions):
            raise RuntimeError("empty_strided not supported on quantized tensors yet see "
                               f"https://github.com/pytorch/pytorch/issues/74540 ({op.name} of a quantized tensor and "
                               "a number: compute on .dequantize())")
    if op.name in _PROMOTES_NUMBERS:
        quantized = next(t for t in tensors if t.is_quantized)
        raise RuntimeError(f"promoteTypes with quantized numbers is not handled yet; figure out what the correct "
                           f"rules should be, offending types: {quantized.dtype.legacy} Float ({op.name} of a "
                           "quantized tensor: torch quantizes clamp(min, max) only out of place)")
    raise NotImplementedError(f"Could not run '{op.name}' with arguments from the 'QuantizedCPU' backend: lantern has "
                              f"no quantized kernel for {op.name} (torch has few). Compute on q.dequantize() and "
                              "quantize the result again.")


def _install(op):
    """The QuantizedCPU kernel of `op` (a registry listener: ops registered later get theirs too)."""
    if QUANTIZED in op.kernels:
        return
    name = op.schema.name
    if op.kind is OpKind.VIEW:
        op.kernels[QUANTIZED] = _view_kernel
    elif op.name in SEVERAL_VIEWS:  # split, unbind: their views, each made as a view op's
        views = SEVERAL_VIEWS[op.name]
        op.kernels[QUANTIZED] = lambda op, args: views(_view_kernel, *args)
    elif op.kind is OpKind.STRUCTURED and name in ("eq", "ne", "lt", "le", "gt", "ge"):
        op.kernels[QUANTIZED] = _compare_kernel
    else:
        op.kernels[QUANTIZED] = _KERNELS.get(op.name, _refuse)


_KERNELS = {"clone": _clone_kernel, "copy_": _copy_kernel, "fill_": _fill_kernel, "_to_copy": _to_copy_kernel,
            "gelu": _gelu_kernel, "_upsample": _upsample_kernel, **{name: _fixed_grid_kernel for name in _FIXED_QPARAMS},
            **{name: _integer_kernel for name in _INTEGER_OPS}, **{name: _values_kernel for name in _VALUE_OPS}}
registry.on_register(_install)

