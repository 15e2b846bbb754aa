"""torch.cuda.streams: CUDA streams and events. A CPU build has the classes but cannot make either.

>>> lantern.cuda.Stream()
Traceback (most recent call last):
RuntimeError: torch.cuda.Stream requires CUDA support
"""
from ..core.absent_device import dummy_class_error


class Stream:
    """A queue of GPU work; needs CUDA to exist."""

    def __new__(cls, device=None, priority=0, **kwargs):
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class ExternalStream(Stream):
    """A stream made elsewhere (by its pointer); needs CUDA to exist."""

    def __new__(cls, stream_ptr, device=None, **kwargs):
        raise RuntimeError("torch.cuda.ExternalStream requires CUDA support")


class Event:
    """A marker in a stream, for synchronisation and timing; its C base is a placeholder in a CPU build."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False, external=False):
        raise dummy_class_error("Event")
