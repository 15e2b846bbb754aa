"""Upsample, UpsamplingNearest2d and UpsamplingBilinear2d (torch.nn.modules.upsampling): F.interpolate as a layer.

>>> import lantern
>>> up = lantern.nn.Upsample(scale_factor=2, mode="bilinear")
>>> up, up(lantern.zeros(1, 1, 2, 3)).shape
(Upsample(scale_factor=2.0, mode='bilinear'), lantern.Size([1, 1, 4, 6]))
>>> lantern.nn.UpsamplingBilinear2d(size=(3, 3))(lantern.arange(4.).view(1, 1, 2, 2)).view(-1).tolist()
[0.0, 0.5, 1.0, 1.0, 1.5, 2.0, 2.0, 2.5, 3.0]
"""
from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resize to `size` or by `scale_factor` with F.interpolate's modes (nearest, linear, bilinear, bicubic, ...)."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample with mode='nearest' (for 4-D input)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode='bilinear' and align_corners=True (for 4-D input)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
