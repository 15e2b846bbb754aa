"""autograd_graph(t): the backward graph behind a tensor, as data, as an indented tree and as a picture.

The walk starts at `t.grad_fn` and follows `next_functions` (PyTorch's edges: `(node, input_nr)`). Each node
reports its name, its edges, the tensors it saved for backward (shape, dtype, whether it is a view, and the version
it had when saved against the version it has now: a mismatch is what makes backward fail with "one of the
variables needed for gradient computation has been modified by an inplace operation"), the other values it
saved, and the hooks registered on it. `AccumulateGrad` nodes carry the leaf they feed (`.variable`).

>>> x = lantern.ones(2, 3, requires_grad=True)
>>> w = lantern.full((2, 3), 2.)
>>> y = (x * w).sum()
>>> g = autograd_graph(y)
>>> [n.name for n in g.nodes]
['SumBackward0', 'MulBackward0', 'AccumulateGrad']
>>> print(g)
autograd graph: 1 root, 3 nodes, 1 saved tensor
root: tensor [] float32, output 0 of #0 SumBackward0
#0 SumBackward0  <- root
│    dim=None, keepdim=False, self_meta=[2, 3] float32
└─ #1 MulBackward0
   │    saved other: [2, 3] float32  v0
   └─ #2 AccumulateGrad
           variable: [2, 3] float32, requires_grad=True, grad: None
>>> g.nodes[1].saved[0]
SavedTensorInfo(name='other', shape=(2, 3), dtype=lantern.float32, version=0, current_version=0, is_view=False)

The graph is a snapshot: after an in-place change of `w`, a new one shows the saved `w` as stale.

>>> _ = w.add_(1)
>>> print(autograd_graph(y).nodes[1].saved[0].describe())
[2, 3] float32  v0, now v1  <-- STALE: modified in place after it was saved; backward through this node fails
"""
import collections
import heapq
import html

from ..autograd.function import BackwardCFunction
from ..autograd.graph import AccumulateGrad, SavedTensor, grad_accumulator
from ..autograd.node import OpNode, _Freed
from ..autograd.views import AsStridedBackward0, CopySlices
from ..core.tensor_impl import TensorImpl
from ..ops.derivative import TensorMeta
from .render import dot_quote, render

__all__ = ["autograd_graph", "AutogradGraph", "GraphNode", "SavedTensorInfo", "Edge"]

Edge = collections.namedtuple("Edge", "node input_nr")
Edge.__doc__ = "One of a node's next_functions: the GraphNode the gradient flows to (None: no gradient needed), " \
               "and which of that node's outputs it is the gradient of."


class SavedTensorInfo(collections.namedtuple("SavedTensorInfo",
                                             "name shape dtype version current_version is_view")):
    """A tensor a node saved for backward: `(name, shape, dtype, version, current_version, is_view)`.

    `version` is the tensor's version counter when it was saved, `current_version` the counter now; they differ
    (`stale`) when the tensor was changed in place afterwards, and backward through this node would fail.
    Extra attributes: `freed` (released by a backward pass; shape and versions are then None), `packed` (went
    through saved_tensors_hooks, so lantern cannot look inside), `is_output` (the node's own output), `leaf`
    (the GraphNode index of the AccumulateGrad whose variable this is, or None), `tensor` (the saved tensor)."""

    freed = packed = is_output = False
    leaf = tensor = None

    @property
    def stale(self):
        return self.current_version is not None and self.version != self.current_version

    def describe(self):
        """'[2, 3] float32 (view)  v0' and, when stale, the versions and a warning."""
        if self.freed:
            return "freed by backward"
        if self.packed:
            return f"packed by saved_tensors_hooks  v{self.version}"
        text = _shape_dtype(self.shape, self.dtype) + (" (view)" if self.is_view else "")
        if self.stale:
            return (f"{text}  v{self.version}, now v{self.current_version}  <-- STALE: modified in place after "
                    "it was saved; backward through this node fails")
        return f"{text}  v{self.version}"


class GraphNode:
    """One backward node: `index` (its position in `AutogradGraph.nodes`), `name`, `fn` (the grad_fn object),
    `next` (Edges, one per next_function), `saved` (SavedTensorInfo list), `attributes` ((name, text) pairs of
    the other saved values), `hooks` (descriptions), `variable` (the leaf tensor, for AccumulateGrad), `wraps`
    (CopySlices: the name of the in-place op it applies to the view's region), `roots` (indices of the root
    tensors this node made)."""

    __slots__ = ("index", "fn", "name", "next", "saved", "attributes", "hooks", "variable", "variable_name",
                 "wraps", "roots")

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.name()
        self.index = None
        self.next = []
        self.saved = []
        self.attributes = []
        self.hooks = _hooks(fn)
        self.variable = fn.variable if isinstance(fn, AccumulateGrad) else None
        self.variable_name = None
        self.wraps = None
        self.roots = []

    @property
    def is_leaf(self):
        """An AccumulateGrad: where a leaf's gradient lands."""
        return isinstance(self.fn, AccumulateGrad)

    @property
    def num_outputs(self):
        return len(self.fn._input_meta)

    def __repr__(self):
        return f"<GraphNode #{self.index} {self.name}>"


class AutogradGraph:
    """The backward graph behind one or more tensors. `nodes`: GraphNodes in topological order from the roots
    (a node comes before every node it sends gradients to, the order backward runs them); `roots`: the tensors
    the walk started from. `str()` prints an indented tree, `.to_dot()` DOT text, `.save(path)` a picture."""

    def __init__(self, roots, nodes, root_nodes):
        self.roots = roots
        self.nodes = nodes
        self.root_nodes = root_nodes  # per root: (GraphNode, output_nr), or None without history

    def node(self, name):
        """The first node called `name` (KeyError when there is none)."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    @property
    def stale(self):
        """(node, saved) pairs for every saved tensor changed in place since it was saved."""
        return [(n, s) for n in self.nodes for s in n.saved if s.stale]

    def __str__(self):
        return _tree(self)

    def __repr__(self):
        return f"<AutogradGraph: {len(self.roots)} root(s), {len(self.nodes)} nodes>"

    def to_dot(self):
        return _dot(self)

    def save(self, path):
        """Draw the graph to `path` (.svg, .png, .pdf or .dot); returns the path."""
        return render(self.to_dot(), path)


def autograd_graph(tensors, params=None):
    """The backward graph behind `tensors` (one tensor, or a list whose graphs are drawn together, shared nodes
    once). `params`: an optional {name: tensor} dict (`dict(model.named_parameters())`) naming the leaves."""
    roots = [tensors] if isinstance(tensors, TensorImpl) else list(tensors)
    starts = []
    for t in roots:
        fn = t.grad_fn
        if fn is None and t.requires_grad:
            fn = grad_accumulator(t)
        starts.append(fn)
    found = {}
    stack = [fn for fn in starts if fn is not None]
    while stack:
        fn = stack.pop()
        if id(fn) in found:
            continue
        found[id(fn)] = GraphNode(fn)
        stack.extend(nxt for nxt, _ in fn.next_functions if nxt is not None and id(nxt) not in found)
    nodes = _topological(found, starts)
    names = {id(t): name for name, t in (params or {}).items()}
    leaves = {}
    for k, n in enumerate(nodes):
        n.index = k
        n.next = [Edge(found[id(nxt)] if nxt is not None else None, nr) for nxt, nr in n.fn.next_functions]
        if n.variable is not None:
            leaves[id(n.variable)] = k
            n.variable_name = names.get(id(n.variable))
    for n in nodes:
        _describe_saved(n, n.fn, leaves)
    root_nodes = []
    for r, (t, fn) in enumerate(zip(roots, starts)):
        if fn is None:
            root_nodes.append(None)
            continue
        node = found[id(fn)]
        node.roots.append(r)
        root_nodes.append((node, t._output_nr if t.grad_fn is not None else 0))
    return AutogradGraph(roots, nodes, root_nodes)


def _topological(found, starts):
    """Kahn's algorithm over the found nodes, the most recently recorded ready node first (as the engine runs)."""
    pending = collections.Counter()
    for n in found.values():
        for nxt, _ in n.fn.next_functions:
            if nxt is not None:
                pending[id(nxt)] += 1
    ready = [(-found[id(fn)].fn._seq, id(fn)) for fn in dict.fromkeys(s for s in starts if s is not None)
             if not pending[id(fn)]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, key = heapq.heappop(ready)
        node = found[key]
        order.append(node)
        for nxt, _ in node.fn.next_functions:
            if nxt is not None:
                pending[id(nxt)] -= 1
                if not pending[id(nxt)]:
                    heapq.heappush(ready, (-nxt._seq, id(nxt)))
    return order


# -- what a node saved -------------------------------------------------------------------------------------

def _describe_saved(node, fn, leaves):
    if isinstance(fn, OpNode):
        for name, value in fn.saved.items():
            _add_saved_value(node, name, value, leaves)
    elif isinstance(fn, BackwardCFunction):
        if fn._freed:
            node.saved.append(_freed_info("saved_tensors"))
        for k, s in enumerate(fn._saved):
            if s is not None:
                node.saved.append(_info(f"saved_tensors[{k}]", s, leaves))
    elif isinstance(fn, CopySlices):
        node.wraps = fn.fn.name()
        node.attributes.append(("view", _geometry(fn.view)))
        _describe_saved(node, fn.fn, leaves)
    elif isinstance(fn, AsStridedBackward0):
        node.attributes.append(("view", _geometry(fn.view)))


def _add_saved_value(node, name, value, leaves):
    if isinstance(value, SavedTensor):
        node.saved.append(_info(name, value, leaves))
    elif isinstance(value, _Freed):
        node.saved.append(_freed_info(name))
    elif isinstance(value, (list, tuple)) and any(isinstance(v, SavedTensor) for v in value):
        pattern = "{}[{}]" if isinstance(value, list) else "{}{}"  # a list argument; several outputs: result0...
        for k, v in enumerate(value):
            _add_saved_value(node, pattern.format(name, k), v, leaves)
    elif isinstance(value, TensorMeta):
        node.attributes.append((name, _shape_dtype(value.size, value.dtype)))
    else:
        node.attributes.append((name, repr(value)))


def _info(name, saved, leaves):
    t = saved.tensor
    if saved.hooks_packed:
        info = SavedTensorInfo(name, None, None, saved.version, None, False)
        info.packed = True
        return info
    info = SavedTensorInfo(name, tuple(t._size), t.dtype, saved.version, t._vc[0], t._base is not None)
    info.is_output, info.tensor, info.leaf = saved.is_output, t, leaves.get(id(t))
    return info


def _freed_info(name):
    info = SavedTensorInfo(name, None, None, None, None, False)
    info.freed = True
    return info


def _geometry(g):
    return f"(size {list(g.size)} stride {list(g.stride)} offset {g.offset})"


def _hooks(fn):
    """Descriptions of the hooks that run at this node: node hooks, retain_grad, and a leaf's tensor hooks."""
    out = [f"prehook {_hook_name(h)}" for h in (fn._pre_hooks or {}).values()]
    out += [f"retain_grad (output {nr})" for nr in (fn._retains or {})]
    out += [f"hook {_hook_name(h)}" for h in (fn._hooks or {}).values()]
    if isinstance(fn, AccumulateGrad) and fn.variable is not None and fn.variable._autograd is not None:
        meta = fn.variable._autograd
        out += [f"tensor hook {_hook_name(h)}" for h in meta.hooks.values()]
        out += [f"post-accumulate hook {_hook_name(h)}" for h in meta.post_accumulate_hooks.values()]
    return out


def _hook_name(hook):
    return getattr(hook, "__qualname__", None) or type(hook).__name__


def _shape_dtype(shape, dtype):
    return f"[{', '.join(str(s) for s in shape)}] {str(dtype).rpartition('.')[2]}"


def _tensor_text(t):
    return _shape_dtype(t._size, t.dtype)


def _variable_text(node):
    v = node.variable
    if v is None:
        return "variable: (gone)"
    grad = "None" if v._grad is None else _tensor_text(v._grad)
    name = f" '{node.variable_name}'" if node.variable_name else ""
    return f"variable{name}: {_tensor_text(v)}, requires_grad={v.requires_grad}, grad: {grad}"


def _detail_lines(node):
    lines = []
    if node.variable is not None or node.is_leaf:
        lines.append(_variable_text(node))
    if node.wraps:
        lines.append(f"applies {node.wraps} to a view of its input")
    if node.attributes:
        lines.append(", ".join(f"{k}={v}" for k, v in node.attributes))
    for s in node.saved:
        where = f" (= leaf #{s.leaf})" if s.leaf is not None else ""
        lines.append(f"saved {s.name}: {s.describe()}{where}")
    if node.hooks:
        lines.append("hooks: " + ", ".join(node.hooks))
    return lines


# -- the tree ----------------------------------------------------------------------------------------------

def _root_text(graph, r):
    t = graph.roots[r]
    entry = graph.root_nodes[r]
    label = f"root{'' if len(graph.roots) == 1 else ' ' + str(r)}: tensor {_tensor_text(t)}"
    if entry is None:
        return f"{label}, no autograd history (requires_grad={t.requires_grad})"
    node, nr = entry
    if node.is_leaf:
        return f"{label}, a leaf: its gradient goes to #{node.index} AccumulateGrad"
    return f"{label}, output {nr} of #{node.index} {node.name}"


def _tree(graph):
    saved = sum(len(n.saved) for n in graph.nodes)
    stale = len(graph.stale)
    head = (f"autograd graph: {len(graph.roots)} root{'s' if len(graph.roots) != 1 else ''}, {len(graph.nodes)} "
            f"node{'s' if len(graph.nodes) != 1 else ''}, {saved} saved tensor{'s' if saved != 1 else ''}"
            + (f", {stale} STALE" if stale else ""))
    lines = [head] + [_root_text(graph, r) for r in range(len(graph.roots))]
    shown = set()
    starts = [n for n in graph.nodes if n.roots]
    # (node, prefix for its detail lines and children, connector line prefix, edge label)
    stack = [(n, "", "", "") for n in reversed(starts)]
    while stack:
        node, prefix, connector, edge = stack.pop()
        title = f"{connector}{edge}#{node.index} {node.name}"
        if node.index in shown:
            if connector:  # a later root already drawn needs no line: the header names its node
                lines.append(f"{title}  (shown above)")
            continue
        shown.add(node.index)
        if node.roots:
            title += "  <- root" + ("" if len(graph.roots) == 1 else " " + ", ".join(map(str, node.roots)))
        lines.append(title)
        children = [e for e in node.next if e.node is not None]
        bar = "│" if children else " "
        lines.extend(f"{prefix}{bar}    {d}" for d in _detail_lines(node))
        for k in range(len(children) - 1, -1, -1):
            e = children[k]
            last = k == len(children) - 1
            label = f"(output {e.input_nr}) " if e.node.num_outputs > 1 else ""
            stack.append((e.node, prefix + ("   " if last else "│  "), prefix + ("└─ " if last else "├─ "),
                          label))
    return "\n".join(lines)


# -- the picture -------------------------------------------------------------------------------------------

_OP_FILL, _LEAF_FILL, _VARIABLE_FILL, _ROOT_FILL = "#eeeeee", "#cfe2f3", "#9fc5e8", "#b6d7a8"
_STALE = "#cc0000"


def _cell(text, align="LEFT", color=None, bold=False, size=None):
    text = html.escape(str(text))
    if bold:
        text = f"<B>{text}</B>"
    font = []
    if color:
        font.append(f'COLOR="{color}"')
    if size:
        font.append(f'POINT-SIZE="{size}"')
    if font:
        text = f"<FONT {' '.join(font)}>{text}</FONT>"
    return f'<TD ALIGN="{align}">{text}</TD>'


def _node_label(node):
    rows = [f'<TR><TD COLSPAN="3">{html.escape(node.name)} <FONT COLOR="#888888">#{node.index}</FONT></TD></TR>']
    if node.wraps:
        rows.append(f'<TR><TD COLSPAN="3"><FONT POINT-SIZE="9">applies {html.escape(node.wraps)} to a view'
                    '</FONT></TD></TR>')
    for s in node.saved:
        if s.freed or s.packed:
            what = "freed" if s.freed else "packed by hooks"
            rows.append(f"<TR>{_cell(s.name, size=9)}{_cell(what, size=9, color='#888888')}<TD></TD></TR>")
            continue
        kind = _shape_dtype(s.shape, s.dtype) + (" view" if s.is_view else "")
        if s.stale:
            rows.append(f'<TR>{_cell(s.name, color=_STALE, bold=True, size=9)}{_cell(kind, color=_STALE, size=9)}'
                        f'<TD ALIGN="RIGHT" BGCOLOR="#f4cccc"><FONT COLOR="{_STALE}" POINT-SIZE="9"><B>'
                        f'v{s.version}, now v{s.current_version}: stale</B></FONT></TD></TR>')
        else:
            rows.append(f"<TR>{_cell(s.name, size=9)}{_cell(kind, size=9)}"
                        f"{_cell('v' + str(s.version), 'RIGHT', '#666666', size=9)}</TR>")
    if node.attributes:
        text = '<BR ALIGN="LEFT"/>'.join(html.escape(line) for line in _wrap(f"{k}={v}" for k, v in node.attributes))
        rows.append(f'<TR><TD COLSPAN="3" ALIGN="LEFT"><FONT POINT-SIZE="8" COLOR="#666666">{text}'
                    '<BR ALIGN="LEFT"/></FONT></TD></TR>')
    if node.hooks:
        text = "hooks: " + ", ".join(node.hooks)
        rows.append(f'<TR><TD COLSPAN="3" ALIGN="LEFT"><FONT POINT-SIZE="8" COLOR="#7f6000">{html.escape(text)}'
                    '</FONT></TD></TR>')
    return '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">' + "".join(rows) + "</TABLE>>"


def _wrap(parts, width=36):
    """Comma-separated parts as lines of at most about `width` characters."""
    lines, line = [], ""
    for part in parts:
        if line and len(line) + len(part) + 2 > width:
            lines.append(line + ",")
            line = part
        else:
            line = f"{line}, {part}" if line else part
    return lines + [line]


def _dot(graph):
    lines = ["digraph autograd {",
             '  graph [rankdir=TB, nodesep=0.25, ranksep=0.35, fontname="Helvetica"];',
             '  node [fontname="Helvetica", fontsize=11, margin="0.12,0.06"];',
             '  edge [color="#555555", arrowsize=0.7, fontname="Helvetica", fontsize=9];']
    for n in graph.nodes:
        stale = any(s.stale for s in n.saved)
        fill = _LEAF_FILL if n.is_leaf else _OP_FILL
        border = f', color="{_STALE}", penwidth=2' if stale else ', color="#666666"'
        lines.append(f'  n{n.index} [shape=box, style="rounded,filled", fillcolor="{fill}"{border}, '
                     f'label={_node_label(n)}];')
        if n.is_leaf:
            v = n.variable
            text = "leaf no longer alive" if v is None else \
                _tensor_text(v) + ("\ngrad set" if v._grad is not None else "")
            if n.variable_name:
                text = f"{n.variable_name}\n{text}"
            lines.append(f'  v{n.index} [shape=ellipse, style=filled, fillcolor="{_VARIABLE_FILL}", '
                         f'color="#3d85c6", label={dot_quote(text)}];')
            lines.append(f"  v{n.index} -> n{n.index};")
    for n in graph.nodes:  # edges drawn as data flows forward: from the input's node to its user
        for e in n.next:
            if e.node is not None:
                label = f' [label=" out {e.input_nr}"]' if e.node.num_outputs > 1 else ""
                lines.append(f"  n{e.node.index} -> n{n.index}{label};")
    for r, t in enumerate(graph.roots):
        name = "root" if len(graph.roots) == 1 else f"root {r}"
        lines.append(f'  r{r} [shape=ellipse, style=filled, fillcolor="{_ROOT_FILL}", color="#38761d", '
                     f'label={dot_quote(name + chr(10) + _tensor_text(t))}];')
        entry = graph.root_nodes[r]
        if entry is not None:
            node, nr = entry
            label = f' [label=" out {nr}"]' if node.num_outputs > 1 else ""
            lines.append(f"  n{node.index} -> r{r}{label};")
    if graph.stale:
        lines.append(f'  graph [labelloc=b, fontcolor="{_STALE}", fontsize=10, label="red: a saved tensor was '
                     'modified in place after it was saved; backward through that node fails"];')
    lines.append("}")
    return "\n".join(lines) + "\n"
