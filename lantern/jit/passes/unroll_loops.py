"""Loop unrolling (torch/csrc/jit/passes/loop_unrolling.cpp) for `for` loops (`prim::Loop` whose start and
continue conditions are the constant True).

A loop with a body of at most 32 nodes is unrolled: fully when its trip count is a constant below 64 (the loop
disappears), otherwise by a factor of 8 — the body is repeated 8 times in a loop that runs `n // 8` times
(`aten::__round_to_zero_floordiv`) followed by an epilogue loop for the `n - 8 * (n // 8)` remaining trips. When
the body reads the iteration counter, it first becomes a loop-carried int starting at 0 and bumped by
`aten::add(i, 1)` at the end of each body, so that the copies see the right value. Inner loops are unrolled
first; the pass ends with dead code elimination.

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x.1 : Tensor):
...   %1 : bool = prim::Constant[value=1]()
...   %2 : int = prim::Constant[value=3]()
...   %3 : int = prim::Constant[value=2]()
...   %x : Tensor = prim::Loop(%2, %1, %x.1)
...     block0(%i : int, %x.2 : Tensor):
...       %x.3 : Tensor = aten::mul(%x.2, %3)
...       -> (%1, %x.3)
...   return (%x)''')
>>> [n.kind() for n in unroll_loops(g).nodes()]
['prim::Constant', 'aten::mul', 'aten::mul', 'aten::mul']
"""
from ..types import IntType
from ._analysis import clone_node, constant_value
from .dead_code_elimination import dead_code_elimination

__all__ = ["unroll_loops"]

UNROLL_FACTOR = 8
MAX_BODY_SIZE = 32
MAX_BODY_REPEATS = 64


def unroll_loops(graph):
    """Unroll every small `for` loop of `graph`; returns `graph`."""
    if _unroll_block(graph.block()):
        dead_code_elimination(graph)
    return graph


def _unroll_block(block):
    changed = False
    for node in block.nodes():
        for b in node.blocks():
            changed |= _unroll_block(b)
        if _is_for_loop(node) and _block_size(node.blocks()[0], MAX_BODY_SIZE + 1) <= MAX_BODY_SIZE:
            _unroll(node)
            changed = True
    return changed


def _is_true(v):
    return constant_value(v) == (True, True)


def _is_for_loop(node):
    return node.kind() == "prim::Loop" and _is_true(node.inputs()[1]) and _is_true(node.blocks()[0].outputs()[0])


def _block_size(block, limit):
    """The number of nodes in `block`, nested blocks included, counting no further than `limit`."""
    size = 0
    for node in block.nodes():
        size += 1
        for b in node.blocks():
            size += _block_size(b, limit - size)
        if size >= limit:
            return size
    return size


def _unroll(loop):
    graph = loop.owningGraph()
    body = loop.blocks()[0]
    if body.inputs()[0].uses():
        _replace_loop_counter(loop)
    known, trips = constant_value(loop.inputs()[0])
    if known and isinstance(trips, int) and trips < MAX_BODY_REPEATS:
        _repeat_body(loop, max(trips, 0))
        _inline_single_trip(loop)
        return
    epilogue = clone_node(graph, loop, lambda v: v).insertAfter(loop)
    for i, out in enumerate(loop.outputs()):
        out.replaceAllUsesWith(epilogue.outputs()[i])
        epilogue.replaceInput(i + 2, out)
    _repeat_body(loop, UNROLL_FACTOR)
    with graph.insert_point_guard(loop):
        count = loop.inputs()[0]
        unrolled = _int_op(graph, "aten::__round_to_zero_floordiv", count, graph.insertConstant(UNROLL_FACTOR))
        done = _int_op(graph, "aten::mul", unrolled, graph.insertConstant(UNROLL_FACTOR))
        rest = _int_op(graph, "aten::sub", count, done)
    loop.replaceInput(0, unrolled)
    epilogue.replaceInput(0, rest)


def _int_op(graph, kind, a, b):
    out = graph.insert(kind, [a, b]).output()
    out.setType(IntType.get())
    return out


def _replace_loop_counter(loop):
    """Make the iteration counter an explicit loop-carried int, so repeated bodies can each advance it."""
    graph = loop.owningGraph()
    body = loop.blocks()[0]
    with graph.insert_point_guard(loop):
        start = graph.insertConstant(0)
    loop.insertInput(2, start)
    loop.insertOutput(0).setType(IntType.get())
    counter = body.insertInput(1)
    counter.setType(IntType.get())
    body.inputs()[0].replaceAllUsesWith(counter)
    with graph.insert_point_guard(body):
        nxt = _int_op(graph, "aten::add", counter, graph.insertConstant(1))
    body.insertOutput(1, nxt)


def _repeat_body(loop, times):
    """Replace the loop's body by `times` chained copies of it (one trip of the new body = `times` trips)."""
    graph = loop.owningGraph()
    body = loop.blocks()[0]
    dest = loop.addBlock()
    for v in body.inputs():
        dest.addInput().copyMetadata(v)
    carried = dest.inputs()[1:]
    env = {}
    for _ in range(times):
        env = {body.inputs()[0]: dest.inputs()[0]}
        env.update(zip(body.inputs()[1:], carried))
        for node in body.nodes():
            clone = dest.appendNode(clone_node(graph, node, lambda v: env.get(v, v)))
            env.update(zip(node.outputs(), clone.outputs()))
        carried = [env.get(v, v) for v in body.outputs()[1:]]
    cond = body.outputs()[0]
    if cond.node().owningBlock() is body or cond in body.inputs():
        with graph.insert_point_guard(dest):
            cond = graph.insertConstant(True)
    dest.registerOutput(cond)
    for v in carried:
        dest.registerOutput(v)
    loop.eraseBlock(0)


def _inline_single_trip(loop):
    """Replace a loop whose body runs exactly once by the body's nodes."""
    graph = loop.owningGraph()
    body = loop.blocks()[0]
    if body.inputs()[0].uses():
        with graph.insert_point_guard(loop):
            body.inputs()[0].replaceAllUsesWith(graph.insertConstant(0))
    for param, arg in zip(body.inputs()[1:], loop.inputs()[2:]):
        param.replaceAllUsesWith(arg)
    for node in body.nodes():
        node.moveBefore(loop)
    for out, res in zip(loop.outputs(), body.outputs()[1:]):
        out.replaceAllUsesWith(res)
    loop.destroy()
