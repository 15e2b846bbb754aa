"""Profiler events as torch names them: FunctionEvent (one call), FunctionEventAvg (a row of key_averages), and
EventList (a list of either, with `.table()`, `.key_averages()` and `.export_chrome_trace()`).

Times are microseconds (floats), memory is bytes. A dispatched op is named like its ATen counterpart
("aten::add"), a backward node appears twice, as torch's engine shows it ("autograd::engine::evaluate_function:
MulBackward0" around "MulBackward0"), and a record_function range under its own name.

>>> a = FunctionEvent(0, "aten::add", 0.0, 5.0)
>>> b = FunctionEvent(1, "aten::add", 10.0, 12.0)
>>> row = EventList([a, b]).key_averages()[0]
>>> row.key, row.count, row.cpu_time_total, row.cpu_time
('aten::add', 2, 7.0, 3.5)
"""
from .chrome import write_chrome_trace
from .table import build_table, format_time


class Interval:
    """A [start, end] time range in microseconds."""

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class _TimeStrings:
    """The `*_str` forms of the times, formatted as the table shows them."""

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def cpu_time_str(self):
        return format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self):
        return format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self):
        return format_time(self.self_cpu_time_total)

    # lantern measures host time only: the device columns are always zero
    device_time = device_time_total = self_device_time_total = 0.0
    cuda_time = cuda_time_total = self_cuda_time_total = 0.0
    device_memory_usage = self_device_memory_usage = 0
    cuda_memory_usage = self_cuda_memory_usage = 0


class FunctionEvent(_TimeStrings):
    """One profiled call: its name, time range, input shapes, memory, and its place in the call tree."""

    def __init__(self, id, name, start_us, end_us, input_shapes=None, cpu_memory_usage=0,
                 is_user_annotation=False, thread=0):
        self.id = id
        self.name = name
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes
        self.cpu_memory_usage = cpu_memory_usage
        self.is_user_annotation = is_user_annotation
        self.thread = thread
        self.count = 1
        self.cpu_parent = None
        self.cpu_children = []

    @property
    def key(self):
        return self.name

    @property
    def trace_name(self):
        return self.name

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def append_cpu_child(self, child):
        self.cpu_children.append(child)
        child.cpu_parent = self

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total_str} "
                f"self_cpu_time={self.self_cpu_time_total_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg(_TimeStrings):
    """The events sharing one key (a name, and the input shapes when grouped by them), summed."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.is_user_annotation = False
        self.cpu_parent = None
        self.cpu_children = None

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events that prints as torch's profiler table."""

    def __init__(self, *args, profile_memory=False, **kwargs):
        super().__init__(*args, **kwargs)
        self._profile_memory = profile_memory

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The events as torch's table: sort_by an attribute ("self_cpu_time_total", "cpu_time_total",
        "count", "cpu_memory_usage", ...), at most row_limit rows (-1: all)."""
        return build_table(self, sort_by=sort_by, row_limit=row_limit, max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           profile_memory=self._profile_memory, top_level_events_only=top_level_events_only,
                           time_unit=time_unit)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """One FunctionEventAvg per name (and input shapes, when grouped by them), in order of first appearance."""
        if group_by_stack_n:
            raise NotImplementedError("lantern's profiler records no Python stacks: group_by_stack_n must be 0")
        rows = {}
        for evt in self:
            key = (evt.key, str(evt.input_shapes)) if group_by_input_shapes else evt.key
            row = rows.get(key)
            if row is None:
                row = rows[key] = FunctionEventAvg()
            row.add(evt)
        if not group_by_input_shapes:
            for row in rows.values():
                row.input_shapes = ""   # as torch: the shapes column shows only when grouped by them
        return EventList(rows.values(), profile_memory=self._profile_memory)

    def total_average(self):
        """All events summed into one FunctionEventAvg (key "Total")."""
        total = FunctionEventAvg()
        for evt in self:
            total.count += evt.count
            total.cpu_time_total += evt.cpu_time_total
            total.self_cpu_time_total += evt.self_cpu_time_total
            total.cpu_memory_usage += evt.cpu_memory_usage
            total.self_cpu_memory_usage += evt.self_cpu_memory_usage
        total.key = "Total"
        return total

    @property
    def self_cpu_time_total(self):
        return sum(evt.self_cpu_time_total for evt in self)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (open it in chrome://tracing or ui.perfetto.dev)."""
        write_chrome_trace(self, path)

    def __str__(self):
        return self.table()
