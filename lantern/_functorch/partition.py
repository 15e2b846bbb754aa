"""Split a joint graph into the forward graph and the backward graph (AOTAutograd's default partitioner).

The forward graph holds the nodes the forward's outputs need (and any node with a side effect that does not
depend on a tangent and writes into an input or a forward value, such as a running-statistics update); every
other node is the backward's. The values the
backward reads from the forward side — intermediate results and primal inputs — are "saved": the forward graph
returns them after its outputs, and the backward graph takes them before the tangents. Constants are copied into
each graph that reads them, never saved.

    forward graph:  (primals...)           -> (outputs..., saved...)
    backward graph: (saved..., tangents...) -> (gradients...)

>>> import lantern
>>> from lantern._functorch.joint_graph import trace_joint
>>> w = lantern.tensor([2.0, 3.0], requires_grad=True)
>>> parts = partition(trace_joint(lambda x, w: (x * w).relu(), [lantern.ones(2), w]))
>>> [n.kind() for n in parts.forward.nodes()], parts.n_outputs, parts.n_saved   # saved: relu's output and x
(['aten::mul', 'aten::relu'], 1, 2)
>>> [n.kind() for n in parts.backward.nodes()]      # the relu mask is computed from the saved output
['prim::Constant', 'aten::gt', 'prim::Constant', 'aten::where', 'aten::mul']
"""
from ..jit.ir import Graph
from ..jit.passes._analysis import clone_node
from ..jit.passes.dead_code_elimination import dead_code_elimination

__all__ = ["partition", "Partition"]


class Partition:
    """`forward` and `backward` graphs; `n_outputs` forward outputs precede `n_saved` saved values."""

    def __init__(self, forward, backward, n_outputs, n_saved):
        self.forward, self.backward, self.n_outputs, self.n_saved = forward, backward, n_outputs, n_saved


def partition(joint):
    """The Partition of a JointGraph (see the module docstring)."""
    graph = joint.graph
    (result,) = graph.outputs()
    values = list(result.node().inputs())
    outputs, grads = values[:joint.n_outputs], values[joint.n_outputs:]
    tangents = set(graph.inputs()[joint.n_primals:])
    on_tangent = _depends_on(graph, tangents)
    needed = _needed(outputs)
    effects = [n for n in graph.nodes() if n.hasSideEffects() and n not in on_tangent and _writes(n, needed)]
    forward_nodes = needed | _needed([out for n in effects for out in n.outputs()])
    backward_nodes = [n for n in graph.nodes() if n not in forward_nodes and n is not result.node()
                      and n.kind() != "prim::Constant"]
    defined_in_backward = {v for n in backward_nodes for v in n.outputs()}
    saved = []
    for v in [v for n in backward_nodes for v in n.inputs()] + grads:
        if v not in defined_in_backward and v not in tangents and v.node().kind() != "prim::Constant" \
                and v not in saved:
            saved.append(v)
    forward = _extract(graph, graph.inputs()[:joint.n_primals], [n for n in graph.nodes() if n in forward_nodes],
                       outputs + saved)
    backward = _extract(graph, saved + graph.inputs()[joint.n_primals:], backward_nodes, grads)
    for k, (value, name) in enumerate(zip(backward.inputs(), saved)):
        if name.node().kind() != "prim::Param":  # an intermediate (a primal keeps its name)
            value.setDebugName(f"saved{k}")
    return Partition(forward, backward, len(outputs), len(saved))


def _depends_on(graph, sources):
    """The nodes that read (transitively) one of the `sources` values."""
    reached, tainted = set(), set(sources)
    for n in graph.nodes():
        if any(v in tainted for v in n.inputs()):
            reached.add(n)
            tainted.update(n.outputs())
    return reached


def _writes(node, needed):
    """Whether a node with a side effect writes into a primal or a value the forward computes anyway (a running
    statistic), rather than into a buffer of the backward's own (zeros for a gradient)."""
    target = node.inputs()[0] if node.inputs() else None
    return target is not None and (target.node().kind() == "prim::Param" or target.node() in needed)


def _needed(values):
    """The nodes that compute `values`, transitively."""
    needed, stack = set(), [v.node() for v in values]
    while stack:
        n = stack.pop()
        if n in needed or n.kind() == "prim::Param":
            continue
        needed.add(n)
        stack.extend(v.node() for v in n.inputs())
    return needed


def _extract(source, inputs, nodes, outputs):
    """A new graph with `inputs`, copies of `nodes` (and of the constants they read) and `outputs`."""
    graph = Graph()
    mapping = {}
    for v in inputs:
        mapping[v] = graph.addInput().copyMetadata(v)

    def value_map(v):
        if v not in mapping:  # a constant of the source graph
            mapping[v] = graph.appendNode(clone_node(graph, v.node(), value_map)).output()
        return mapping[v]
    for n in nodes:
        copy = graph.appendNode(clone_node(graph, n, value_map))
        mapping.update(zip(n.outputs(), copy.outputs()))
    for v in outputs:
        graph.registerOutput(value_map(v))
    dead_code_elimination(graph)
    return graph
