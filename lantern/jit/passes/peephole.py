"""Peephole optimisation (torch/csrc/jit/passes/peephole*.cpp): local rewrites that make a node unnecessary.

Implemented, as torch's `_jit_pass_peephole` does them:
- `aten::t(aten::t(x))` -> `x` (spec case 26: the traced `x.t().t()` becomes `return (%x)`);
- `aten::expand(x, size)` -> `x` when x's type has exactly that constant size;
- `aten::type_as(x, y)` -> `x` when both types have the same known dtype and device;
- `x + 0`, `x - 0` (alpha 1), `x * 1`, `x / 1` with a scalar constant -> `x`, only when that cannot change the
  result dtype (x known floating, or an int scalar; `/` needs x floating) and when x and the result do not
  both escape the graph (torch's `safeToChangeAliasingRelationship`);
- with refined tensor types: `aten::size(x)`, `aten::size(x, d)`, `aten::dim`, `prim::dtype`, `prim::device`,
  `aten::is_floating_point` -> constants;
- `x is None` / `x is not None` when x's type cannot be None (or is None) -> a bool constant;
- an If output that is `True` in the then-branch and `False` in the else-branch -> the condition (constant
  conditions and outputs both branches share are constant propagation's job, as in torch);
- tuple and list idioms: `TupleIndex`/`__getitem__` of a `TupleConstruct`; `len`, `ListUnpack` and constant
  `__getitem__` of a `ListConstruct` nobody mutates -> a constant / the element (torch leaves `TupleUnpack`
  to its tuple-lowering pass);
- `unchecked_cast` / `_unwrap_optional` to a type the input already has -> the input.
When it changed something it finishes with dead code elimination, as torch does. torch's peephole does not
rewrite `x.contiguous()`, `-(-x)` or TupleUnpack of TupleConstruct, and neither does this pass.

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x : Tensor):
...   %1 : Tensor = aten::t(%x)
...   %2 : Tensor = aten::t(%1)
...   return (%2)''')
>>> print(peephole(g))
graph(%x : Tensor):
  return (%x)
<BLANKLINE>
"""
from ...core.device import device
from ..types import NoneType, OptionalType, AnyType, TensorType
from ._analysis import alias_root, constant_value, walk, written_roots
from .dead_code_elimination import dead_code_elimination

__all__ = ["peephole"]


def peephole(graph):
    """Apply the peephole rewrites above until none applies; returns `graph`."""
    changed, ever_changed = True, False
    while changed:
        changed = False
        written = written_roots(graph)
        for node in walk(graph.block()):
            rule = _RULES.get(node.kind())
            if rule is not None and rule(graph, node, written):
                changed = ever_changed = True
    return dead_code_elimination(graph) if ever_changed else graph


def _replace(node, value):
    if not node.output().uses():  # already rewritten: DCE removes the node
        return False
    node.output().replaceAllUsesWith(value)
    return True


def _constant(graph, node, value):
    if not node.output().uses():
        return False
    with graph.insert_point_guard(node):
        return _replace(node, graph.insertConstant(value))


def _tensor_type(v):
    t = v.type()
    return t if isinstance(t, TensorType) else None


def _t(graph, node, written):
    inner = node.input().node()
    if inner.kind() == "aten::t" and node.output().uses():
        return _replace(node, inner.input())
    return False


def _int_list(v):
    """The constant int list `v` holds (a list constant or a ListConstruct of int constants), else None."""
    known, value = constant_value(v)
    if known:
        return list(value) if isinstance(value, (list, tuple)) else None
    if v.node().kind() != "prim::ListConstruct":
        return None
    out = []
    for item in v.node().inputs():
        known, value = constant_value(item)
        if not known or not isinstance(value, int):
            return None
        out.append(value)
    return out


def _expand(graph, node, written):
    t = _tensor_type(node.input(0))
    size = _int_list(node.input(1)) if len(node.inputs()) > 1 else None
    if t is None or t.sizes is None or None in t.sizes or size is None or not node.output().uses():
        return False
    if list(t.sizes) == size:
        return _replace(node, node.input(0))
    return False


def _type_as(graph, node, written):
    a, b = _tensor_type(node.input(0)), _tensor_type(node.input(1))
    if a is None or b is None or a.dtype is None or a.dtype != b.dtype or not node.output().uses():
        return False
    if a.device is None or b.device is None or str(a.device) != str(b.device):
        return False
    return _replace(node, node.input(0))


def _escapes(v, graph):
    return v in graph.inputs() or v in graph.outputs()


def _identity_arith(graph, node, written):
    """x + 0, x - 0, x * 1, x / 1 -> x when the dtype cannot change and aliasing stays safe."""
    kind = node.kind()
    ins = node.inputs()
    x, out = ins[0], node.output()
    if not out.uses() or _tensor_type(x) is None or len(ins) < 2:
        return False
    known, other = constant_value(ins[1])
    if not known or isinstance(other, bool) or not isinstance(other, (int, float)):
        return False
    scalars = [other]
    if kind in ("aten::add", "aten::sub"):
        known_a, alpha = constant_value(ins[2]) if len(ins) > 2 else (True, 1)
        if not known_a or isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha != 1:
            return False
        scalars.append(alpha)
        if other != 0:
            return False
    elif other != 1 or (kind == "aten::div" and len(ins) > 2 and constant_value(ins[2]) != (True, None)):
        return False
    dtype = _tensor_type(x).dtype
    floating = dtype is not None and dtype.is_floating_point
    if kind == "aten::div" and not floating:
        return False
    if not floating and not all(isinstance(s, int) for s in scalars):
        return False
    if alias_root(x) in written or out in written:
        return False
    if _escapes(x, graph) and _escapes(out, graph):
        return False
    return _replace(node, x)


def _size(graph, node, written):
    t = _tensor_type(node.input(0))
    if t is None or t.sizes is None or None in t.sizes:
        return False
    if len(node.inputs()) == 1:
        return _constant(graph, node, list(t.sizes))
    known, dim = constant_value(node.input(1))
    if not known or not isinstance(dim, int) or not -len(t.sizes) <= dim < len(t.sizes):
        return False
    return _constant(graph, node, t.sizes[dim])


def _dim(graph, node, written):
    t = _tensor_type(node.input(0))
    if t is None or t.sizes is None:
        return False
    return _constant(graph, node, len(t.sizes))


def _dtype(graph, node, written):
    t = _tensor_type(node.input(0))
    return t is not None and t.dtype is not None and _constant(graph, node, t.dtype)


def _device(graph, node, written):
    t = _tensor_type(node.input(0))
    return t is not None and t.device is not None and _constant(graph, node, device(str(t.device)))


def _is_floating_point(graph, node, written):
    t = _tensor_type(node.input(0))
    return t is not None and t.dtype is not None and _constant(graph, node, bool(t.dtype.is_floating_point))


def _may_be_none(t):
    return isinstance(t, (NoneType, OptionalType, AnyType))


def _is(graph, node, written):
    a, b = node.input(0).type(), node.input(1).type()
    negate = node.kind() == "aten::__isnot__"
    if isinstance(a, NoneType) and isinstance(b, NoneType):
        return _constant(graph, node, not negate)
    if (isinstance(a, NoneType) and not _may_be_none(b)) or (isinstance(b, NoneType) and not _may_be_none(a)):
        return _constant(graph, node, negate)
    return False


def _if(graph, node, written):
    changed = False
    then_b, else_b = node.blocks()
    for i, out in enumerate(node.outputs()):
        if out.uses() and constant_value(then_b.outputs()[i]) == (True, True) \
                and constant_value(else_b.outputs()[i]) == (True, False):
            out.replaceAllUsesWith(node.input(0))
            changed = True
    return changed


def _tuple_index(graph, node, written):
    tup = node.input(0).node()
    known, i = constant_value(node.input(1))
    if tup.kind() != "prim::TupleConstruct" or not known or not isinstance(i, int):
        return False
    if not -len(tup.inputs()) <= i < len(tup.inputs()) or not node.output().uses():
        return False
    return _replace(node, tup.inputs()[i])


def _list_unpack(graph, node, written):
    src = node.input(0).node()
    if src.kind() != "prim::ListConstruct" or len(src.inputs()) != len(node.outputs()) or node.input(0) in written:
        return False
    if not any(o.uses() for o in node.outputs()):
        return False
    for out, item in zip(node.outputs(), src.inputs()):
        out.replaceAllUsesWith(item)
    return True


def _len(graph, node, written):
    src = node.input(0).node()
    if src.kind() not in ("prim::ListConstruct", "prim::TupleConstruct") or node.input(0) in written:
        return False
    return bool(node.output().uses()) and _constant(graph, node, len(src.inputs()))


def _getitem(graph, node, written):
    src = node.input(0).node()
    if src.kind() not in ("prim::ListConstruct", "prim::TupleConstruct") or node.input(0) in written:
        return False
    return _tuple_index(graph, node, written) if src.kind() == "prim::TupleConstruct" else \
        _list_index(node)


def _list_index(node):
    src = node.input(0).node()
    known, i = constant_value(node.input(1))
    if not known or not isinstance(i, int) or not -len(src.inputs()) <= i < len(src.inputs()):
        return False
    return bool(node.output().uses()) and _replace(node, src.inputs()[i])


def _cast(graph, node, written):
    v = node.input(0)
    if node.output().uses() and v.type().is_subtype_of(node.output().type()):
        return _replace(node, v)
    return False


_RULES = {
    "aten::t": _t, "aten::expand": _expand, "aten::type_as": _type_as,
    "aten::add": _identity_arith, "aten::sub": _identity_arith, "aten::mul": _identity_arith,
    "aten::div": _identity_arith,
    "aten::size": _size, "aten::dim": _dim, "prim::dtype": _dtype, "prim::device": _device,
    "aten::is_floating_point": _is_floating_point, "aten::__is__": _is, "aten::__isnot__": _is,
    "prim::If": _if, "prim::TupleIndex": _tuple_index, "prim::ListUnpack": _list_unpack,
    "aten::len": _len, "aten::__getitem__": _getitem,
    "prim::unchecked_cast": _cast, "aten::_unwrap_optional": _cast, "prim::unchecked_unwrap_optional": _cast,
}
