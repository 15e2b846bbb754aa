"""Compiled random draws: dropout's Bernoulli masks in a compiled graph from one 32-bit word per element.

Eager `bernoulli_(p)` follows ATen's CPU kernel bit for bit: a double-precision uniform per element, made of two
words of the Mersenne Twister stream, about 20 ns per element here (a third of the bench transformer's forward
went to its four dropouts). A compiled graph need not give eager's bits: torch.compile's generated kernels draw
their own random numbers, so its dropout masks differ from eager's too. The pass `fast_bernoulli` replaces each
`aten::bernoulli_(self, p, None)` (a float p, the default generator) of a graph by a call of
`bernoulli_from_words`: an element is 1 where its 32-bit word of the default generator's stream is below p·2³²
(p exact to 2⁻³²). The stream is lantern's own, so `manual_seed` still makes a compiled run repeatable.

>>> import lantern
>>> from lantern.jit.ir import parse_ir
>>> g = parse_ir('''graph(%x : Tensor):
...   %p : float = prim::Constant[value=0.25]()
...   %none : NoneType = prim::Constant()
...   %y : Tensor = aten::bernoulli_(%x, %p, %none)
...   return (%y)''')
>>> g.nodes()[2].attrs["op"] = "bernoulli_.float"
>>> [n.kind() for n in fast_bernoulli(g).nodes()]
['prim::Constant', 'prim::Constant', 'prim::CallFunction']
>>> _ = lantern.manual_seed(0)
>>> mask = bernoulli_from_words(lantern.empty(100000), 0.25)
>>> round(mask.mean().item(), 2), sorted(set(mask.tolist()))
(0.25, [0.0, 1.0])
"""
import numpy as np

from ..core.reference import specialisation
from ..ops import random_draws as draws
from ..ops.random import _gen

__all__ = ["fast_bernoulli", "bernoulli_from_words"]

_WORDS = 2 ** 32


def bernoulli_from_words(t, p):
    """Fill `t` in place with Bernoulli(p): 1 where the next 32-bit word of the default generator is below
    p·2³², else 0 (a tensor off the CPU's NumPy backend, or one that is not contiguous, takes eager's kernel)."""
    backend = t._backend
    if backend.xp is not np or not t.is_contiguous() or not 0 <= p <= 1:
        return t.bernoulli_(p)
    words = draws.words(_gen(None), t.numel())
    backend.array(t).reshape(-1)[...] = words < np.uint64(round(p * _WORDS))
    t._bump_version()
    return t


@specialisation(replaces="aten::bernoulli_(self, p: float) in a compiled graph: ATen's kernel, a double uniform "
                         "(two Mersenne Twister words) per element, as eager runs it",
                when="torch.compile's forward graph of a call that needs gradients (lantern/_functorch), for "
                     "bernoulli_ with a float p and the default generator",
                parity_test="tests/test_compile_aot.py::test_compiled_dropout_masks_have_eagers_distribution")
def fast_bernoulli(graph):
    """Replace every `aten::bernoulli_(self, p: float, None)` of `graph` by a prim::CallFunction of
    bernoulli_from_words; returns `graph`."""
    for node in list(graph.nodes()):
        if node.kind() != "aten::bernoulli_" or node.attrs.get("op") != "bernoulli_.float":
            continue
        self_value, p, generator = node.inputs()
        if generator.node().kind() != "prim::Constant" or generator.node().attrs.get("value") is not None:
            continue
        call = graph.create("prim::CallFunction", [self_value, p], 1)
        call.attrs["fn"] = bernoulli_from_words
        call.insertBefore(node)
        call.output().copyMetadata(node.output())
        node.output().replaceAllUsesWith(call.output())
        node.destroy()
    return graph
