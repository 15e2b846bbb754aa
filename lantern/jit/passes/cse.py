"""Common subexpression elimination (torch/csrc/jit/passes/common_subexpression_elimination.cpp).

Two pure nodes with the same kind, the same inputs and equal attributes compute the same thing: the later one is
replaced by the earlier. A node in an outer block can stand in for one in an inner block, never the other way.
Nodes with side effects, random ops, nodes with blocks and nodes that read or make memory some node mutates
(torch's `hasWriters`) are left alone.

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x : Tensor):
...   %1 : int = prim::Constant[value=1]()
...   %y : Tensor = aten::add(%x, %1, %1)
...   %z : Tensor = aten::add(%x, %1, %1)
...   %w : Tensor = aten::mul(%y, %z)
...   return (%w)''')
>>> [n.kind() for n in cse(g).nodes()]
['prim::Constant', 'aten::add', 'aten::mul']
"""
from ._analysis import alias_root, is_pure, is_tensor, written_roots

__all__ = ["cse"]

_NEVER = {"prim::Param", "prim::Return", "prim::Uninitialized"}


def cse(graph):
    """Merge equal pure nodes of `graph` (nested blocks included); returns `graph`."""
    written = written_roots(graph)
    has_setattr = any(n.kind() == "prim::SetAttr" for n in graph.all_nodes())
    _cse_block(graph.block(), {}, written, has_setattr)
    return graph


def _cse_block(block, seen, written, has_setattr):
    for node in block.nodes():
        if node.blocks():
            for b in node.blocks():
                _cse_block(b, dict(seen), written, has_setattr)
            continue
        if not _candidate(node, written, has_setattr):
            continue
        try:
            key = _key(node)
        except TypeError:  # an attribute we cannot compare (an unhashable object)
            continue
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = node
            continue
        for old, new in zip(node.outputs(), earlier.outputs()):
            old.replaceAllUsesWith(new)
        node.destroy()


def _candidate(node, written, has_setattr):
    kind = node.kind()
    if kind in _NEVER or not node.outputs() or not is_pure(node):
        return False
    if kind == "prim::GetAttr" and has_setattr:
        return False
    return not any(alias_root(v) in written for v in node.inputs() + node.outputs())


def _key(node):
    attrs = tuple(sorted((name, _hashable(value)) for name, value in node.attrs.items()))
    types = tuple(str(v.type()) for v in node.outputs()) if node.kind() == "prim::Constant" else ()
    return node.kind(), tuple(id(v) for v in node.inputs()), attrs, len(node.outputs()), types


def _hashable(value):
    """A key equal for attribute values torch treats as equal (1, 1.0 and True stay different)."""
    if is_tensor(value):
        if value.numel() <= 64:
            return "tensor", str(value.dtype), tuple(value.shape), repr(value.tolist())
        return "tensor-id", id(value)
    if isinstance(value, (list, tuple)):
        return type(value).__name__, tuple(_hashable(v) for v in value)
    if isinstance(value, float):
        return "float", repr(value)
    if isinstance(value, (bool, int, str)) or value is None:
        return type(value).__name__, value
    hash(value)
    return type(value).__name__, value
