"""Inlining (torch/csrc/jit/passes/inliner.cpp): replace calls by a copy of the callee's body.

`prim::CallFunction` is inlined when its callee graph is known: the node's 'Subgraph' attribute, a compiled
function in its 'fn'/'function' attribute, or a `prim::Constant` first input holding one (the arguments are the
node's last inputs, one per callee input). `prim::CallMethod[name=...]` needs the module the graph belongs to:
pass it as `module` and the pass follows the `prim::GetAttr` chain from the graph's `self` input to the
submodule and takes its method graph (not through an attribute declared with a jit.interface type, which the
program may assign another module). Calls inside inlined bodies are inlined too; calls that cannot be resolved stay
as they are.

>>> from lantern.jit.ir import Graph, parse_ir
>>> callee = parse_ir('''graph(%a : Tensor):
...   %1 : Tensor = aten::neg(%a)
...   return (%1)''')
>>> g = Graph()
>>> x = g.addInput("x")
>>> call = g.insertNode(g.create("prim::CallFunction", [x])).g_("Subgraph", callee)
>>> _ = g.registerOutput(call.output())
>>> [n.kind() for n in inline(g).nodes()]
['aten::neg']
"""
from ._analysis import clone_node, constant_value

__all__ = ["inline"]

_MAX_ROUNDS = 100


def inline(graph, module=None):
    """Inline every resolvable CallFunction (and CallMethod, given the owning `module`); returns `graph`."""
    self_value = graph.inputs()[0] if module is not None and graph.inputs() else None
    for _ in range(_MAX_ROUNDS):
        changed = False
        for node in graph.all_nodes():
            if node.owningBlock() is None:
                continue
            callee, args = _callee(node, module, self_value)
            if callee is not None:
                _inline_call(node, callee, args)
                changed = True
        if not changed:
            return graph
    raise RuntimeError("inline: calls nested more than 100 levels deep (recursive TorchScript functions are not "
                       "supported)")


def _callee(node, module, self_value):
    """(callee graph, argument values) for a call this pass can inline, else (None, None)."""
    kind = node.kind()
    inputs = node.inputs()
    if kind == "prim::CallFunction":
        graph = node.attrs.get("Subgraph")
        if graph is None:
            target = node.attrs.get("fn", node.attrs.get("function"))
            if target is None and inputs:
                known, target = constant_value(inputs[0])
            graph = getattr(target, "graph", None)
        if graph is None or not hasattr(graph, "inputs") or len(graph.inputs()) > len(inputs):
            return None, None
        return graph, inputs[len(inputs) - len(graph.inputs()):]
    if kind == "prim::CallMethod" and module is not None and inputs:
        owner = _resolve_object(inputs[0], module, self_value)
        graph = _method_graph(owner, node.attrs.get("name", "forward"))
        if graph is None or len(graph.inputs()) != len(inputs):
            return None, None
        return graph, inputs
    return None, None


_UNRESOLVED = object()


def _resolve_object(value, module, self_value):
    """The Python object `value` stands for: the module for `self`, attributes along prim::GetAttr chains."""
    if value is self_value:
        return module
    node = value.node()
    if node.kind() != "prim::GetAttr" or "interface" in node.attrs:  # an interface-typed attribute may be swapped
        return _UNRESOLVED
    owner = _resolve_object(node.input(0), module, self_value)
    if owner is _UNRESOLVED:
        return _UNRESOLVED
    return getattr(owner, node.attrs.get("name"), _UNRESOLVED)


def _method_graph(owner, name):
    if owner is _UNRESOLVED:
        return None
    methods = getattr(owner, "__dict__", {}).get("_methods")
    if methods is not None and name in methods:
        return methods[name]
    return getattr(getattr(owner, name, None), "graph", None)


def _inline_call(node, callee, args):
    graph = node.owningGraph()
    env = dict(zip(callee.inputs(), args))
    for inner in callee.nodes():
        clone = clone_node(graph, inner, env.__getitem__).insertBefore(node)
        env.update(zip(inner.outputs(), clone.outputs()))
    for out, result in zip(node.outputs(), callee.outputs()):
        out.replaceAllUsesWith(env[result])
    node.destroy()
