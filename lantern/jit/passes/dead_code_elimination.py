"""Dead code elimination (torch/csrc/jit/passes/dead_code_elimination.cpp): drop nodes nobody needs.

A node is live when it has a side effect (prim::RaiseException, print, calls of unknown code, prim::SetAttr),
when it mutates memory that outlives the graph or that a live value shares (an in-place op on an input, or on a
local tensor read later), or when a live node, a block output or the graph's return uses one of its outputs.
Everything else goes, inside If/Loop blocks too, and so do If outputs nobody uses and loop-carried values that
neither the loop body nor the code after the loop reads.

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x : Tensor):
...   %2 : int = prim::Constant[value=2]()
...   %y : Tensor = aten::mul(%x, %2)
...   return (%x)''')
>>> print(dead_code_elimination(g))
graph(%x : Tensor):
  return (%x)
<BLANKLINE>
"""
from ...ops.op_kinds import AliasKind
from ._analysis import alias_root, has_side_effects, mutated_inputs, op_of, walk

__all__ = ["dead_code_elimination"]


def dead_code_elimination(graph):
    """Remove every node whose outputs are unused and that has no side effect; returns `graph`."""
    _remove_dead_block_outputs(graph.block())
    live = _live_nodes(graph)
    _sweep(graph.block(), live)
    return graph


def _remove_dead_block_outputs(block):
    """If outputs nobody uses, and loop-carried values neither the loop body nor anyone after reads (torch
    decides this before sweeping, so a use by a dead node still counts)."""
    for n in block.nodes():
        if n.kind() == "prim::If":
            for i in reversed(range(len(n.outputs()))):
                if not n.outputs()[i].uses():
                    for b in n.blocks():
                        b.eraseOutput(i)
                    n.eraseOutput(i)
        elif n.kind() == "prim::Loop":
            body = n.blocks()[0]
            for k in reversed(range(len(n.outputs()))):
                if not n.outputs()[k].uses() and not body.inputs()[k + 1].uses():
                    body.eraseOutput(k + 1)
                    body.eraseInput(k + 1)
                    n.removeInput(k + 2)
                    n.eraseOutput(k)
        for b in n.blocks():
            _remove_dead_block_outputs(b)


def _is_fresh(root):
    """True when `root` is memory made inside this graph by a pure op, so writes to it are invisible outside."""
    node = root.node()
    op = op_of(node)
    if op is not None:
        return op.alias is AliasKind.NEW and not mutated_inputs(node)
    return node.kind() in ("prim::ListConstruct", "prim::DictConstruct")


def _live_nodes(graph):
    nodes = walk(graph.block())
    writers = {}  # alias root -> nodes that write to it
    for n in nodes:
        for i in mutated_inputs(n):
            writers.setdefault(alias_root(n.inputs()[i]), []).append(n)
    live, seen, work = set(), set(), []

    def mark(n):
        if n not in live:
            live.add(n)
            work.append(n)

    def need(v):
        if v in seen:
            return
        seen.add(v)
        producer = v.node()
        if producer.kind() != "prim::Param":
            mark(producer)
        for w in writers.get(alias_root(v), ()):
            mark(w)

    for v in graph.outputs():
        need(v)
    for n in nodes:
        if has_side_effects(n) or any(not _is_fresh(alias_root(n.inputs()[i])) for i in mutated_inputs(n)):
            mark(n)
    while work:
        n = work.pop()
        for v in n.inputs():
            need(v)
        for b in n.blocks():
            for v in b.outputs():
                need(v)
        owner = n.owningBlock().owningNode()
        if owner is not None:
            mark(owner)
    return live


def _sweep(block, live):
    for n in reversed(block.nodes()):
        if n not in live:
            n.destroy()
            continue
        for b in n.blocks():
            _sweep(b, live)
