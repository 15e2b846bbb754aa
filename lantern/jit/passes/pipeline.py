"""The optimisation pipeline the graph executor runs, with an optional log of what each pass changed.

Order (torch's GraphExecutor runOptimization, simplified): inline, constant_propagation, peephole, cse,
dead_code_elimination, unroll_loops — and when the graph has loops, constant_propagation, peephole and cse
again to fold the copies — then fuse. Give `log` a list (or a callable) to receive one `PassRecord` per pass
(node kinds removed and added, node counts, a unified diff of the graph text, time taken); `PassLog` is such a
list that prints as a table.

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
"""
import collections
import difflib
import time

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
    `diff` (unified diff of the printed graph), `seconds`; `changed` is False when the graph text is identical."""

    __slots__ = ("name", "removed", "added", "nodes_before", "nodes_after", "diff", "seconds")

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

    @property
    def changed(self):
        return bool(self.diff)

    def __repr__(self):
        return (f"PassRecord({self.name}: {self.nodes_before} -> {self.nodes_after} nodes, "
                f"removed {dict(self.removed)}, added {dict(self.added)})")


class PassLog(list):
    """A list of PassRecords that prints as a table, one pass per line."""

    def __str__(self):
        lines = [f"{'pass':<22}{'nodes':>14}  changes"]
        for r in self:
            changes = ", ".join([f"-{n} {k}" for k, n in r.removed.items()] +
                                [f"+{n} {k}" for k, n in r.added.items()]) or ("reordered" if r.changed else "-")
            lines.append(f"{r.name:<22}{r.nodes_before:>6} -> {r.nodes_after:<6}  {changes}")
        return "\n".join(lines)


def _run(log, name, fn, graph, *args):
    if log is None:
        return fn(graph, *args)
    before, before_nodes = str(graph), graph.all_nodes()
    start = time.perf_counter()
    graph = fn(graph, *args)
    seconds = time.perf_counter() - start
    record = PassRecord(name, before, str(graph), before_nodes, graph.all_nodes(), seconds)
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
