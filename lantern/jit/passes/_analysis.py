"""What the passes need to know about nodes: purity, mutation, aliasing, constants (a small AliasDb).

A node is *pure* when running it twice on the same inputs gives equal results and nothing else changes: no
mutation, no raise, no print, no call of unknown code, no random numbers. Mutation is tracked per *alias root*:
the value whose memory a value shares (views and in-place results point back to the tensor they were made from).

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x : Tensor):
...   %1 : int = prim::Constant[value=1]()
...   %y : Tensor = aten::t(%x)
...   %z : Tensor = aten::add_(%y, %1, %1)
...   return (%z)''')
>>> y, z = [n.output() for n in g.nodes()][1:]
>>> alias_root(z) is alias_root(y) is g.inputs()[0], mutated_inputs(z.node())
(True, [0])
"""
from ..._tensor import Tensor
from ...ops import registry
from ...ops.op_kinds import AliasKind

_NONDETERMINISTIC = {
    "aten::rand", "aten::randn", "aten::randint", "aten::randperm", "aten::rand_like", "aten::randn_like",
    "aten::randint_like", "aten::bernoulli", "aten::multinomial", "aten::normal", "aten::dropout",
    "aten::feature_dropout", "aten::alpha_dropout", "aten::poisson", "aten::empty", "aten::empty_like",
    "aten::empty_strided", "aten::rrelu",
}
_SIDE_EFFECT_KINDS = {
    "prim::RaiseException", "prim::Print", "aten::warn", "prim::SetAttr", "prim::CallMethod", "prim::CallFunction",
    "prim::PythonOp", "prim::AddStatValue", "prim::TimePoint", "prim::Enter", "prim::Exit",
    "prim::Return", "prim::Guard",
}
_LIST_MUTATORS = {
    "aten::append", "aten::insert", "aten::pop", "aten::clear", "aten::extend", "aten::_set_item", "aten::remove",
    "aten::reverse", "aten::sort", "aten::__setitem__",
}


def op_of(node):
    """The lantern registry Operator an `aten::` node dispatches to, or None."""
    name = node.attrs.get("op") if hasattr(node, "attrs") else None
    if name is None:
        return None
    try:
        return registry.get(name)
    except KeyError:
        return None


def mutated_inputs(node):
    """Indices of the inputs `node` writes to (in-place ops, out= ops, list mutation)."""
    op = op_of(node)
    if op is not None:
        if op.alias is AliasKind.INPLACE:
            return [0]
        if op.alias is AliasKind.OUT:
            names = [a.name for a in op.schema.args]
            return [names.index("out")] if "out" in names and names.index("out") < len(node.inputs()) else []
        return []
    kind = node.kind()
    if kind in _LIST_MUTATORS:
        return [0]
    base = kind.partition("::")[2]
    if kind.startswith("aten::") and base.endswith("_") and not base.endswith("__") and node.inputs():
        return [0]
    return []


def is_nondeterministic(node):
    if node.kind() in _NONDETERMINISTIC:
        return True
    op = op_of(node)
    return op is not None and any(a.type.startswith("Generator") for a in op.schema.args)


def has_side_effects(node):
    """True for nodes that must run even when their outputs are unused (not counting pure mutation of locals)."""
    kind = node.kind()
    if kind in _SIDE_EFFECT_KINDS:
        return True
    if kind == "prim::FusionGroup" or kind.startswith("prim::") or op_of(node) is not None:
        return False
    if mutated_inputs(node):
        return False
    has = getattr(node, "hasSideEffects", None)
    return bool(has()) if has is not None else False


def writes_anything(node):
    """Mutation or any other side effect, anywhere inside `node` (its blocks included)."""
    if has_side_effects(node) or mutated_inputs(node):
        return True
    return any(writes_anything(n) for b in node.blocks() for n in b.nodes())


def is_pure(node):
    """Pure and deterministic, with no blocks that could hide effects."""
    return not writes_anything(node) and not is_nondeterministic(node)


def alias_root(value):
    """The value whose memory `value` shares: follow views, in-place and out= results back to their source."""
    seen = 0
    while seen < 10_000:
        seen += 1
        node = value.node()
        if node is None or node.kind() in ("prim::Param", "prim::Return"):
            return value
        op = op_of(node)
        if op is not None:
            if op.alias in (AliasKind.VIEW, AliasKind.INPLACE) and node.inputs():
                value = node.inputs()[0]
                continue
            if op.alias is AliasKind.OUT:
                idx = mutated_inputs(node)
                if idx:
                    value = node.inputs()[idx[0]]
                    continue
            return value
        if mutated_inputs(node) and node.outputs() and node.inputs():
            value = node.inputs()[0]
            continue
        return value
    return value


def written_roots(graph):
    """The alias roots of every value some node in `graph` mutates."""
    roots = set()
    for node in walk(graph.block()):
        for i in mutated_inputs(node):
            roots.add(alias_root(node.inputs()[i]))
    return roots


def walk(block):
    """Every node in `block` and its nested blocks, outer before inner, as a list (safe to mutate while using)."""
    out = []
    for node in list(block.nodes()):
        out.append(node)
        for b in node.blocks():
            out.extend(walk(b))
    return out


def constant_value(value):
    """(True, python_value) if `value` is produced by a prim::Constant, else (False, None)."""
    node = value.node()
    if node is None or node.kind() != "prim::Constant":
        return False, None
    return True, node.attrs.get("value")


def is_tensor(x):
    return isinstance(x, Tensor)


def clone_node(graph, node, value_map):
    """A copy of `node` (from any graph) for `graph`, nested blocks included, with fresh values that keep the
    originals' types and debug names; inputs defined outside the node are mapped by the callable `value_map`."""
    new = graph.create(node.kind(), [value_map(v) for v in node.inputs()], len(node.outputs()))
    new.copyAttributes(node)
    new.setSourceRange(node.sourceRange())
    for old, out in zip(node.outputs(), new.outputs()):
        out.copyMetadata(old)
    local = {}

    def inner(v):
        return local[v] if v in local else value_map(v)
    for block in node.blocks():
        copy = new.addBlock()
        for param in block.inputs():
            local[param] = copy.addInput().copyMetadata(param)
        for n in block.nodes():
            c = copy.appendNode(clone_node(graph, n, inner))
            local.update(zip(n.outputs(), c.outputs()))
        for v in block.outputs():
            copy.registerOutput(inner(v))
    return new
