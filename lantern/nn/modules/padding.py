"""Padding layers (torch.nn.modules.padding): Constant/Zero, Reflection, Replication and Circular, in 1-3 dims.

padding is an int (every side) or a tuple of 2·n sizes in F.pad's order: (left, right, top, bottom, front, back).

>>> import lantern
>>> lantern.nn.ZeroPad2d((1, 0, 2, 0))(lantern.ones(1, 2, 2)).shape
lantern.Size([1, 4, 3])
>>> lantern.nn.ReflectionPad1d(2)(lantern.arange(4.).view(1, 1, 4)).view(-1).tolist()
[2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0, 1.0]
>>> lantern.nn.ConstantPad3d(1, 3.5)
ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=3.5)
"""
from .. import functional as F
from .conv import _ntuple
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    """F.pad(input, padding, mode); subclasses set the mode and the number of padded dims."""

    mode = "constant"
    dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self.dims)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with a constant value."""
    dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with a constant value."""
    dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims with a constant value."""
    dims = 3


class _ZeroPad:
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pads the last dim with zeros."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pads the last two dims with zeros."""


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Pads the last three dims with zeros."""


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Pads the last dim with its reflection (the edge value is not repeated)."""
    dims = 1


class ReflectionPad2d(_ReflectionPadNd):
    """Pads the last two dims with their reflection."""
    dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Pads the last three dims with their reflection."""
    dims = 3


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Pads the last dim by repeating its edge values."""
    dims = 1


class ReplicationPad2d(_ReplicationPadNd):
    """Pads the last two dims by repeating their edge values."""
    dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Pads the last three dims by repeating their edge values."""
    dims = 3


class _CircularPadNd(_PadNd):
    """Circular padding checks the input's dims itself, as PyTorch's module does."""

    mode = "circular"

    def forward(self, input):
        if input.dim() not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pads the last dim by wrapping around."""
    dims = 1


class CircularPad2d(_CircularPadNd):
    """Pads the last two dims by wrapping around."""
    dims = 2


class CircularPad3d(_CircularPadNd):
    """Pads the last three dims by wrapping around."""
    dims = 3

