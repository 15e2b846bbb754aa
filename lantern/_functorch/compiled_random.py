"""Compiled random draws: dropout's Bernoulli masks in a compiled graph from one Philox word per element.

Eager `bernoulli_(p)` follows ATen's CPU kernel bit for bit: a double-precision uniform per element, made of two
words of the Mersenne Twister stream, about 20 ns per element here (a third of the bench transformer's forward
went to its four dropouts). A compiled graph need not give eager's bits: torch.compile's generated kernels draw
their own random numbers, from the counter-based Philox4x32-10 generator (Salmon et al., 2011; JAX's too), so
its dropout masks differ from eager's. The pass `fast_bernoulli` replaces each `aten::bernoulli_(self, p, None)`
(a float p, the default generator) of a graph by a call of `bernoulli_from_words`: two 32-bit words of the default
generator's stream are the call's Philox key, and an element is 1 where its Philox word (counter = its index /
4) is below p·2³² (p exact to 2⁻³²). Each word is a function of the key and its counter, so one numba loop
(compiled_random_numba.py) writes the mask without a generator state, five times as fast as drawing Mersenne
Twister words; the key comes from lantern's generator, so `manual_seed` still makes a compiled run repeatable.

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
from ..ops.numba_kernels import optional_kernels
from ..ops.random import _gen

__all__ = ["fast_bernoulli", "bernoulli_from_words", "philox_words"]

_WORDS = 2 ** 32
# Philox4x32's multipliers and key increments (Random123), and the low 32 bits of a uint64
PHILOX_M0, PHILOX_M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
PHILOX_W0, PHILOX_W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
LOW_32 = np.uint64(0xFFFFFFFF)


def philox_words(key, n):
    """Words 0..n-1 of Philox4x32-10 under `key` (two 32-bit words), as uint64: counter k = (k, 0, 0, 0) gives
    words 4k..4k+3 (ten rounds of two 32×32→64-bit products, the key bumped between rounds).

    >>> [hex(w) for w in philox_words((0, 0), 4)]          # Random123's known answer for key and counter 0
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    blocks = np.arange((n + 3) // 4, dtype=np.uint64)
    c0, c1 = blocks & LOW_32, blocks >> np.uint64(32)
    c2 = c3 = np.zeros_like(blocks)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0, p1 = PHILOX_M0 * c0, PHILOX_M1 * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & LOW_32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & LOW_32
        k0, k1 = (k0 + PHILOX_W0) & LOW_32, (k1 + PHILOX_W1) & LOW_32
    return np.stack([c0, c1, c2, c3], axis=1).reshape(-1)[:n]


def bernoulli_from_words(t, p):
    """Fill `t` in place with Bernoulli(p): 1 where its element's Philox word, under a key of two words of the
    default generator, is below p·2³², else 0 (a tensor off the CPU's NumPy backend, or one that is not contiguous,
    takes eager's kernel)."""
    backend = t._backend
    if backend.xp is not np or not t.is_contiguous() or not 0 <= p <= 1:
        return t.bernoulli_(p)
    key = draws.words(_gen(None), 2)
    threshold = np.uint64(round(p * _WORDS))
    flat = backend.array(t).reshape(-1)
    kernels = optional_kernels("compiled_random_numba", __package__)
    if kernels is not None and flat.dtype in (np.float32, np.float64):
        kernels.philox_mask(key[0], key[1], threshold, flat)
    else:
        flat[...] = philox_words(key, flat.size) < threshold
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
