"""torch's profiler table, column for column: right-aligned columns two spaces apart, dashed rules, times in
us/ms/s with three decimals, memory in B/KB/MB/GB, and the "Self CPU time total" line.

>>> format_time(512.25), format_time(1500.0), format_time(2_500_000.0)
('512.250us', '1.500ms', '2.500s')
>>> format_memory(-52), format_memory(2048)
('-52 B', '2.00 KB')
"""
COLUMN_WIDTH = 12
SPACING = 2


def format_time(time_us):
    """A duration in microseconds, in the largest unit (s, ms, us) it reaches."""
    if time_us >= 1_000_000.0:
        return f"{time_us / 1_000_000.0:.3f}s"
    if time_us >= 1000.0:
        return f"{time_us / 1000.0:.3f}ms"
    return f"{time_us:.3f}us"


def _in_unit(time_us, unit):
    divisor = {"s": 1_000_000.0, "ms": 1000.0, "us": 1.0}.get(unit)
    return format_time(time_us) if divisor is None else f"{time_us / divisor:.3f}{unit}"


def format_time_share(time_us, total_us):
    """A share of the total as a percentage with two decimals ("NaN" when nothing was timed)."""
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def format_memory(nbytes):
    """A byte count in the largest unit (GB, MB, KB) it reaches, else in bytes."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _sort_key(sort_by):
    attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
    return lambda evt: getattr(evt, attr)


def build_table(events, sort_by=None, row_limit=100, max_name_column_width=55, max_shapes_column_width=80,
                header=None, profile_memory=False, top_level_events_only=False, time_unit=None):
    """The table text for a list of events (FunctionEvent or FunctionEventAvg)."""
    if not events:
        return ""
    if sort_by is not None:
        events = sorted(events, key=_sort_key(sort_by), reverse=True)
    headers, widths = _columns(events, max_name_column_width, max_shapes_column_width, profile_memory)
    has_shapes = headers[-1] == "Input Shapes"
    gap = " " * SPACING
    row_format = "".join("{:>" + str(w) + "}" + gap for w in widths)
    rule = "".join("-" * w + gap for w in widths)
    line_length = sum(w + SPACING for w in widths) - SPACING
    total = sum(evt.self_cpu_time_total for evt in events)

    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [rule, row_format.format(*headers), rule]
    shown = [evt for evt in events if not (top_level_events_only and evt.cpu_parent is not None)]
    if row_limit is not None and row_limit >= 0:  # torch's row_limit=-1: every row
        shown = shown[:row_limit]
    for evt in shown:
        row = _row(evt, total, time_unit, max_name_column_width, profile_memory)
        if has_shapes:
            row.append(str(evt.input_shapes)[:widths[-1]])
        lines.append(row_format.format(*row))
    lines += [rule, f"Self CPU time total: {_in_unit(total, time_unit)}"]
    return "\n".join(lines) + "\n"


def _columns(events, max_name_column_width, max_shapes_column_width, profile_memory):
    """(headers, widths): the name column as wide as the longest name (within its maximum), then the times,
    memory when profiled, the call count, and input shapes when any event recorded them."""
    name_width = max(len(evt.key) for evt in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [COLUMN_WIDTH] * (len(headers) - 1)
    if any(evt.input_shapes for evt in events):
        shapes_width = max(len(str(evt.input_shapes)) for evt in events) + 4
        if max_shapes_column_width is not None:
            shapes_width = min(shapes_width, max_shapes_column_width)
        headers.append("Input Shapes")
        widths.append(shapes_width)
    return headers, widths


def _row(evt, total, time_unit, max_name_column_width, profile_memory):
    """One event's cells up to the call count; a name too long for its column ends in '...'."""
    name = evt.key
    if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
        name = name[:max_name_column_width - 3] + "..."
    row = [name, format_time_share(evt.self_cpu_time_total, total), _in_unit(evt.self_cpu_time_total, time_unit),
           format_time_share(evt.cpu_time_total, total), _in_unit(evt.cpu_time_total, time_unit),
           _in_unit(evt.cpu_time, time_unit)]
    if profile_memory:
        row += [format_memory(evt.cpu_memory_usage), format_memory(evt.self_cpu_memory_usage)]
    row.append(evt.count)
    return row
