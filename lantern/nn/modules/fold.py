"""Fold and Unfold (torch.nn.modules.fold): sliding blocks of an image to columns and back.

>>> import lantern
>>> cols = lantern.nn.Unfold(kernel_size=2)(lantern.ones(1, 3, 4, 4))
>>> cols.shape, lantern.nn.Fold(output_size=(4, 4), kernel_size=2)(cols).shape
(lantern.Size([1, 12, 9]), lantern.Size([1, 3, 4, 4]))
"""
from .. import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """(N, C·∏kernel, L) columns -> (N, C, *output_size), summing where blocks overlap (F.fold)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """(N, C, H, W) -> (N, C·∏kernel, L): each sliding block flattened into a column (F.unfold)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")
