"""Padding layers (torch.nn.modules.padding): Constant/Zero, Reflection, Replication and Circular, in 1-3 dims.

padding is an int (every side) or a tuple of 2·n sizes in F.pad's order: (left, right, top, bottom, front, back).
Each family's 1d/2d/3d classes differ only in n, so they are made together, one family a line, at the end.

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


def _per_dims(family, bases, how):
    """The classes {family}1d, {family}2d and {family}3d: for n = 1, 2, 3, a subclass of bases(n) that pads the
    last n dims `how`."""
    classes = []
    for dims, which in ((1, "the last dim"), (2, "the last two dims"), (3, "the last three dims")):
        name = f"{family}{dims}d"
        classes.append(type(name, bases(dims), {"__module__": __name__, "__qualname__": name, "dims": dims,
                                                "__doc__": f"Pads {which} {how}."}))
    return classes


class _ZeroPad:
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class _CircularPadNd(_PadNd):
    """Circular padding checks the input's dims itself, as PyTorch's module does."""

    mode = "circular"

    def forward(self, input):
        if input.dim() not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


ConstantPad1d, ConstantPad2d, ConstantPad3d = _per_dims("ConstantPad", lambda n: (_ConstantPadNd,),
                                                        "with a constant value")
# as in torch, ZeroPad{n}d is a ConstantPad{n}d with value 0 (and a shorter repr)
ZeroPad1d, ZeroPad2d, ZeroPad3d = _per_dims(
    "ZeroPad", lambda n: (_ZeroPad, (ConstantPad1d, ConstantPad2d, ConstantPad3d)[n - 1]), "with zeros")
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _per_dims(
    "ReflectionPad", lambda n: (_ReflectionPadNd,), "by reflection (the edge value is not repeated)")
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _per_dims(
    "ReplicationPad", lambda n: (_ReplicationPadNd,), "by repeating the edge values")
CircularPad1d, CircularPad2d, CircularPad3d = _per_dims("CircularPad", lambda n: (_CircularPadNd,),
                                                        "by wrapping around")
