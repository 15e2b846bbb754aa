"""ChannelShuffle (torch.nn.modules.channelshuffle): interleave the channels of groups, as ShuffleNet does.

>>> import lantern
>>> lantern.nn.ChannelShuffle(2)(lantern.arange(4.0).view(1, 4, 1, 1)).flatten().tolist()
[0.0, 2.0, 1.0, 3.0]
"""
from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """(N, C, *) -> (N, C, *) with channel g·(C/groups) + j moved to j·groups + g."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
