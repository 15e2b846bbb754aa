"""Drawing JIT graphs: `graph.to_dot()`, pictures of a graph, and the pass log of a compiled function.

A graph is drawn top to bottom as data flows: graph inputs are blue ellipses, the outputs a green one, each node a
box with its kind (and attributes); an edge carries the value's name and type. A constant is drawn small, next to
each node that reads it, instead of as a box of its own (unless nothing reads it). The blocks of prim::If and
prim::Loop, and the subgraph of a prim::FusionGroup, are clusters under their node, joined to it by a dashed edge.

`pass_log(compiled, *example_inputs)` runs the optimisation pipeline the executor would run for those inputs on
a copy of the compiled graph and returns its `PassLog`, which keeps a picture before and after each pass;
`log.save_pictures(folder)` writes them. (The executor itself keeps a log, without pictures, for every plan it
builds when created with `GraphExecutor(graph, log_passes=True)`: see `lantern.jit.executor`.)

>>> import os, tempfile
>>> @lantern.jit.script
... def f(x):
...     y = x * 2 + 1
...     return y * y
>>> log = pass_log(f, lantern.ones(3))
>>> [r.name for r in log if r.changed]
['fuse']
>>> [os.path.basename(p) for p in log.save_pictures(tempfile.mkdtemp())]
['00_input.svg', '07_fuse.svg']
>>> print(log.graph)
graph(%x : Float(3, requires_grad=0, device=cpu)):
  %... : Tensor = prim::FusionGroup_0(%x)
  return (%...)
with prim::FusionGroup_0 = graph(...
"""
import html
import os

from ..inspect.render import render

__all__ = ["pass_log", "save_graph", "graph_to_dot"]

_FILL, _INPUT_FILL, _OUTPUT_FILL = "#f3f3f3", "#cfe2f3", "#b6d7a8"
_ADDED = ('#d9ead3', '#38761d')    # fill, border of nodes a pass added
_REMOVED = ('#f4cccc', '#cc0000')  # ... and of nodes it removed


def graph_to_dot(graph, title=None):
    """`graph` as Graphviz DOT text (what `Graph.to_dot()` returns); `title` labels the picture."""
    return Drawing(graph).text(title=title)


def save_graph(graph, path, title=None):
    """Draw `graph` to `path` (.svg, .png, .pdf or .dot); returns the path."""
    return render(graph_to_dot(graph, title), path)


def short_type(t):
    """A value's type, short: `Float(2, 3)` for a refined tensor type (no strides, device or requires_grad)."""
    if type(t).__name__ == "TensorType" and t.sizes is not None:
        dims = ", ".join("*" if s is None else str(s) for s in t.sizes)
        return f"{t.dtype.legacy if t.dtype is not None else 'Tensor'}({dims})"
    return str(t)


class Drawing:
    """The DOT statements for one graph, and for each IR node the DOT ids drawn for it (a constant has one per
    use), so that a pass log can colour nodes after the graph has changed."""

    def __init__(self, graph):
        from .ir_text import _Printer  # cycle: jit.ir_text -> jit.ir -> jit.visualize
        self._printer = _Printer()
        self.lines = []  # node statements, nested in the clusters they belong to
        self.edges = []  # edge statements, all at the top: an edge inside a cluster would pull its ends in
        self.ids = {}  # id(IR node) -> [DOT node ids]
        self._count = 0
        self._constants = set()  # DOT ids of constants drawn beside their users
        self._labelled = set()  # (id(Value), user's DOT id) of edges already labelled
        self._inputs = {f"in{k}" for k in range(len(graph.inputs()))}  # their ellipses name them: edges need not
        self._value_ids = {}  # id(Value) -> DOT id of what draws it (its node, a graph input, a block's inputs)
        for k, v in enumerate(graph.inputs()):
            self._value_ids[id(v)] = f"in{k}"
            label = html.escape(f"%{v.debugName()} : {short_type(v.type())}")
            self.lines.append(f'  in{k} [shape=ellipse, style=filled, fillcolor="{_INPUT_FILL}", color="#3d85c6", '
                              f'label=<{label}>];')
        self._nodes(graph.block(), "  ")
        ret = graph.return_node()
        self._new_id(ret, "out")
        self.lines.append(f'  out [shape=ellipse, style=filled, fillcolor="{_OUTPUT_FILL}", color="#38761d", '
                          f'label="return"];')
        self._edges_into(ret, "out", "  ")

    def text(self, title=None, highlight=(), colors=_ADDED):
        """The DOT text; the IR nodes in `highlight` filled with `colors` (fill, border)."""
        head = ["digraph G {",
                '  graph [rankdir=TB, nodesep=0.3, ranksep=0.35, fontname="Helvetica", labelloc=t, fontsize=13];',
                '  node [shape=box, style="rounded,filled", fillcolor="' + _FILL + '", color="#666666", '
                'fontname="Helvetica", fontsize=11, margin="0.12,0.05"];',
                '  edge [color="#555555", arrowsize=0.6, fontname="Helvetica", fontsize=8, fontcolor="#555555"];']
        if title:
            head.append(f"  label=<{html.escape(title)}>;")
        marks = [f'  {d} [fontcolor="{colors[1]}"];' if d in self._constants else
                 f'  {d} [fillcolor="{colors[0]}", color="{colors[1]}", penwidth=2];'
                 for node in highlight for d in self.ids.get(id(node), ())]
        return "\n".join(head + self.lines + self.edges + marks + ["}"]) + "\n"

    # -- building --------------------------------------------------------------------------------------
    def _new_id(self, node, dot_id=None):
        if dot_id is None:
            dot_id = f"n{self._count}"
            self._count += 1
        self.ids.setdefault(id(node), []).append(dot_id)
        return dot_id

    def _nodes(self, block, pad):
        for n in block.nodes():
            if n.kind() == "prim::Constant" and n.hasUses():
                continue  # drawn beside each user
            dot_id = self._new_id(n)
            for v in n.outputs():
                self._value_ids[id(v)] = dot_id
            self.lines.append(f"{pad}{dot_id} [label={self._label(n)}];")
            self._edges_into(n, dot_id, pad)
            for k, b in enumerate(n.blocks()):
                self._cluster(b, f"block{k}", n, dot_id, pad)
            sub = n.attrs.get("Subgraph")
            if hasattr(sub, "block"):
                self._cluster(sub.block(), "Subgraph", n, dot_id, pad)

    def _cluster(self, block, name, owner, owner_id, pad):
        """A block (or subgraph) as a cluster: its inputs, its nodes and its outputs, hung under its owner."""
        inner = pad + "  "
        self.lines.append(f'{pad}subgraph cluster_{owner_id}_{name} {{')
        label = html.escape(f"{name} of {owner.kind()}")
        self.lines.append(f'{inner}label=<{label}>; labeljust=l; fontsize=10; fontcolor="#666666"; '
                          'style="rounded,dashed"; color="#999999";')
        param = self._new_id(block.param_node())
        for v in block.inputs():
            self._value_ids[id(v)] = param
        if block.inputs():
            names = html.escape("(" + ", ".join(f"%{v.debugName()}" for v in block.inputs()) + ")")
            self.lines.append(f'{inner}{param} [shape=plain, style="", fontsize=10, label=<{names}>];')
        else:
            self.lines.append(f'{inner}{param} [shape=point, width=0.06, color="#999999"];')
        self.edges.append(f'  {owner_id} -> {param} [style=dashed, color="#999999", arrowhead=none];')
        self._nodes(block, inner)
        ret = self._new_id(block.return_node())
        self.lines.append(f'{inner}{ret} [shape=plain, style="", fontsize=10, label="outputs"];')
        self._edges_into(block.return_node(), ret, inner)
        self.lines.append(pad + "}")

    def _edges_into(self, node, dot_id, pad):
        for v in node.inputs():
            producer = v.node()
            if producer.kind() == "prim::Constant":
                const = self._new_id(producer)
                self._constants.add(const)
                text = html.escape(self._constant_text(producer))
                self.lines.append(f'{pad}{const} [shape=plain, style="", fontsize=9, fontcolor="#444444", '
                                  f'label=<{text}>];')
                self.edges.append(f'  {const} -> {dot_id} [color="#aaaaaa"];')
                continue
            source = self._value_ids.get(id(v))
            if source is None:  # defined outside what is drawn (a malformed graph): draw the edge from a stub
                source = self._new_id(producer)
                self.lines.append(f'{pad}{source} [label="?"];')
            label = ""
            if source not in self._inputs and (id(v), dot_id) not in self._labelled:  # one label per value and user
                self._labelled.add((id(v), dot_id))
                label = f' [label=<{html.escape(f"%{v.debugName()} : {short_type(v.type())}")}>]'
            self.edges.append(f"  {source} -> {dot_id}{label};")

    def _constant_text(self, n):
        return _clip(self._printer.attr(n.attrs["value"], top=False)) if "value" in n.attrs else "None"

    def _label(self, n):
        kind = n.kind()
        attrs = [(k, v) for k, v in n.attrs.items() if k != "Subgraph" and not (k == "op" and kind == "aten::" + v)]
        rows = f"<B>{html.escape(kind)}</B>"
        if attrs:
            text = _clip(", ".join(f"{k}={self._printer.attr(v, top=False)}" for k, v in attrs), 80)
            rows += f'<BR/><FONT POINT-SIZE="9" COLOR="#555555">{html.escape(text)}</FONT>'
        if not n.hasUses() and n.outputs():
            outs = ", ".join(f"%{v.debugName()}" for v in n.outputs())
            rows += f'<BR/><FONT POINT-SIZE="8" COLOR="#888888">{html.escape(outs)} (unused)</FONT>'
        return f"<{rows}>"


def _clip(text, width=40):
    return text if len(text) <= width else text[:width - 3] + "..."


# -- pictures of the pass pipeline -----------------------------------------------------------------------

def snapshot(record, before, graph, before_nodes, after_nodes):
    """Keep in `record` the graph text and DOT before (`before`: a Drawing made before the pass, the nodes the
    pass removed in red) and after it (the nodes it added in green)."""
    kept_after = set(after_nodes)
    kept_before = set(before_nodes)
    changes = record.changes
    record.before_dot = before.text(f"before {record.name}: {changes}",
                                    [n for n in before_nodes if n not in kept_after], _REMOVED)
    record.after_dot = Drawing(graph).text(f"after {record.name}: {changes}",
                                           [n for n in after_nodes if n not in kept_before], _ADDED)
    record.input_dot = before.text("input")


def save_pictures(log, folder, fmt="svg"):
    """Write `00_input.<fmt>` and, for each pass that changed the graph, `NN_<pass>.<fmt>` (NN: its place in the
    pipeline) showing the graph after it, what it added in green; returns the paths."""
    if not log:
        return []
    if getattr(log[0], "before_dot", None) is None:
        raise ValueError("save_pictures: this PassLog kept no pictures; make it with PassLog(snapshots=True)")
    os.makedirs(folder, exist_ok=True)
    paths = [render(log[0].input_dot, os.path.join(folder, f"00_input.{fmt}"))]
    for k, r in enumerate(log, 1):
        if r.changed:
            paths.append(render(r.after_dot, os.path.join(folder, f"{k:02d}_{r.name}.{fmt}")))
    return paths


def pass_log(compiled, *example_inputs, snapshots=True):
    """Run the optimisation pipeline that the executor runs for `example_inputs` on a copy of the graph of
    `compiled` (a ScriptFunction, a ScriptMethod, a ScriptModule, whose forward is taken, or a Graph) and return
    the PassLog (with pictures unless `snapshots=False`); `log.graph` is the optimised copy. The compiled
    function itself is not run and keeps no state."""
    from .executor import _refined_type  # cycle: jit.executor -> jit.passes -> jit.passes.pipeline -> jit.visualize
    from .module import ScriptMethod, ScriptModule  # cycle: module -> passes -> pipeline -> visualize
    from .passes import PassLog, optimize  # cycle: jit.passes -> jit.passes.pipeline -> jit.visualize
    inputs = list(example_inputs)
    if isinstance(compiled, ScriptModule):
        graph, inputs = compiled.graph, [compiled] + inputs
    elif isinstance(compiled, ScriptMethod):
        graph, inputs = compiled.graph, [compiled.owner] + inputs
    else:
        graph = getattr(compiled, "graph", compiled)
    if len(inputs) != len(graph.inputs()):
        raise TypeError(f"pass_log: the graph takes {len(graph.inputs())} inputs, got {len(inputs)}")
    graph = graph.copy()
    for value, arg in zip(graph.inputs(), inputs):
        t = _refined_type(arg)
        if t is not None:
            value.setType(t)
    log = PassLog(snapshots=snapshots)
    module = inputs[0] if inputs and isinstance(inputs[0], ScriptModule) else None
    log.graph = optimize(graph, log=log, module=module)
    return log
