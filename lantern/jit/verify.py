"""jit.verify: check a Graph's invariants (torch's Graph::lint) and name the first broken node.

Checks SSA scoping (every input defined earlier in the same or an enclosing block), use-list and ownership
consistency, and the arity of prim::If / prim::Loop.

>>> from lantern.jit.ir import parse_ir
>>> from lantern.jit.verify import verify
>>> g = parse_ir('''graph(%x : Tensor):
...   %1 : Tensor = aten::neg(%x)
...   return (%1)''')
>>> verify(g)
>>> _ = g.nodes()[0].replaceInput(0, g.nodes()[0].output())
>>> verify(g)
Traceback (most recent call last):
  ...
RuntimeError: verify: aten::neg uses %1 before it is defined, or outside its scope: %1 : Tensor = aten::neg(%1)
"""
from .ir import Graph

__all__ = ["verify"]


def _describe(node):
    return str(node).strip().split("\n")[0]


def _fail(node, msg):
    raise RuntimeError(f"verify: {node.kind()} {msg}: {_describe(node)}")


def verify(graph):
    """Raise RuntimeError naming the offending node if `graph` breaks an IR invariant; return None.

    Subgraphs held in attributes (a prim::FusionGroup's 'Subgraph') are verified too."""
    _check_values(graph.param_node(), graph)
    _check_block(graph.block(), graph, set(map(id, graph.inputs())), None)
    for node in graph.all_nodes():
        for name, value in node.attrs.items():
            if isinstance(value, Graph):
                try:
                    verify(value)
                except RuntimeError as e:
                    raise RuntimeError(f"verify: in {node.kind()}'s {name}: {e}") from None


def _check_values(node, graph):
    for i, v in enumerate(node._outputs):
        if v._node is not node or v._offset != i:
            _fail(node, f"output {i} (%{v.debugName()}) does not point back to its node")
        for use in v._uses:
            user = use.user
            if use.offset >= len(user._inputs) or user._inputs[use.offset] is not v:
                _fail(node, f"output %{v.debugName()} has a stale use by {user.kind()} at input {use.offset}")
            if user._block is None:
                _fail(node, f"output %{v.debugName()} is used by a destroyed {user.kind()} node")
    if node._graph is not graph:
        _fail(node, "belongs to another graph")


def _check_inputs(node, scope):
    for i, v in enumerate(node._inputs):
        if id(v) not in scope:
            _fail(node, f"uses %{v.debugName()} before it is defined, or outside its scope")
        if sum(1 for u in v._uses if u.user is node and u.offset == i) != 1:
            _fail(node, f"input {i} (%{v.debugName()}) is missing from that value's use list")


def _check_block(block, graph, scope, owner):
    if block._owning_node is not owner:
        _fail(owner or block._param, "owns a block that points to a different owning node")
    if block._param._block is not block or block._return._block is not block:
        _fail(block._param, "block sentinel nodes are not owned by their block")
    _check_values(block._param, graph)
    prev = block._param
    node = block._param._next
    while node is not block._return:
        if node is None or node._prev is not prev:
            _fail(prev, "node list is broken after this node")
        if node._block is not block:
            _fail(node, "is listed in a block it does not belong to")
        _check_node(node, graph, scope)
        prev, node = node, node._next
    if block._return._prev is not prev:
        _fail(block._return, "return node is not linked after the last node")
    _check_inputs(block._return, scope)


def _check_node(node, graph, scope):
    _check_inputs(node, scope)
    _check_arity(node)
    for b in node._blocks:
        inner = set(scope)
        inner.update(map(id, b._param._outputs))
        _check_block(b, graph, inner, node)
    _check_values(node, graph)
    for v in node._outputs:
        if id(v) in scope:
            _fail(node, f"defines %{v.debugName()} twice")
        scope.add(id(v))


def _check_arity(node):
    kind, blocks = node.kind(), node._blocks
    if kind == "prim::If":
        if len(node._inputs) != 1 or len(blocks) != 2:
            _fail(node, f"needs 1 input and 2 blocks, has {len(node._inputs)} inputs and {len(blocks)} blocks")
        for i, b in enumerate(blocks):
            if b._param._outputs:
                _fail(node, f"block{i} must take no inputs")
            if len(b._return._inputs) != len(node._outputs):
                _fail(node, f"block{i} returns {len(b._return._inputs)} values for {len(node._outputs)} outputs")
    elif kind == "prim::Loop":
        if len(node._inputs) < 2 or len(blocks) != 1:
            _fail(node, "needs (max_trip_count, cond, *carried) inputs and 1 block")
        carried = len(node._inputs) - 2
        b = blocks[0]
        if len(b._param._outputs) != carried + 1:
            _fail(node, f"block0 takes {len(b._param._outputs)} inputs, expected {carried + 1} (i, *carried)")
        if len(b._return._inputs) != carried + 1:
            _fail(node, f"block0 returns {len(b._return._inputs)} values, expected {carried + 1} "
                        "(cond, *carried)")
        if len(node._outputs) != carried:
            _fail(node, f"has {len(node._outputs)} outputs for {carried} loop-carried values")
