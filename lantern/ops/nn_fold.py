"""im2col / col2im (torch.nn.functional's unfold / fold) and pixel shuffle (a reshape, a permute and a
copy).

>>> lantern.nn.functional.unfold(lantern.arange(4.).view(1, 1, 2, 2), 1).tolist()
[[[0.0, 1.0, 2.0, 3.0]]]
"""
import math

from .meta_util import shape_str
from .registry import composite, structured
from .derivative import derivative
from .nn_common import _op
from .nn_windows import _compute_dtype, _tuple, col2im_array, pad_array, windows
from ..core.overridable import overridable


__all__ = ["unfold", "fold", "pixel_shuffle", "pixel_unshuffle"]


# ---- im2col / col2im (unfold / fold) ---------------------------------------------------------------------------

def _pairs(name, kernel_size, dilation, padding, stride):
    kernel, dilation, padding, stride = (_tuple(v, 2, what, name) for v, what in (
        (kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    for what, v, low in (("kernel size", kernel, 1), ("stride", stride, 1), ("dilation", dilation, 1),
                         ("padding", padding, 0)):
        if min(v) < low:
            word = "greater than zero" if low else "non-negative"
            raise RuntimeError(f"{what} should be {word}, but got {what.replace(' ', '_')}_height: {v[0]} "
                               f"{what.replace(' ', '_')}_width: {v[1]}")
    return kernel, dilation, padding, stride


def _blocks(size, kernel, dilation, padding, stride):
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in zip(size, kernel, dilation, padding,
                                                                                 stride))


def _im2col_args(self, kernel_size, dilation, padding, stride):
    kernel, dilation, padding, stride = _pairs("im2col", kernel_size, dilation, padding, stride)
    if self.dim() not in (3, 4) or 0 in self._size[-3:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {shape_str(self._size)}")
    blocks = _blocks(self._size[-2:], kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(self._size[-2:])}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding "
                           f"blocks as {blocks}, but its components must be at least one.")
    return kernel, dilation, padding, stride, blocks


def _im2col_meta(self, kernel_size, dilation, padding, stride):
    kernel, _, _, _, blocks = _im2col_args(self, kernel_size, dilation, padding, stride)
    return self._size[:-3] + (self._size[-3] * kernel[0] * kernel[1], blocks[0] * blocks[1]), self.dtype


def _im2col_impl(xp, out, dtype, self, kernel_size, dilation, padding, stride):
    kernel, dilation, padding, stride = _pairs("im2col", kernel_size, dilation, padding, stride)
    win = windows(xp, pad_array(xp, self, padding, padding), kernel, stride, dilation)
    lead = win.ndim - 4  # (..., C, oh, ow, kh, kw) -> (..., C, kh, kw, oh, ow)
    order = tuple(range(lead - 1)) + (lead - 1, lead + 2, lead + 3, lead, lead + 1)
    out[...] = win.transpose(order).reshape(out.shape)


structured("im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor",
           _im2col_meta, _im2col_impl, inplace=False, method=False)


def _col2im_geometry(output_size, kernel_size, dilation, padding, stride):
    output_size = _tuple(output_size, 2, "output_size", "col2im")
    kernel, dilation, padding, stride = _pairs("col2im", kernel_size, dilation, padding, stride)
    return output_size, kernel, dilation, padding, stride, _blocks(output_size, kernel, dilation, padding, stride)


def _col2im_meta(self, output_size, kernel_size, dilation, padding, stride):
    geometry = _col2im_geometry(output_size, kernel_size, dilation, padding, stride)
    output_size, kernel, dilation, padding, stride, blocks = geometry
    if self.dim() not in (2, 3) or 0 in self._size[-2:]:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {shape_str(self._size)}")
    cols = self._size[-2]
    if cols % (kernel[0] * kernel[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={cols} and kernel_size={kernel}.")
    if min(blocks) < 1 or blocks[0] * blocks[1] != self._size[-1]:
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, "
                           f"but got input.size(2)={self._size[-1]}.")
    return self._size[:-2] + (cols // (kernel[0] * kernel[1]),) + output_size, self.dtype


def _col2im_impl(xp, out, dtype, self, output_size, kernel_size, dilation, padding, stride):
    output_size, kernel, dilation, padding, stride, blocks = _col2im_geometry(output_size, kernel_size, dilation,
                                                                              padding, stride)
    cols = self.reshape(self.shape[:-2] + (self.shape[-2] // math.prod(kernel),) + kernel + blocks)
    out[...] = col2im_array(xp, cols, output_size, kernel, dilation, padding, stride, _compute_dtype(dtype))


structured("col2im(Tensor self, int[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, "
           "int[2] stride) -> Tensor", _col2im_meta, _col2im_impl, inplace=False, method=False)


@overridable
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding blocks (im2col): (N, C, H, W) -> (N, C*kh*kw, L), channel-major, blocks row-major."""
    if input.dim() < 3:  # PyTorch reads input.size(2) before any check
        raise IndexError(f"Dimension out of range (expected to be in range of [-{input.dim()}, {input.dim() - 1}], "
                         f"but got 2) (unfold takes (C, H, W) or (N, C, H, W) input, got {shape_str(input._size)})")
    return _op("im2col", input, _tuple(kernel_size, 2, "kernel_size", "unfold"), _tuple(dilation, 2, "dilation",
               "unfold"), _tuple(padding, 2, "padding", "unfold"), _tuple(stride, 2, "stride", "unfold"))


@overridable
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum sliding blocks back into an image (col2im), the adjoint of unfold: (N, C*kh*kw, L) -> (N, C, H, W)."""
    return _op("col2im", input, _tuple(output_size, 2, "output_size", "fold"),
               _tuple(kernel_size, 2, "kernel_size", "fold"), _tuple(dilation, 2, "dilation", "fold"),
               _tuple(padding, 2, "padding", "fold"), _tuple(stride, 2, "stride", "fold"))



# ---- pixel shuffle: a reshape, a permute and a copy ------------------------------------------------------------

def _shuffle_check(name, input, factor, word):
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with {input.dim()} "
                           "dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {word}, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): each channel group of r*r becomes an r x r block of pixels."""
    r = upscale_factor
    _shuffle_check("pixel_shuffle", input, r, "upscale_factor")
    *lead, c, h, w = input._size
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(n)) + tuple(n + i for i in (0, 3, 1, 4, 2)))
    return x.contiguous().view(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W): the inverse of pixel_shuffle."""
    r = downscale_factor
    _shuffle_check("pixel_unshuffle", input, r, "downscale_factor")
    *lead, c, h, w = input._size
    for what, size, d in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                               f"input.size({d})={size} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(n)) + tuple(n + i for i in (0, 2, 4, 1, 3)))
    return x.contiguous().view(tuple(lead) + (c * r * r, h // r, w // r))


composite("pixel_shuffle", pixel_shuffle, method=False)
composite("pixel_unshuffle", pixel_unshuffle, method=False)


derivative("im2col", helpers={"call_op": _op}, name="Im2ColBackward0",
           self="call_op('col2im', grad, self_meta.size[-2:], kernel_size, dilation, padding, stride)")
derivative("col2im", helpers={"call_op": _op}, name="Col2ImBackward0",
           self="call_op('im2col', grad, kernel_size, dilation, padding, stride)")
