"""The optimisation pipeline the graph executor runs, with an optional log of what each pass changed.

Order (torch's GraphExecutor runOptimization, simplified): inline, constant_propagation, peephole, cse,
dead_code_elimination, unroll_loops — and when the graph has loops, constant_propagation, peephole and cse
again to fold the copies — then fuse. Give `log` a list (or a callable) to receive one `PassRecord` per pass
(node kinds removed and added, node counts, a unified diff of the graph text, time taken); `PassLog` is such a
list that prints as a table. `PassLog(snapshots=True)` also keeps each pass's graph text and pictures (DOT)
before and after it, and `log.save_pictures(folder)` draws them (see lantern.jit.visualize).

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x : Tensor):
...   %1 : int = prim::Constant[value=1]()
...   %2 : int = prim::Constant[value=2]()
...   %3 : int = prim::Constant[value=3]()
...   %b : int = aten::mul(%2, %3)
...   %y : Tensor = aten::add(%x, %b, %1)
...   %z : Tensor = aten::add(%x, %b, %1)
...   %w : Tensor = aten::mul(%y, %z)
...   return (%w)''')
>>> log = PassLog()
>>> [n.kind() for n in optimize(g, log).nodes()]
['prim::FusionGroup']
>>> [(r.name, dict(r.removed)) for r in log if r.changed][:2]
[('constant_propagation', {'prim::Constant': 2, 'aten::mul': 1}), ('cse', {'aten::add': 1})]
>>> snap = PassLog(snapshots=True)
>>> h = parse_ir('''graph(%x : Tensor):
...   %y : Tensor = aten::neg(%x)
...   %z : Tensor = aten::neg(%y)
...   return (%z)''')
>>> before = str(h)
>>> h = optimize(h, snap)
>>> snap[0].before_text == before, snap[-1].after_text == str(h), [r.name for r in snap if r.changed]
(True, True, ['fuse'])
"""
import collections
import difflib
import time

from ..visualize import Drawing, save_pictures, snapshot
from .constant_propagation import constant_propagation
from .cse import cse
from .dead_code_elimination import dead_code_elimination
from .fuse import fuse
from .inline import inline
from .peephole import peephole
from .unroll_loops import unroll_loops

__all__ = ["optimize", "PassLog", "PassRecord"]


class PassRecord:
    """What one pass did: `name`, `removed`/`added` (Counters of node kinds), `nodes_before`/`nodes_after`,
    `diff` (unified diff of the printed graph), `seconds`; `changed` is False when the graph text is identical.
    Made by a PassLog(snapshots=True), it also keeps `before_text`/`after_text` (the printed graph) and
    `before_dot`/`after_dot` (DOT pictures, what the pass removed in red and what it added in green); otherwise
    those are None."""

    __slots__ = ("name", "removed", "added", "nodes_before", "nodes_after", "diff", "seconds", "before_text",
                 "after_text", "before_dot", "after_dot", "input_dot")

    def __init__(self, name, before, after, before_nodes, after_nodes, seconds):
        self.name = name
        kept_before, kept_after = set(before_nodes), set(after_nodes)
        self.removed = collections.Counter(n.kind() for n in before_nodes if n not in kept_after)
        self.added = collections.Counter(n.kind() for n in after_nodes if n not in kept_before)
        self.nodes_before = len(before_nodes)
        self.nodes_after = len(after_nodes)
        self.diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                                 f"before {name}", f"after {name}"))
        self.seconds = seconds
        self.before_text = self.after_text = self.before_dot = self.after_dot = self.input_dot = None

    @property
    def changed(self):
        return bool(self.diff)

    @property
    def changes(self):
        """'-2 prim::Constant, +1 aten::add' ('reordered' when only the order changed, '-' when nothing did)."""
        return ", ".join([f"-{n} {k}" for k, n in self.removed.items()] +
                         [f"+{n} {k}" for k, n in self.added.items()]) or ("reordered" if self.changed else "-")

    def __repr__(self):
        return (f"PassRecord({self.name}: {self.nodes_before} -> {self.nodes_after} nodes, "
                f"removed {dict(self.removed)}, added {dict(self.added)})")


class PassLog(list):
    """A list of PassRecords that prints as a table, one pass per line. With `snapshots=True` each record also
    keeps the graph's text and pictures before and after its pass."""

    def __init__(self, records=(), snapshots=False):
        super().__init__(records)
        self.snapshots = snapshots

    def __str__(self):
        lines = [f"{'pass':<22}{'nodes':>14}  changes"]
        for r in self:
            lines.append(f"{r.name:<22}{r.nodes_before:>6} -> {r.nodes_after:<6}  {r.changes}")
        return "\n".join(lines)

    def save_pictures(self, folder, fmt="svg"):
        """Draw the input graph (`00_input.<fmt>`) and the graph after each pass that changed it (`NN_<pass>.<fmt>`,
        NN its place in the pipeline) into `folder`; returns the paths. Needs PassLog(snapshots=True)."""
        return save_pictures(self, folder, fmt)


def _run(log, name, fn, graph, *args):
    if log is None:
        return fn(graph, *args)
    before, before_nodes = str(graph), graph.all_nodes()
    drawing = None
    if getattr(log, "snapshots", False):
        drawing = Drawing(graph)
    start = time.perf_counter()
    graph = fn(graph, *args)
    seconds = time.perf_counter() - start
    after, after_nodes = str(graph), graph.all_nodes()
    record = PassRecord(name, before, after, before_nodes, after_nodes, seconds)
    if drawing is not None:
        record.before_text, record.after_text = before, after
        snapshot(record, drawing, graph, before_nodes, after_nodes)
    log(record) if callable(log) else log.append(record)
    return graph


def optimize(graph, log=None, module=None, fusion=True):
    """Run the pipeline on `graph` in place and return it; `module` lets inline resolve prim::CallMethod;
    `fusion=False` skips fuse."""
    graph = _run(log, "inline", inline, graph, module)
    graph = _run(log, "constant_propagation", constant_propagation, graph)
    graph = _run(log, "peephole", peephole, graph)
    graph = _run(log, "cse", cse, graph)
    graph = _run(log, "dead_code_elimination", dead_code_elimination, graph)
    had_loops = graph.findNode("prim::Loop") is not None
    graph = _run(log, "unroll_loops", unroll_loops, graph)
    if had_loops:
        graph = _run(log, "constant_propagation", constant_propagation, graph)
        graph = _run(log, "peephole", peephole, graph)
        graph = _run(log, "cse", cse, graph)
    if fusion:
        graph = _run(log, "fuse", fuse, graph)
    return graph
