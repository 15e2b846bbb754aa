"""torch.accelerator.graphs: capturing work into a replayable accelerator graph; without an accelerator,
constructing one raises PyTorch's RuntimeError.

>>> lantern.accelerator.graphs.Graph()
Traceback (most recent call last):
RuntimeError: Cannot access accelerator device when none is available.
"""
from ._unavailable import _no_accelerator

__all__ = ["Graph"]


class Graph:
    """A captured accelerator graph."""

    def __init__(self, *args, **kwargs):
        raise _no_accelerator()
