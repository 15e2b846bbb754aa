"""`profile()`, `record_function()` and `ProfilerActivity`, as torch.profiler has them.

>>> from lantern.profiler import profile, record_function
>>> x = lantern.ones(8, 8)
>>> with profile(record_shapes=True) as prof:
...     with record_function("step"):
...         y = (x @ x).sum()
>>> [(e.name, e.cpu_parent.name if e.cpu_parent else None, e.input_shapes)
...  for e in prof.events()]  # doctest: +NORMALIZE_WHITESPACE
[('step', None, []), ('aten::matmul', 'step', [[8, 8], [8, 8]]), ('aten::mm', 'aten::matmul', [[8, 8], [8, 8]]),
 ('aten::sum', 'step', [[8, 8], [], [], []])]
"""
import contextlib
import enum

from .recorder import Recorder
from .watchers import install, remove
from ..core.state import tls


class ProfilerActivity(enum.Enum):
    """What to profile. lantern times host (CPU) code only; a CUDA activity adds no device timings."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


def supported_activities():
    """The activities lantern's profiler records."""
    return {ProfilerActivity.CPU}


class profile:
    """Records every dispatched op, backward node and record_function range in this thread while active.

    record_shapes adds each op's input shapes (`key_averages(group_by_input_shape=True)` groups by them);
    profile_memory adds the bytes lantern's CPU allocator holds after each call minus before (frees count
    negative), as torch's "CPU Mem" columns do."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False, **kwargs):
        unsupported = [name for name, value in (("schedule", schedule), ("on_trace_ready", on_trace_ready))
                       if value is not None]
        unsupported += [name for name, value in (("with_stack", with_stack), ("with_flops", with_flops),
                                                 ("with_modules", with_modules)) if value]
        unsupported += sorted(kwargs)
        if unsupported:
            raise NotImplementedError(
                f"lantern.profiler.profile does not support {', '.join(unsupported)}: profile a region with "
                "`with profile(...) as prof:` and read prof.key_averages() / prof.export_chrome_trace(path)")
        activities = set(activities) if activities is not None else supported_activities()
        for activity in activities:
            if not isinstance(activity, ProfilerActivity):
                raise TypeError(f"activities must be ProfilerActivity members, got {activity!r}")
        self.activities = activities
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.step_num = 0
        self._recorder = None
        self._events = None

    def start(self):
        """Begin recording (what `with profile():` does on entry)."""
        if self._recorder is not None:
            raise RuntimeError("this profiler is already running")
        self._events = None
        self._recorder = install(Recorder(self.record_shapes, self.profile_memory))

    def stop(self):
        """Stop recording; the events are kept for key_averages(), events() and export_chrome_trace()."""
        recorder = self._recorder
        if recorder is None:
            return
        remove(recorder)
        recorder.close()
        self._events = recorder.events(self.profile_memory)
        self._recorder = None

    def step(self):
        """Mark the end of a training step (kept for torch's API; without a schedule it only counts)."""
        self.step_num += 1

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def events(self):
        """Every recorded call as a FunctionEvent, in the order they started."""
        if self._events is None:
            raise RuntimeError("the profiler has no results yet: read them after the `with profile()` block")
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """One row per op name (and input shapes, when grouped by them): `.table(sort_by=..., row_limit=...)`."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace JSON file (chrome://tracing, ui.perfetto.dev)."""
        self.events().export_chrome_trace(path)


class record_function(contextlib.ContextDecorator):
    """A named range of the user's own: a row of the profiler's table, a header line in the dispatch trace.
    Costs nothing when nothing watches."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._watchers = []   # one entry per active use (a decorated function may recurse)

    def __enter__(self):
        watcher = tls.dispatch_trace
        self._watchers.append(watcher)
        if watcher is not None:
            watcher.enter_range(self.name)
        return self

    def __exit__(self, *exc):
        watcher = self._watchers.pop()
        if watcher is not None:
            watcher.exit_range(self.name)
        return False
