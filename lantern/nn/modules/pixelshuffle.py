"""PixelShuffle and PixelUnshuffle (torch.nn.modules.pixelshuffle): trade channels for spatial resolution.

>>> import lantern
>>> lantern.nn.PixelShuffle(2)(lantern.zeros(1, 8, 3, 3)).shape
lantern.Size([1, 2, 6, 6])
>>> lantern.nn.PixelUnshuffle(3)
PixelUnshuffle(downscale_factor=3)
"""
from .. import functional as F
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """(*, C·r², H, W) -> (*, C, H·r, W·r), with r = upscale_factor."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H·r, W·r) -> (*, C·r², H, W), with r = downscale_factor (the inverse of PixelShuffle)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"
