"""Chrome trace files: `{"traceEvents": [...]}` with one complete ("ph": "X") event per call, ts and dur in µs,
as torch.profiler writes them; chrome://tracing and ui.perfetto.dev draw them as nested bars.

>>> import json, os, tempfile
>>> from lantern.profiler.events import FunctionEvent
>>> path = os.path.join(tempfile.mkdtemp(), "trace.json")
>>> write_chrome_trace([FunctionEvent(0, "aten::mul", 1.0, 3.5, input_shapes=[[2], []])], path)
>>> event = json.load(open(path))["traceEvents"][-1]
>>> event["name"], event["ph"], event["ts"], event["dur"], event["args"]["Input Dims"]
('aten::mul', 'X', 1.0, 2.5, [[2], []])
"""
import json
import os
import threading


def _category(evt):
    if evt.is_user_annotation:
        return "user_annotation"
    return "cpu_op"


def write_chrome_trace(events, path):
    """Write `events` (FunctionEvent) to `path` in the Chrome trace event format."""
    pid = os.getpid()
    tid = threading.get_ident() & 0x7FFFFFFF
    trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
             {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"thread {tid} (python)"}}]
    for evt in events:
        args = {"External id": evt.id}
        if evt.input_shapes is not None:
            args["Input Dims"] = evt.input_shapes
        trace.append({"ph": "X", "cat": _category(evt), "name": evt.name, "pid": pid, "tid": tid,
                      "ts": round(evt.time_range.start, 3), "dur": round(evt.time_range.elapsed_us(), 3), "args": args})
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "displayTimeUnit": "ms", "traceName": str(path), "traceEvents": trace}, f)
