"""One DistributedDataParallel step as a timeline, read from the profiler's events, and how much of the gradient
all-reduce backward hid.

The reducer marks its phases as profiler ranges: "reducer::mark_bucket_ready[i]" posts bucket i's all_reduce (inside
it lantern.distributed records "c10d::allreduce_", and "gloo:all_reduce" from posting to completion),
"reducer::finalize_backward" starts when the engine has run every node, and "reducer::wait[i]" is the time the step
blocks on bucket i. So for each bucket:

- in flight: the "gloo:all_reduce" range, posting to completion;
- hidden: the part of it before backward ended (the start of finalize_backward), when autograd was still computing;
- exposed: its wait, the time the step stood still for it.

>>> import lantern, lantern.nn as nn, lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 64), nn.Linear(64, 2)),
...                                             bucket_cap_mb=0.0002)
>>> model(lantern.ones(2, 4)).sum().backward()       # the first step records the order; the next forward rebuilds
>>> with lantern.profiler.profile() as prof:
...     model(lantern.ones(2, 4)).sum().backward()
>>> for row in step_timeline(prof.events()):
...     if not row.name.startswith(("aten", "c10d", "gloo")):
...         print(row.name)
DistributedDataParallel.forward
reducer::prepare_for_backward
SumBackward0
AddmmBackward0
torch::autograd::AccumulateGrad
TBackward0
torch::autograd::AccumulateGrad
reducer::mark_bucket_ready[0]
AddmmBackward0
torch::autograd::AccumulateGrad
reducer::mark_bucket_ready[1]
TBackward0
torch::autograd::AccumulateGrad
reducer::mark_bucket_ready[2]
reducer::finalize_backward
reducer::wait[0]
reducer::wait[1]
reducer::wait[2]
>>> [bucket.index for bucket in bucket_overlap(prof.events())]
[0, 1, 2]
>>> dist.destroy_process_group()
"""
from dataclasses import dataclass

__all__ = ["step_timeline", "format_timeline", "bucket_overlap", "format_overlap", "TimelineRow", "BucketOverlap"]

_ENGINE_WRAPPER = "autograd::engine::evaluate_function: "
_OWN_RANGES = ("DistributedDataParallel.", "reducer::")


@dataclass
class TimelineRow:
    """One range of the step: milliseconds from the step's first event."""
    start_ms: float
    end_ms: float
    name: str


@dataclass
class BucketOverlap:
    """Bucket `index`'s all_reduce: milliseconds in flight, hidden behind backward, and waited for."""
    index: int
    in_flight_ms: float
    hidden_ms: float
    exposed_ms: float


def _wanted(name):
    """DDP's ranges, the collectives, backward nodes and aten ops (not the engine's wrapper rows, which repeat the
    node rows, nor the reducer's copies into buckets)."""
    return not name.startswith(_ENGINE_WRAPPER) and name != "reducer::copy_grad_to_bucket"


def step_timeline(events):
    """[TimelineRow] of the profiled events in start order (see `format_timeline`)."""
    events = sorted(events, key=lambda e: e.time_range.start)
    origin = events[0].time_range.start if events else 0.0
    return [TimelineRow((e.time_range.start - origin) / 1000, (e.time_range.end - origin) / 1000, e.name)
            for e in events if _wanted(e.name)]


def format_timeline(rows, include=_OWN_RANGES + ("gloo:", "torch::autograd::AccumulateGrad")):
    """The rows whose names start with one of `include`, one line each: start and end in ms, then the name."""
    return "\n".join(f"{row.start_ms:8.3f} {row.end_ms:8.3f}  {row.name}" for row in rows
                     if row.name.startswith(include))


def _named(events, name):
    return [e for e in events if e.name == name]


def bucket_overlap(events):
    """[BucketOverlap] for each bucket launched in the profiled step, from its ranges (module docstring)."""
    events = list(events)
    finalize = _named(events, "reducer::finalize_backward")
    if not finalize:
        return []
    backward_end = finalize[0].time_range.start
    works = _named(events, "gloo:all_reduce")
    rows = []
    index = 0
    while _named(events, f"reducer::mark_bucket_ready[{index}]"):
        launch = _named(events, f"reducer::mark_bucket_ready[{index}]")[0].time_range
        work = next(w.time_range for w in works if launch.start <= w.time_range.start <= launch.end)
        wait = _named(events, f"reducer::wait[{index}]")[0].time_range
        hidden = max(0.0, min(work.end, backward_end) - work.start)
        rows.append(BucketOverlap(index, (work.end - work.start) / 1000, hidden / 1000,
                                  (wait.end - wait.start) / 1000))
        index += 1
    return rows


def format_overlap(rows):
    """A table of `bucket_overlap`'s rows and their total, with the share of in-flight time that was hidden."""
    lines = ["bucket  in flight ms  hidden ms  exposed wait ms"]
    lines += [f"{r.index:>6}  {r.in_flight_ms:12.3f}  {r.hidden_ms:9.3f}  {r.exposed_ms:15.3f}" for r in rows]
    in_flight, hidden = sum(r.in_flight_ms for r in rows), sum(r.hidden_ms for r in rows)
    lines.append(f"{'total':>6}  {in_flight:12.3f}  {hidden:9.3f}  {sum(r.exposed_ms for r in rows):15.3f}")
    share = hidden / in_flight if in_flight else 0.0
    lines.append(f"hidden behind backward: {share:.0%} of the all-reduce time in flight")
    return "\n".join(lines)
