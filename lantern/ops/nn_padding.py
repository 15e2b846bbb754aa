"""Padding: `constant_pad_nd` (an op with its derivative) and torch.nn.functional.pad's other modes
(reflect, replicate, circular), which index the input.

>>> lantern.nn.functional.pad(lantern.tensor([[1., 2.]]), (1, 1), mode="reflect").tolist()
[[2.0, 1.0, 2.0, 1.0]]
"""
from ..core import dtype as dt
from .meta_util import shape_str
from .registry import structured
from .derivative import derivative
from .nn_common import _op
from .nn_windows import pad_array
from ..core.overridable import overridable


__all__ = ["pad"]


# ---- padding ---------------------------------------------------------------------------------------------------

def _pad_meta(self, pad, value=0):
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)} (constant_pad_nd: give "
                           "(left, right) pairs, last dim first)")
    if len(pad) // 2 > self.dim():
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. "
                           f"Pad length is {len(pad)} while the input has {self.dim()} dimensions.")
    size = list(self._size)
    for i in range(len(pad) // 2):
        d = self.dim() - 1 - i
        size[d] += pad[2 * i] + pad[2 * i + 1]
        if size[d] < 0:
            raise RuntimeError(f"The input size {self._size[d]}, plus negative padding {pad[2 * i]} and "
                               f"{pad[2 * i + 1]} resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of your input.")
    return tuple(size), self.dtype


def _pad_impl(xp, out, dtype, self, pad, value=0):
    k = len(pad) // 2
    lo = tuple(pad[2 * i] for i in reversed(range(k)))
    hi = tuple(pad[2 * i + 1] for i in reversed(range(k)))
    out[...] = pad_array(xp, self, lo, hi, value)


structured("constant_pad_nd(Tensor self, int[] pad, Scalar value=0) -> Tensor", _pad_meta, _pad_impl,
           inplace=False, out=False, method=False)


def pad_backward(grad, pad):
    """constant_pad_nd's gradient: the padding cut off again (a negative pad crops)."""
    return _op("constant_pad_nd", grad, tuple(-p for p in pad), 0)


_PAD_INDEX = {
    "reflect": lambda i, n: (n - 1) - ((n - 1) - i.abs()).abs(),
    "replicate": lambda i, n: i.clamp(0, n - 1),
    "circular": lambda i, n: i.remainder(n),
}


def _check_pad_mode(input, pad, mode):
    k = len(pad) // 2
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if k > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if not 1 <= k <= 3 or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: "
            "padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 "
            "dimensions)")
    for i in range(k):
        d = input.dim() - 1 - i
        lo, hi, n = pad[2 * i], pad[2 * i + 1], input._size[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {d} of input {shape_str(input._size)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError(f"Padding value causes wrapping around more than once. (pad: circular padding "
                               f"({lo}, {hi}) of dimension {d} of size {n})")


def _index_pad(input, pad, mode):
    """reflect/replicate/circular: each padded dim gathered through an index that folds positions back into the
    input (an index op, so the gradient sums the copies, to any order)."""
    out = input
    for i in range(len(pad) // 2):
        d = input.dim() - 1 - i
        lo, hi, n = pad[2 * i], pad[2 * i + 1], input._size[d]
        start = 0
        if mode == "circular":  # a negative amount crops first; the wrap is around what is left
            start = max(-lo, 0)
            n -= start + max(-hi, 0)
            lo, hi = max(lo, 0), max(hi, 0)
        positions = _op("arange", -lo, n + hi, 1, dt.int64, None, input.device, None, False)
        index = _PAD_INDEX[mode](positions, n) + start
        out = _op("index.Tensor", out, [None] * d + [index])
    return out


@overridable
def pad(input, pad, mode="constant", value=None):
    """pad(input, pad, mode='constant', value=None): pad the last len(pad)/2 dims by (left, right) pairs, last dim
    first, with `value` or by reflecting, replicating or wrapping the edges (mode 'reflect', 'replicate',
    'circular'). Negative amounts crop."""
    pad = tuple(int(p) for p in pad)
    if mode == "constant":
        return _op("constant_pad_nd", input, pad, 0 if value is None else value)
    if mode not in _PAD_INDEX:
        raise NotImplementedError(f"Unrecognised padding mode {mode} (pad: use 'constant', 'reflect', 'replicate' "
                                  "or 'circular')")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_pad_mode(input, pad, mode)
    return _index_pad(input, pad, mode)


derivative("constant_pad_nd", helpers={"pad_backward": pad_backward}, self="pad_backward(grad, pad)")
