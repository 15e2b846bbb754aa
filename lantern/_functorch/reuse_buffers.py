"""Memory planning by liveness: an elementwise op whose input dies there writes its result into that input.

The interpreter already frees each value at its last use, and lantern's caching allocator hands a freed block to
the next allocation of its size. This pass goes one step further where it is free to: `relu(x)` becomes
`relu_(x)` when x is used by nothing after it, so the op allocates nothing and writes over memory that is
already in cache. It runs on the compiled forward and backward graphs only (grad mode is off there, so no
autograd node can have saved x), and only where no other value can share x's memory: x is a fresh result (not a
graph input, not a view) with no other use, of the output's dtype and shape.

>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x : Float(2, 3), %w : Float(3, 3)):
...   %y : Float(2, 3) = aten::mm(%x, %w)
...   %z : Float(2, 3) = aten::relu(%y)
...   %r : Float(2, 3) = aten::relu(%x)
...   return (%z, %r)''')
>>> for n in g.nodes():
...     n.attrs["op"] = n.kind().partition("::")[2]
>>> [n.kind() for n in reuse_buffers(g).nodes()]       # %x is an input: its relu keeps a buffer of its own
['aten::mm', 'aten::relu_', 'aten::relu']
"""
from ..core.reference import specialisation
from ..jit.passes._analysis import op_of
from ..jit.types import TensorType
from ..ops import registry
from ..ops.op_kinds import AliasKind

__all__ = ["reuse_buffers"]

# results whose schema promises a new tensor but which share their input's memory (torch's _unsafe_view)
_ALIASING_RESULTS = {"_unsafe_view"}


@specialisation(replaces="an elementwise op of a compiled graph allocating its result (e.g. aten::relu)",
                when="torch.compile's forward and backward graphs (lantern/_functorch), for a unary-or-more pointwise "
                     "op with an in-place variant whose first input is a fresh result used by nothing else",
                parity_test="tests/test_compile_aot.py::test_buffer_reuse_keeps_values_and_skips_shared_inputs")
def reuse_buffers(graph):
    """Rewrite pointwise ops of `graph` to their in-place variants where their first input dies (see above);
    returns `graph`."""
    for node in list(graph.nodes()):
        in_place = _in_place_variant(node)
        if in_place is None or not _dies_here_unshared(node):
            continue
        rewritten = graph.create("aten::" + in_place.name.partition(".")[0], list(node.inputs()), 1)
        rewritten.copyAttributes(node)
        rewritten.attrs["op"] = in_place.name
        rewritten.insertBefore(node)
        rewritten.output().copyMetadata(node.output())
        node.output().replaceAllUsesWith(rewritten.output())
        node.destroy()
    return graph


def _in_place_variant(node):
    op = op_of(node)
    if op is None or not op.pointwise or op.alias is not AliasKind.NEW:
        return None
    base, _, overload = op.name.partition(".")
    variant = registry.REGISTRY.get(base + "_" + ("." + overload if overload else ""))
    if variant is None or variant.alias is not AliasKind.INPLACE or len(variant.schema.args) != len(node.inputs()):
        return None
    return variant


def _dies_here_unshared(node):
    if not node.inputs():
        return False
    x, out = node.inputs()[0], node.output()
    producer = op_of(x.node())
    if producer is None or producer.alias is not AliasKind.NEW or producer.name in _ALIASING_RESULTS \
            or len(x.uses()) != 1:
        return False
    if any(v is x for v in node.inputs()[1:]):
        return False
    xt, ot = x.type(), out.type()
    return (isinstance(xt, TensorType) and isinstance(ot, TensorType) and xt.sizes is not None
            and xt.sizes == ot.sizes and xt.dtype == ot.dtype)
