"""Quantized tensors in checkpoints, as torch writes them: `torch._utils._rebuild_qtensor(storage, storage_offset,
size, stride, quantizer_params, requires_grad, backward_hooks)`, where the storage is typed with the quantized dtype
(`torch.QUInt8Storage`) and quantizer_params is (per_tensor_affine, scale, zero_point) or (per_channel_affine,
scales, zero_points, axis), float zero points included.

>>> import io
>>> q = lantern.quantize_per_channel(lantern.ones(2, 2), lantern.tensor([0.1, 0.2]), lantern.tensor([0, 1]), 1,
...                                  lantern.qint8)
>>> buf = io.BytesIO(); lantern.save(q, buf); _ = buf.seek(0)
>>> loaded = lantern.load(buf)
>>> loaded.int_repr().tolist(), loaded.q_per_channel_axis()
([[10, 6], [10, 6]], 1)
"""
from ..core.quantized_dtypes import QUANTIZED, QuantizedDtype, per_channel_affine, per_channel_affine_float_qparams, \
    per_tensor_affine
from ..core.tensor_impl import TensorImpl, make_tensor
from .quantized import PerChannelAffine, PerTensorAffine, QuantizedCPUBackend, guard


def quantizer_params(t):
    """The quantizer of a quantized tensor as torch pickles it."""
    quantizer = t._backend.quantizer
    if isinstance(quantizer, PerTensorAffine):
        return (per_tensor_affine, quantizer.scale, quantizer.zero_point)
    # torch names float zero points per_channel_affine here too: the zero points' dtype tells them apart
    return (per_channel_affine, quantizer.scales, quantizer.zero_points, quantizer.axis)


def quantizer_from_params(params):
    """A quantizer from a checkpoint's quantizer_params, checked: nothing in a file may build an odd one."""
    if not isinstance(params, tuple) or not params:
        raise RuntimeError(f"invalid quantizer in checkpoint: {params!r:.60}")
    scheme = params[0]
    if scheme is per_tensor_affine and len(params) == 3 and isinstance(params[1], float) and type(params[2]) is int:
        return PerTensorAffine(params[1], params[2])
    if scheme in (per_channel_affine, per_channel_affine_float_qparams) and len(params) == 4:
        scales, zero_points, axis = params[1:]
        if (isinstance(scales, TensorImpl) and isinstance(zero_points, TensorImpl) and type(axis) is int
                and scales.dim() == 1 and zero_points.dim() == 1 and scales.numel() == zero_points.numel()):
            return PerChannelAffine(scales, zero_points, axis)
    raise RuntimeError(f"lantern cannot rebuild a quantized tensor with quantizer {params!r:.80} from a checkpoint "
                       "(per_tensor_affine, per_channel_affine and per_channel_affine_float_qparams are supported)")


def rebuild_qtensor(storage, storage_offset, size, stride, params, requires_grad, backward_hooks, check_geometry):
    """torch._utils._rebuild_qtensor over a loaded storage; `check_geometry(storage, offset, size, stride, dtype)`
    is the checkpoint loader's bounds check."""
    dtype = storage.dtype
    if not isinstance(dtype, QuantizedDtype):
        raise RuntimeError(f"invalid quantized tensor in checkpoint: its storage holds {dtype!r:.40}")
    quantizer = quantizer_from_params(params)
    if isinstance(quantizer, PerChannelAffine) and not (0 <= quantizer.axis < len(size)
                                                        and size[quantizer.axis] == quantizer.scales.numel()):
        raise RuntimeError(f"invalid quantized tensor in checkpoint: {quantizer.scales.numel()} channels along axis "
                           f"{quantizer.axis} of a tensor of size {list(size)}")
    size, stride, offset = check_geometry(storage.storage, storage_offset, size, stride, dtype)
    if requires_grad:
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    return guard(make_tensor(storage.storage, size, stride, offset, dtype, QuantizedCPUBackend(quantizer)))


def reduce_quantized(t):
    """Plain pickling: the storage (pickled once, so views stay views), the geometry, the dtype and the quantizer."""
    return (rebuild_pickled, (t._storage, t._offset, tuple(t._size), tuple(t._stride), t.dtype.name,
                              quantizer_params(t)))


def rebuild_pickled(storage, offset, size, stride, dtype_name, params):
    return guard(make_tensor(storage, size, stride, offset, _BY_NAME[dtype_name],
                             QuantizedCPUBackend(quantizer_from_params(params))))


_BY_NAME = {d.name: d for d in QUANTIZED}
