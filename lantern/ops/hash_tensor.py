"""torch.hash_tensor: the XOR of a tensor's elements' bits (mode 0, the only one torch has), over all or some dims.

Each element is widened to its 64-bit kind (float64 for floating types, int64 for integers and bool) and its 8 bytes
read as a uint64; the hash is the XOR of those words, so it is a uint64 tensor, and equal tensors hash equally
whatever their layout. Not differentiable.

>>> import lantern as torch
>>> torch.hash_tensor(torch.tensor([True, False, True])).item()
0
>>> torch.hash_tensor(torch.tensor([[1.5, 2.0], [3.0, -0.0]]), 1).tolist()
[9221120237041090560, 13837309855095848960]
"""
import numpy as np

from ..core import dtype as dt
from .derivative import nondifferentiable
from .reduction import _axes, _check_nonempty, _dims, reduced_shape
from .registry import structured


def _hash_tensor_meta(self, dim=(), keepdim=False, mode=0):
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    if self.dtype.is_complex or self.dtype in dt.LIMITED_UNSIGNED:
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{self.dtype.legacy}'")
    _check_nonempty("hash_tensor", self, dim)
    return reduced_shape(self._size, _dims(self, dim), keepdim), dt.uint64


def _hash_tensor_impl(xp, out, dtype, self, dim=(), keepdim=False, mode=0):
    words = self.astype(np.float64 if self.dtype.kind == "f" or self.dtype == dt.bfloat16.np else np.int64)
    xp.bitwise_xor.reduce(words.view(np.uint64), axis=_axes(self, dim), keepdims=keepdim, out=out)


structured("hash_tensor(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0) -> Tensor", _hash_tensor_meta,
           _hash_tensor_impl, inplace=False, exact_out_dtype=True)
nondifferentiable("hash_tensor")
