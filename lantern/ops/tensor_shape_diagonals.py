"""Diagonals: diag_embed and trace (kernels with derivatives), diag and block_diag (composites).

>>> lantern.diag(lantern.tensor([1, 2])).tolist(), lantern.arange(9).view(3, 3).trace().item()
([[1, 0], [0, 2]], 12)
>>> lantern.block_diag(lantern.ones(1, 1), 2 * lantern.ones(1, 2)).tolist()
[[1.0, 0.0, 0.0], [0.0, 2.0, 2.0]]
"""
from ..core import dtype as dt
from ..core.layout import contiguous_format
from .dispatcher import call
from .meta_util import operands_result_type, wrap_dim
from .pointwise_common import _require_tensor
from .registry import composite, get, structured
from .derivative import derivative
from .derivative_helpers import zeros_like
from .tensor_shape import _copy_into


# ---- diagonals -------------------------------------------------------------------------------------------------

def _diag_embed_meta(self, offset=0, dim1=-2, dim2=-1):
    _require_tensor("diag_embed", self)
    d1, d2 = wrap_dim(dim1, self.dim() + 1), wrap_dim(dim2, self.dim() + 1)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    side = (self._size[-1] if self.dim() else 1) + abs(offset)
    shape = list(self._size[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, side)
    return tuple(shape), self.dtype


def _diag_embed_impl(xp, out, dtype, self, offset=0, dim1=-2, dim2=-1):
    d1, d2 = wrap_dim(dim1, out.ndim), wrap_dim(dim2, out.ndim)
    out[...] = 0
    moved = xp.moveaxis(out, (d1, d2), (-2, -1))
    k = xp.arange(self.shape[-1] if self.ndim else 1)
    moved[..., k + max(-offset, 0), k + max(offset, 0)] = self


structured("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor", _diag_embed_meta,
           _diag_embed_impl, inplace=False, out=False)


derivative("diag_embed", self="grad.diagonal(offset, dim1, dim2)")


def diag(input, diagonal=0, *, out=None):
    """A 1-D tensor's diagonal matrix (the entries on the `diagonal`-th diagonal), or a matrix's diagonal."""
    _require_tensor("diag", input)
    if input.dim() == 1:
        result = input.diag_embed(diagonal, 0, 1)
    elif input.dim() == 2:
        result = input.diagonal(diagonal).clone(memory_format=contiguous_format)  # a new row-major vector
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    return _copy_into(result, out, "diag.out")


def _trace_meta(self):
    _require_tensor("trace", self)
    if self.dtype is dt.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
    return (), dt.int64 if self.dtype.category == dt.INTEGRAL else self.dtype


def _trace_impl(xp, out, dtype, self):
    half = dtype in (xp.float16, dt.bfloat16.np)  # half types accumulate in float32, as PyTorch's
    out[...] = xp.trace(self, dtype=xp.float32 if half else dtype)


structured("trace(Tensor self) -> Tensor", _trace_meta, _trace_impl, inplace=False, out=False)


def trace_backward(grad, meta):
    return zeros_like(meta).diagonal_scatter(grad.expand(min(meta.size)), 0, 0, 1)


derivative("trace", self="trace_backward(grad, self_meta)", helpers={"trace_backward": trace_backward})


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) placed along the diagonal of a zero matrix: zero-padded rows, then cat."""
    blocks = []
    for i, t in enumerate(tensors):
        _require_tensor("block_diag", t, i + 1, "tensors")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        blocks.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    if not blocks:
        return call(get("empty"), ((1, 0), None, None, None, None, False, None))
    dtype = operands_result_type(list(tensors))
    width = sum(b._size[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b._size[1]
        pieces = [b.new_zeros((b._size[0], left), dtype=dtype), b.to(dtype), b.new_zeros((b._size[0], right),
                                                                                            dtype=dtype)]
        rows.append(call(get("cat"), (pieces, 1)))
        left += b._size[1]
    return call(get("cat"), (rows, 0))


composite("diag", diag)
composite("block_diag", block_diag, method=False)
