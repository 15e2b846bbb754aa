"""torch.Stream and torch.Event: the device-generic stream and event. On the CPU (and meta) device, the only ones
lantern's generic classes serve, work runs as it is called, so a stream is always idle and an event has nothing to
mark: as in torch's CPU build, a stream answers query() True and synchronizes at once, and recording an event is
refused ("cpu backend doesn't support events"). lantern.cuda has its own Stream and Event.

>>> import lantern as torch
>>> s = torch.Stream()
>>> s.query(), s.device_type, s.device_index, torch.Event().query()
(True, 0, -1, True)
"""
from .core.device import device as _device
from .core.shown_name import qualified

__all__ = ["Stream", "Event"]

_DEVICE_TYPE_NUMBERS = {"cpu": 0, "meta": 14}  # c10::DeviceType, as torch reports stream.device_type


def _synchronous_device(device, what):
    if device is not None and not isinstance(device, (str, _device)):
        raise RuntimeError("Cannot access accelerator device when none is available.")
    dev = _device("cpu" if device is None else device)
    if dev.type not in _DEVICE_TYPE_NUMBERS:
        raise RuntimeError(f"{what} on {dev.type}: lantern's device-generic streams and events serve the CPU and "
                           f"meta devices; use lantern.{dev.type}'s own")
    return _device(dev.type)


def _no_events():
    return RuntimeError("cpu backend doesn't support events.")


class Stream:
    """A device's queue of work; on the CPU, one that never holds any (stream_id 0)."""

    def __init__(self, device=None, *, priority=0):
        self.device = _synchronous_device(device, "Stream")
        self.priority = priority

    device_index = -1
    stream_id = 0

    @property
    def device_type(self):
        return _DEVICE_TYPE_NUMBERS[self.device.type]

    def query(self):
        """Whether all work queued on the stream is done: always, on a synchronous device."""
        return True

    def synchronize(self):
        """Wait for the stream's work: there is none left."""

    def wait_event(self, event):
        if not isinstance(event, Event):
            raise TypeError(f"wait_event(): argument 'event' must be Event, not {type(event).__name__}")

    def wait_stream(self, stream):
        """Wait for another stream's work: done by recording an event on it, which the CPU cannot."""
        if not isinstance(stream, Stream):
            raise TypeError(f"wait_stream(): argument 'stream' must be Stream, not {type(stream).__name__}")
        raise _no_events()

    def record_event(self, event=None):
        raise _no_events()

    def is_capturing(self):
        """Whether a CUDA graph capture is under way on the stream: never on the CPU."""
        return False

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.device, self.stream_id) == (other.device, other.stream_id)

    def __hash__(self):
        return hash((self.device.type, self.device_index, self.stream_id))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return (f"lantern.Stream device_type={self.device.type}, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    """A marker in a stream's work; a CPU event can be made and queried (never recorded, so complete)."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        self.device = _synchronous_device(device, "Event")
        self.enable_timing, self.blocking, self.interprocess = enable_timing, blocking, interprocess

    event_id = 0

    def query(self):
        return True

    def record(self, stream=None):
        raise _no_events()

    def synchronize(self):
        """Wait until the event completes: it is complete."""

    def wait(self, stream=None):
        """Make `stream` wait for the event: nothing to wait for."""

    def elapsed_time(self, end_event):
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise ValueError("Both events must be recorded before calculating elapsed time.")

    def __repr__(self):
        return qualified(f"Event device_type={self.device.type}, device_index=-1, event_flag=0, "
                         f"event_id={self.event_id}")
