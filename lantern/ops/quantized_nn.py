"""torch's functions made for quantized tensors: max pooling, batch norm with an output quantizer, and an empty
tensor sharing another's quantizer. Each is an op whose only kernel is QuantizedCPU's: a float tensor is refused at
the dispatcher, as in torch.

>>> q = lantern.quantize_per_tensor(lantern.arange(16.).view(1, 1, 4, 4), 0.5, 2, lantern.quint8)
>>> lantern.quantized_max_pool2d(q, [2, 2]).int_repr()
tensor([[[[12, 16],
          [28, 32]]]], dtype=lantern.uint8)
"""
import numpy as np

from ..backends.cpu import cpu
from ..backends.quantized import PerTensorAffine, guard, make_quantized, quantize_array
from ..core.dispatch_keys import DispatchKey
from ..core.tensor_impl import make_tensor
from .meta_util import strides_in_order
from .quantized import _not_quantized, _register
from .derivative import nondifferentiable
from .registry import COMPOSITES, composite

QUANTIZED = DispatchKey.QuantizedCPU


def _pool(rank, name):
    def kernel(op, args):
        q, kernel_size, stride, padding, dilation, ceil_mode = args
        if q.dim() != rank + 2 and not (rank < 3 and q.dim() == rank + 1):
            raise RuntimeError(f"Expecting the input tensor of rank {rank + 2}.")
        pool = COMPOSITES[f"max_pool{rank}d"]
        return pool(q, kernel_size, stride if stride else None, padding, dilation, ceil_mode)
    kernel.__name__ = kernel.__qualname__ = f"_{name}_kernel"
    return kernel


for _rank in (1, 2, 3):
    _name = f"quantized_max_pool{_rank}d"
    _register(f"{_name}(Tensor self, int[] kernel_size, int[] stride=[], int[] padding=0, int[] dilation=1, "
              "bool ceil_mode=False) -> Tensor", {QUANTIZED: _pool(_rank, _name), DispatchKey.CPU: _not_quantized},
              method=False)


def _batch_norm_kernel(op, args):
    """Batch norm of the dequantized values (running statistics), quantized with the output scale and zero point."""
    q, weight, bias, mean, var, eps, output_scale, output_zero_point = args
    values = COMPOSITES["batch_norm"](q.dequantize(), weight, bias, mean, var, False, 0.0, eps, False)
    ints = quantize_array(cpu.array(values), q.dtype, output_scale, output_zero_point, fused=q.dtype.bits == 8)
    quantizer = PerTensorAffine(output_scale, output_zero_point)
    if q.dim() not in (4, 5):
        return make_quantized(ints, q.dtype, quantizer)
    # channels last, as torch's kernel writes it: the integers stored N, (D,) H, W, C
    order = (0, *range(2, q.dim()), 1)
    stored = make_quantized(np.ascontiguousarray(ints.transpose(order)), q.dtype, quantizer)
    strides = strides_in_order(q._size, (1, *range(q.dim() - 1, 1, -1), 0))
    return guard(make_tensor(stored._storage, q._size, strides, 0, q.dtype, stored._backend))


_register("quantized_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, float eps, "
          "float output_scale, int output_zero_point) -> Tensor",
          {QUANTIZED: _batch_norm_kernel, DispatchKey.CPU: _not_quantized}, method=False)


def empty_quantized(size, qtensor, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """An uninitialised quantized tensor of `size` with qtensor's dtype and quantizer."""
    if not qtensor.is_quantized:
        raise RuntimeError("empty_quantized: qtensor must be a quantized tensor (make one with "
                           "lantern.quantize_per_tensor)")
    return qtensor._backend.empty(tuple(size), dtype or qtensor.dtype)


composite("empty_quantized", empty_quantized, method=False)
nondifferentiable("quantized_max_pool1d", "quantized_max_pool2d", "quantized_max_pool3d", "quantized_batch_norm")
