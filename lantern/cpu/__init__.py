"""torch.cpu: the CPU under the names torch.cuda uses, for device-agnostic code, and torch.cpu.amp.

Everything runs on the CPU at once, so synchronizing and streams have nothing to do.

>>> lantern.cpu.is_available(), lantern.cpu.device_count(), lantern.cpu.current_device()
(True, 1, 'cpu')
>>> with lantern.cpu.stream(lantern.cpu.Stream()) as s:
...     lantern.cpu.current_stream() is s.stream
True
"""
from . import amp  # noqa: F401

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream", "stream",
           "set_device", "device_count", "Stream", "StreamContext", "Event"]


def is_available():
    return True


def is_initialized():
    return True


def synchronize(device=None):
    """Wait for the CPU's work: it is done by the time this is called."""


def device_count():
    return 1


def set_device(device):
    """There is one CPU device: nothing to select."""


def current_device():
    return "cpu"


class Stream:
    """The CPU's stream: work runs in order as it is issued."""

    def __init__(self, priority=-1):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self):
        pass

    def wait_event(self, event):
        pass


class Event:
    """An event on the CPU: complete as soon as it is recorded."""

    def query(self):
        return True

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass


_current_stream = Stream()


def current_stream(device=None):
    return _current_stream


class StreamContext:
    """`with lantern.cpu.stream(s):` makes s the current stream inside the block."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = None

    def __enter__(self):
        global _current_stream
        if self.stream is None:
            return self
        self.prev_stream = _current_stream
        _current_stream = self.stream
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        global _current_stream
        if self.stream is not None:
            _current_stream = self.prev_stream


def stream(stream):
    return StreamContext(stream)
