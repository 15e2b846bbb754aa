"""Elementwise fusion (torch/csrc/jit/passes/graph_fuser.cpp): chains of pointwise ops become one
`prim::FusionGroup` node whose 'Subgraph' attribute holds the chain as a Graph.

Fusible: an `aten::` node dispatching to a functional pointwise op of lantern's registry
(`registry.get(name).pointwise`: add, sub, mul, div, neg, tanh, sigmoid, exp, log, relu, pow, where, ...) with
one tensor output. Scanning each block from the end, a fusible node starts a group that absorbs the fusible
producers of its inputs, one at a time, as long as the producer can move down next to the group: no node
between them reads the producer's outputs or has a side effect. Scalar constants are copied into the
subgraph; other values become the group's inputs, and every member output used outside the group becomes a
group output. Groups smaller than `min_size` ops stay unfused; blocks are fused separately. Ends with dead code
elimination when a group was made.
`lantern.jit.fusion.run_fusion_group` runs the subgraph.

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x : Tensor):
...   %1 : int = prim::Constant[value=1]()
...   %y : Tensor = aten::add(%x, %1, %1)
...   %z : Tensor = aten::tanh(%y)
...   return (%z)''')
>>> [n.kind() for n in fuse(g).nodes()]
['prim::FusionGroup']
>>> print(g.nodes()[0].g("Subgraph"))
graph(%x : Tensor):
  %1 : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%x, %1, %1)
  %z : Tensor = aten::tanh(%y)
  return (%z)
<BLANKLINE>
"""
from ...ops.op_kinds import AliasKind, OpKind
from ..ir import Graph
from ..types import DictType, ListType, TensorType, TupleType, ClassType
from ._analysis import clone_node, constant_value, is_tensor, op_of, writes_anything
from .dead_code_elimination import dead_code_elimination

__all__ = ["fuse", "is_fusible"]


def is_fusible(node):
    """True for a functional pointwise registry op with one tensor output and no list/tuple inputs."""
    op = op_of(node)
    if op is None or not op.pointwise or op.kind is not OpKind.STRUCTURED or op.alias is not AliasKind.NEW:
        return False
    if len(node.outputs()) != 1 or not isinstance(node.output().type(), TensorType):
        return False
    return not any(isinstance(v.type(), (ListType, TupleType, DictType, ClassType)) for v in node.inputs())


def fuse(graph, min_size=2, can_fuse=is_fusible):
    """Group fusible nodes of `graph` into prim::FusionGroup nodes; returns `graph`."""
    if _fuse_block(graph.block(), min_size, can_fuse):
        dead_code_elimination(graph)
    return graph


def _fuse_block(block, min_size, can_fuse):
    fused = False
    for node in block.nodes():
        for b in node.blocks():
            fused |= _fuse_block(b, min_size, can_fuse)
    node = block.return_node().prev()
    while node.kind() != "prim::Param":
        if not can_fuse(node):
            node = node.prev()
            continue
        group = _grow([node], can_fuse)
        before = group[0].prev()
        if len(group) >= min_size:
            _materialise(group)
            fused = True
        node = before
    return fused


def _grow(group, can_fuse):
    """Absorb fusible producers into `group` (a contiguous run of nodes, in order) while it is legal."""
    members = set(group)
    while True:
        candidates = {v.node() for n in group for v in n.inputs()}
        candidates = [p for p in candidates if p not in members and p.owningBlock() is group[0].owningBlock()
                      and p.kind() != "prim::Constant" and can_fuse(p)]
        moved = False
        for producer in _latest_first(candidates):
            if _can_move_down(producer, group[0]):
                producer.moveBefore(group[0])
                group.insert(0, producer)
                members.add(producer)
                moved = True
                break
        if not moved:
            return group


def _latest_first(nodes):
    """The producers nearest the group first (moving those never needs to jump over another candidate)."""
    if not nodes:
        return []
    order = {n: i for i, n in enumerate(nodes[0].owningBlock().nodes())}
    return sorted(nodes, key=lambda p: -order[p])


def _can_move_down(producer, first):
    """True when no node between `producer` and `first` reads the producer's outputs or has a side effect."""
    outputs = set(producer.outputs())
    n = producer.next()
    while n is not first:
        if writes_anything(n) or any(v in outputs for v in _all_inputs(n)):
            return False
        n = n.next()
    return True


def _all_inputs(node):
    yield from node.inputs()
    for b in node.blocks():
        for inner in b.nodes():
            yield from _all_inputs(inner)
        yield from b.outputs()


def _materialise(group):
    graph = group[0].owningGraph()
    members = set(group)
    sub = Graph()
    fused = graph.create("prim::FusionGroup", [], num_outputs=0)
    env = {}
    constants = []

    def lookup(v):
        if v in env:
            return env[v]
        known, value = constant_value(v)
        if known and not is_tensor(value):
            env[v] = sub.insertConstant(value, v.type())
            env[v].node().moveAfter(constants[-1] if constants else sub.param_node())  # constants first
            constants.append(env[v].node())
        else:
            env[v] = sub.addInput().copyMetadata(v)
            fused.addInput(v)
        return env[v]

    for node in group:
        clone = sub.insertNode(clone_node(sub, node, lookup))
        env.update(zip(node.outputs(), clone.outputs()))
    escaping = []
    for node in group:
        for v in node.outputs():
            if any(u.user not in members for u in v.uses()):
                sub.registerOutput(env[v])
                escaping.append((v, fused.addOutput().setType(v.type())))
    fused.g_("Subgraph", sub)
    fused.insertBefore(group[0])
    for v, out in escaping:
        name = v.debugName() if v.hasDebugName() else None
        for use in v.uses():
            if use.user not in members:
                use.user.replaceInput(use.offset, out)
        if name:
            v.setDebugName(None)
            out.setDebugName(name)
    for node in reversed(group):
        node.destroy()
