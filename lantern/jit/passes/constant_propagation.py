"""Constant propagation (torch/csrc/jit/passes/constant_propagation.cpp): run what can run at compile time.

A pure, deterministic node whose inputs are all `prim::Constant`s is evaluated now (tensor ops through lantern's
dispatcher under no_grad, scalar arithmetic of scripted code in Python, tuple and list construction and
indexing) and replaced by a `prim::Constant` of its result. `prim::If` on a constant condition becomes the taken
block; a `prim::Loop` that runs zero times becomes its initial values; If outputs that both branches compute the
same way leave the If. When something changed it finishes with dead code elimination, as torch does.

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x : Tensor):
...   %1 : int = prim::Constant[value=1]()
...   %2 : int = prim::Constant[value=2]()
...   %3 : int = prim::Constant[value=3]()
...   %b : int = aten::mul(%2, %3)
...   %y : Tensor = aten::add(%x, %b, %1)
...   return (%y)''')
>>> [n.attrs.get("value") for n in constant_propagation(g).nodes() if n.kind() == "prim::Constant"]
[1, 6]
"""
import math
import operator

from ... import autograd, tensor
from ...core.dtype import dtype as _dtype_class
from ...ops import dispatcher
from ..types import TensorType
from ._analysis import alias_root, constant_value, is_nondeterministic, is_pure, is_tensor, op_of, written_roots
from .dead_code_elimination import dead_code_elimination

__all__ = ["constant_propagation"]

# Kinds that never fold: they are already constants, or read state the graph does not own.
_SKIP = {"prim::Constant", "prim::Uninitialized", "prim::GetAttr", "prim::Param", "prim::Return",
         "prim::FusionGroup", "prim::CallMethod", "prim::CallFunction", "prim::RaiseException", "prim::Print"}


def _round_to_zero_floordiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _is(a, b):
    return a is b or (a is None and b is None)


# Scripted scalar code: aten::<name> on ints, floats, bools, strings, lists (Python semantics, as TorchScript).
_SCALAR_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "floordiv": operator.floordiv, "__round_to_zero_floordiv": _round_to_zero_floordiv,
    "remainder": operator.mod, "fmod": math.fmod, "pow": operator.pow, "neg": operator.neg, "abs": abs,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "__and__": operator.and_, "__or__": operator.or_, "__xor__": operator.xor,
    "__not__": operator.not_, "__is__": _is, "__isnot__": lambda a, b: not _is(a, b), "len": len,
    "Int": int, "Float": float, "Bool": bool, "str": str, "min": min, "max": max,
    "floor": math.floor, "ceil": math.ceil, "sqrt": math.sqrt, "exp": math.exp, "log": math.log,
    "__getitem__": operator.getitem, "__contains__": operator.contains,
}
_TENSOR_TO_SCALAR = {"aten::Int": int, "aten::Float": float, "aten::Bool": bool, "aten::ScalarImplicit": None}


class _CannotFold(Exception):
    pass


def _tensor_attr(name):
    def read(t):
        if not is_tensor(t):
            raise _CannotFold(f"prim::{name} of a non-tensor")
        return getattr(t, name)
    return read


def _num_to_tensor(v):
    return tensor(v)


_PRIM_OPS = {
    "prim::TupleConstruct": lambda *xs: tuple(xs),
    "prim::ListConstruct": lambda *xs: list(xs),
    "prim::TupleIndex": operator.getitem,
    "prim::min": min, "prim::max": max, "prim::abs": abs,
    "prim::NumToTensor": _num_to_tensor, "prim::dtype": _tensor_attr("dtype"), "prim::device": _tensor_attr("device"),
}
_UNPACK = {"prim::TupleUnpack", "prim::ListUnpack"}


def constant_propagation(graph):
    """Fold every foldable node of `graph` into constants (nested blocks included); returns `graph`."""
    if _propagate_block(graph, graph.block(), written_roots(graph)):
        dead_code_elimination(graph)
    return graph


def _propagate_block(graph, block, written):
    changed = False
    for node in list(block.nodes()):
        kind = node.kind()
        if kind == "prim::If":
            changed |= _propagate_if(graph, node, written)
        elif kind == "prim::Loop":
            changed |= _propagate_loop(graph, node, written)
        elif node.blocks():
            for b in node.blocks():
                changed |= _propagate_block(graph, b, written)
        elif kind not in _SKIP:
            changed |= _try_fold(graph, node, written)
    return changed


def _propagate_if(graph, node, written):
    known, cond = constant_value(node.inputs()[0])
    if known and isinstance(cond, bool):
        taken = node.blocks()[0 if cond else 1]
        _propagate_block(graph, taken, written)
        inline_block(node, taken, [])
        return True
    changed = False
    for b in node.blocks():
        changed |= _propagate_block(graph, b, written)
    return _hoist_same_if_outputs(graph, node) or changed


def _propagate_loop(graph, node, written):
    known_n, trips = constant_value(node.inputs()[0])
    known_c, cond = constant_value(node.inputs()[1])
    if (known_n and isinstance(trips, int) and trips <= 0) or (known_c and cond is False):
        for out, init in zip(list(node.outputs()), list(node.inputs())[2:]):
            out.replaceAllUsesWith(init)
        node.destroy()
        return True
    return _propagate_block(graph, node.blocks()[0], written)


def inline_block(node, block, block_args):
    """Move `block`'s nodes before `node`, bind its inputs to `block_args`, give `node`'s outputs the block's
    outputs, and destroy `node` (used for If with a known condition and for loops that run once)."""
    for param, arg in zip(list(block.inputs()), block_args):
        param.replaceAllUsesWith(arg)
    for inner in list(block.nodes()):
        inner.moveBefore(node)
    for out, res in zip(list(node.outputs()), list(block.outputs())):
        out.replaceAllUsesWith(res)
    node.destroy()


def _hoist_same_if_outputs(graph, node):
    """If both branches yield the same outer value (or equal scalar constants), the If output is that value.
    Returns whether an output was replaced."""
    then_b, else_b = node.blocks()
    changed = False
    for i, out in enumerate(list(node.outputs())):
        if not out.uses():
            continue
        a, b = then_b.outputs()[i], else_b.outputs()[i]
        if a is b and not _defined_inside(a, node):
            out.replaceAllUsesWith(a)
            changed = True
            continue
        ka, va = constant_value(a)
        kb, vb = constant_value(b)
        if ka and kb and _scalar(va) and _scalar(vb) and type(va) is type(vb) and va == vb:
            with graph.insert_point_guard(node):
                out.replaceAllUsesWith(graph.insertConstant(va))
            changed = True
    return changed


def _defined_inside(value, node):
    block = value.node().owningBlock() if value.node() is not None else None
    while block is not None:
        owner = block.owningNode()
        if owner is node:
            return True
        block = owner.owningBlock() if owner is not None else None
    return False


def _scalar(v):
    return v is None or isinstance(v, (bool, int, float, str))


def _try_fold(graph, node, written):
    args = []
    for v in node.inputs():
        known, value = constant_value(v)
        if not known or (is_tensor(value) and value.requires_grad):  # folding would cut the autograd edge
            return False
        args.append(value)
    if not node.outputs() or not is_pure(node) or is_nondeterministic(node):
        return False
    if any(alias_root(v) in written for v in list(node.inputs()) + list(node.outputs())):
        return False
    try:
        results = _evaluate(node, args)
    except Exception:  # _CannotFold, or an error torch also leaves for the run to report
        return False
    outs = list(node.outputs())
    if len(results) != len(outs) or not all(_insertable(r) for r in results):
        return False
    if any(isinstance(o.type(), TensorType) != is_tensor(r) for o, r in zip(outs, results)):
        return False
    with graph.insert_point_guard(node):
        for out, value in zip(outs, results):
            out.replaceAllUsesWith(graph.insertConstant(value))
    node.destroy()
    return True


def _insertable(v):
    if is_tensor(v):
        return not v.requires_grad
    if isinstance(v, (list, tuple)):
        return all(_insertable(x) and not is_tensor(x) for x in v)
    return _scalar(v) or isinstance(v, _dtype_class) or type(v).__name__ == "device"


def _evaluate(node, args):
    """The node's outputs computed from constant `args` (raises _CannotFold when it cannot be run here)."""
    kind = node.kind()
    outs = node.outputs()
    if kind in _UNPACK:
        (seq,) = args
        return list(seq)
    if kind in _PRIM_OPS:
        return [_PRIM_OPS[kind](*args)]
    if not kind.startswith("aten::"):
        raise _CannotFold(kind)
    op = op_of(node)
    tensor_out = any(isinstance(o.type(), TensorType) for o in outs)
    if op is not None and (tensor_out or any(is_tensor(a) for a in args)):
        with autograd.no_grad():
            result = dispatcher.call(op, tuple(args))
        return list(result) if len(outs) > 1 else [result]
    if kind in _TENSOR_TO_SCALAR and len(args) == 1 and is_tensor(args[0]):
        value = args[0].item()
        convert = _TENSOR_TO_SCALAR[kind]
        return [convert(value) if convert is not None else value]
    fn = _SCALAR_OPS.get(kind[6:])
    if fn is None or any(is_tensor(a) for a in args):
        raise _CannotFold(kind)
    return [fn(*args)]
