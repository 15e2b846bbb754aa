"""Conjugate and negative views: a backend's memory read through a conjugate bit, a negative bit, or both (the
bits of PyTorch's c10 TensorImpl, kept here on the view's backend).

`x.conj()` of a complex tensor copies nothing: it is a view of x (same storage, sizes, strides and offset) whose
backend says "conjugate what you read". `x._neg_view()` does the same with negation (`x.conj().imag` is one). Such
a tensor's backend is a MathBitsBackend over the backend that owns the memory (`under`); its dispatch key,
Conjugate or Negative, ranks above the devices', so every op given such a tensor runs the fallback of
lantern/ops/math_bits.py, which resolves the bits before the op runs. Ordinary tensors never meet this module.

>>> z = lantern.tensor([1 + 2j])
>>> y = z.conj()
>>> y._backend, y._backend.under, y.data_ptr() == z.data_ptr()
(<lantern Conjugate backend over cpu>, <lantern.backends.cpu.CPUBackend object at ...>, True)
>>> y._backend.array(y), raw_array(y)
(array([1.-2.j], dtype=complex64), array([1.+2.j], dtype=complex64))
"""
from .dispatch_keys import DispatchKey


class MathBitsBackend:
    """`under`'s memory read through the conjugate bit (`conj`) and/or the negative bit (`neg`). Allocation and
    everything else a backend does is `under`'s (new tensors come out plain); only reading a tensor's values
    differs: `array` gives them resolved, as a read-only array of its own."""

    def __init__(self, under, conj, neg):
        self.under, self.conj, self.neg = under, conj, neg
        self.key = DispatchKey.Conjugate if conj else DispatchKey.Negative
        self.device, self.layout = under.device, under.layout

    xp = None  # no kernel computes on the memory directly (the fast paths that test xp step aside): the fallback runs

    def __getattr__(self, name):
        return getattr(self.under, name)

    def array(self, t):
        """t's values with its bits applied: a new array (writing into it would not reach t's memory, so it is
        read-only)."""
        values = resolve_array(self, raw_array(t))
        values.flags.writeable = False
        return values

    array_or_none = array

    def host_array(self, t):
        return self.under.to_host(self.array(t)) if hasattr(self.under, "to_host") else self.array(t)

    def __repr__(self):
        bits = " and ".join(name for name, on in (("Conjugate", self.conj), ("Negative", self.neg)) if on)
        return f"<lantern {bits} backend over {self.under.device.type}>"


_BACKENDS = {}  # (under, conj, neg) -> its one MathBitsBackend: tensors with the same bits share one backend


def with_bits(backend, conj, neg):
    """The backend for `backend`'s memory read with these bits: a plain backend when neither is set."""
    under = backend.under if isinstance(backend, MathBitsBackend) else backend
    if not conj and not neg:
        return under
    key = (under, conj, neg)
    found = _BACKENDS.get(key)
    if found is None:
        found = _BACKENDS[key] = MathBitsBackend(under, conj, neg)
    return found


def bits(t):
    """(conjugate bit, negative bit) of a tensor."""
    b = t._backend
    return (b.conj, b.neg) if isinstance(b, MathBitsBackend) else (False, False)


def raw_array(t):
    """The array over t's memory as stored (no bit applied), on its backend's array library; not cached on t, so
    that no kernel finds it there and takes it for t's values."""
    under = t._backend.under
    nd, gen = t._nd, t._nd_gen
    raw = under.array(t)
    t._nd, t._nd_gen = nd, gen
    return raw


def resolve_array(backend, raw):
    """What an array stored under these bits means: conjugated and/or negated (a new array)."""
    xp = backend.under.xp
    values = xp.empty_like(raw)
    if backend.conj:
        xp.conjugate(raw, out=values)
    if backend.neg:
        xp.negative(values if backend.conj else raw, out=values)
    return values


def store_array(backend, raw, values):
    """Write `values` into the memory `raw` views, so that reading it through these bits gives `values` back
    (conjugation and negation are their own inverses)."""
    raw[...] = resolve_array(backend, values)


def tensor_metadata(t):
    """The bits as torch's checkpoints record them (torch._utils.get_tensor_metadata): {'conj': True} and/or
    {'neg': True}, empty for a plain tensor."""
    conj, neg = bits(t)
    return {**({"conj": True} if conj else {}), **({"neg": True} if neg else {})}


def set_tensor_metadata(t, metadata):
    """Give t the bits a checkpoint recorded (torch._utils.set_tensor_metadata); its memory is read through them
    from now on."""
    t._backend = with_bits(t._backend, bool(metadata.get("conj")), bool(metadata.get("neg")))
    t._nd = None
