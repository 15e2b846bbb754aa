"""Freezing a scripted module and the ops it needs (torch.jit.freeze, optimize_for_inference, export_opnames).

`freeze(module)` turns an eval-mode RecursiveScriptModule into one whose methods read no attributes: submodule
calls are inlined, every parameter, buffer and attribute the methods only read becomes a constant of the graph,
and constant propagation and dead-code elimination run over the result. What is written somewhere (prim::SetAttr)
or named in `preserved_attrs` stays an attribute. The frozen module has no parameters; it computes what the
module computed.

>>> import lantern
>>> m = lantern.jit.script(lantern.nn.Sequential(lantern.nn.Linear(3, 2), lantern.nn.ReLU())).eval()
>>> frozen = lantern.jit.freeze(m)
>>> list(frozen.named_parameters()), sorted({n.kind() for n in frozen.graph.nodes()})
([], ['aten::linear', 'aten::relu', 'prim::Constant'])
>>> x = lantern.randn(4, 3)
>>> bool((frozen(x) == m(x)).all())
True
"""
from ..nn.modules.module import Module
from ..ops.registry import REGISTRY
from .module import RecursiveScriptModule
from .passes import constant_propagation, dead_code_elimination, inline

__all__ = ["freeze", "optimize_for_inference", "export_opnames"]


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """A frozen copy of the eval-mode scripted module `mod` (see the module docstring). `preserved_attrs` names
    attributes and methods to keep; `optimize_numerics` is accepted as torch's flag (lantern's freezing has no
    numerics-changing folds to turn off)."""
    if not isinstance(mod, RecursiveScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() "
                           "on your module before freezing.")
    preserved = set(preserved_attrs or ())
    method_names = ["forward"] + [name for name in preserved if name in mod._methods and name != "forward"]
    graphs = {name: inline(mod._methods[name].copy(), mod) for name in method_names if name in mod._methods}
    written = {node.s("name") for graph in graphs.values() for node in graph.findAllNodes("prim::SetAttr")}
    kept = preserved | written
    for graph in graphs.values():
        _fold_attribute_reads(graph, mod, kept)
        constant_propagation(graph)
        dead_code_elimination(graph)
    attributes = {name: getattr(mod, name) for name in kept if hasattr(mod, name) and name not in mod._methods}
    params = {k: v for k, v in attributes.items() if k in mod._parameters}
    buffers = {k: v for k, v in attributes.items() if k in mod._buffers}
    submodules = {k: v for k, v in attributes.items() if k in mod._modules}
    others = {k: v for k, v in attributes.items() if k not in params and k not in buffers and k not in submodules}
    frozen = RecursiveScriptModule._construct(mod.original_name, params, buffers, submodules, others, graphs,
                                              training=False)
    frozen.__dict__["_frozen"] = True
    return frozen


def _fold_attribute_reads(graph, mod, kept):
    """Replace each prim::GetAttr of the module tree that reads a tensor or a plain value (not a submodule, not a
    kept name of the top module) by a constant of its current value."""
    owners = {graph.inputs()[0]: mod}
    for node in list(graph.findAllNodes("prim::GetAttr")):
        owner = owners.get(node.inputs()[0])
        if owner is None:
            continue
        name = node.s("name")
        if owner is mod and name in kept:
            continue
        value = getattr(owner, name)
        if isinstance(value, Module):
            owners[node.output()] = value
            continue
        with graph.insert_point_guard(node):
            constant = graph.insertConstant(value.detach() if hasattr(value, "detach") else value,
                                            node.output().type())
        if not node.output().debugName().isdigit():
            constant.setDebugName(node.output().debugName())
        node.output().replaceAllUsesWith(constant)


def optimize_for_inference(mod, other_methods=None):
    """Freeze `mod` if it is not frozen yet (keeping `other_methods`) and run the graph optimizations on it; the
    result computes what `mod` computes, for inference."""
    if not isinstance(mod, RecursiveScriptModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    if not getattr(mod, "_frozen", False):
        mod = freeze(mod.eval(), preserved_attrs=other_methods or [])
    for graph in mod._methods.values():
        constant_propagation(graph)
        dead_code_elimination(graph)
    return mod


def export_opnames(m):
    """The operators the scripted module's methods (and the submodules they call) run, as 'aten::name' or
    'aten::name.overload' strings: what a mobile build of the model would need."""
    names = set()
    for graph in m._methods.values():
        for node in inline(graph.copy(), m).nodes():
            _collect(node, names)
    return sorted(names)


def _collect(node, names):
    kind = node.kind()
    if kind.startswith("aten::"):
        op = REGISTRY.get(node.attrs.get("op", ""))
        overload = op.name.partition(".")[2] if op is not None else ""
        names.add(kind + ("." + overload if overload else ""))
    for block in node.blocks():
        for inner in block.nodes():
            _collect(inner, names)
