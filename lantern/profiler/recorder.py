"""The profiler's watcher: one raw record per dispatched op, backward node and record_function range.

While profiling, each call costs two `perf_counter_ns()` reads, a list append and (with record_shapes) its inputs'
sizes; names and strings are made only when events are asked for. A record is a list
`[kind, what, parent, start_ns, end_ns, mem_start, mem_end, input_shapes, engine]`: `what` is the Operator (OP),
the range's name (RANGE), the backward node's name (NODE) or the composite op's name (COMPOSITE); `parent` is the
index of the enclosing record.
A backward node is one range, the engine's whole step for it (pre-hooks, apply, passing gradients on); it becomes
torch's two rows, so the "evaluate_function" rows show no self time of their own.

>>> from lantern.profiler.watchers import install, remove
>>> rec = install(Recorder())
>>> _ = lantern.ones(2) * 2
>>> _ = lantern.matmul(lantern.ones(2, 2), lantern.ones(2))
>>> remove(rec)
>>> [(r[0], getattr(r[1], "name", r[1]), r[2]) for r in rec.records]
[(0, 'ones', -1), (0, 'mul', -1), (0, 'ones', -1), (0, 'ones', -1), (3, 'matmul', -1), (0, 'mv', 4)]
"""
from time import perf_counter_ns

from ..core.allocator import cpu_allocator
from ..core.tensor_impl import TensorImpl
from ..ops.schema import qualified_name
from .events import EventList, FunctionEvent
from .watchers import Watcher, overload_frontend

OP, RANGE, NODE, COMPOSITE = 0, 1, 2, 3


_NODE_NAMES = {"AccumulateGrad": "torch::autograd::AccumulateGrad"}  # as torch's engine names its leaf node


def input_shapes(args):
    """torch's `Input Shapes` entry: a tensor's sizes, [] for anything else (tensor lists included)."""
    return [list(a._size) if isinstance(a, TensorImpl) else [] for a in args]


class Recorder(Watcher):
    """Records every call it sees into `records` (see the module docstring for the layout)."""

    measures_time = True

    def __init__(self, record_shapes=False, profile_memory=False):
        self.record_shapes = record_shapes
        self.stats = cpu_allocator.stats if profile_memory else None
        self.records = []
        self.open = []    # indices of the records still running, innermost last
        self.start_ns = perf_counter_ns()

    def _push(self, kind, what, shapes, engine=None):
        records = self.records
        rec = [kind, what, self.open[-1] if self.open else -1, 0, 0, 0, 0, shapes, engine]
        self.open.append(len(records))
        records.append(rec)
        if self.stats is not None:
            rec[5] = self.stats.allocated_bytes
        rec[3] = perf_counter_ns()
        return rec

    def _pop(self, rec):
        rec[4] = perf_counter_ns()
        if self.stats is not None:
            rec[6] = self.stats.allocated_bytes
        self.open.pop()

    def around(self, op, args, run):
        # _push and _pop written out: this runs for every op while profiling
        open_, records, stats, inner = self.open, self.records, self.stats, self.inner
        rec = [OP, op, open_[-1] if open_ else -1, 0, 0, 0, 0, input_shapes(args) if self.record_shapes else None,
               None]
        open_.append(len(records))
        records.append(rec)
        if stats is not None:
            rec[5] = stats.allocated_bytes
        rec[3] = perf_counter_ns()
        try:
            return run() if inner is None else inner.around(op, args, run)
        finally:
            rec[4] = perf_counter_ns()
            if stats is not None:
                rec[6] = stats.allocated_bytes
            open_.pop()

    def composite(self, name, fn, args, kwargs):
        if overload_frontend(name):
            return super().composite(name, fn, args, kwargs)
        rec = self._push(COMPOSITE, name, input_shapes(args) if self.record_shapes else None)
        inner = self.inner
        try:
            return fn(*args, **kwargs) if inner is None else inner.composite(name, fn, args, kwargs)
        finally:
            self._pop(rec)

    def _top(self, kind):
        return self.records[self.open[-1]] if self.open and self.records[self.open[-1]][0] == kind else None

    def backward_node(self, node, engine):
        top = self._top(NODE)
        if top is not None and top[8] == id(engine):
            self._pop(top)
        if node is not None:
            self._push(NODE, node.name(), [] if self.record_shapes else None, id(engine))
        super().backward_node(node, engine)

    def enter_range(self, name):
        self._push(RANGE, name, [] if self.record_shapes else None)
        super().enter_range(name)

    def exit_range(self, name):
        super().exit_range(name)
        top = self._top(RANGE)
        if top is not None and top[1] == name:
            self._pop(top)

    def close(self):
        """Close whatever is still open (a profile stopped inside a range or a backward pass)."""
        while self.open:
            self._pop(self.records[self.open[-1]])

    def events(self, profile_memory=False):
        """The records as an EventList of FunctionEvents (times in µs from the profile's start), parents first."""
        events = EventList(profile_memory=profile_memory)
        attach_to = {}   # record index -> the event its children nest under
        base = self.start_ns
        for i, (kind, what, parent, t0, t1, m0, m1, shapes, _) in enumerate(self.records):
            start, end, mem = (t0 - base) / 1000.0, (t1 - base) / 1000.0, m1 - m0
            outer = attach_to.get(parent)
            if kind == NODE:
                name = _NODE_NAMES.get(what, what)
                engine = FunctionEvent(len(events), f"autograd::engine::evaluate_function: {name}", start, end,
                                       shapes, mem)
                if outer is not None:
                    outer.append_cpu_child(engine)
                events.append(engine)
                outer = engine
            else:
                name = (what if kind == RANGE else qualified_name(what) if kind == COMPOSITE
                        else qualified_name(what.name.partition(".")[0]))
            evt = FunctionEvent(len(events), name, start, end, shapes, mem, is_user_annotation=kind == RANGE)
            if outer is not None:
                outer.append_cpu_child(evt)
            events.append(evt)
            attach_to[i] = evt
        return events
