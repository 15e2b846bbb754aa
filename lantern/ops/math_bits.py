"""The Conjugate and Negative dispatch keys: the ops that set the bits, and the fallback every other op runs.

`_conj(x)` and `_neg_view(x)` make views whose backend reads x's memory conjugated or negated
(lantern/core/math_bits.py). An op given such a tensor dispatches to the Conjugate or Negative key (they rank
above the devices) and runs `math_bits_fallback`, PyTorch's conjugate/negative fallback:
- a view op makes its view and keeps the bits (`x.conj()[0]` is still a conjugate view, sharing x's memory), except
  where the bit has no meaning for the result: `real` drops the conjugate bit, `imag` of a conjugate view is a
  negative view, and `view_as_real` and `view(dtype)` refuse a bit they cannot express, as torch does;
- any other op runs on the resolved values (a copy with the bits applied), below the keys;
- an op that writes into a tensor with bits writes into a resolved copy, which is then stored back through the
  bits: writing v into a conjugate view stores conj(v) in the base.
Ordinary tensors never reach this module: their backends are the devices' own.

>>> x = lantern.tensor([1 + 2j, 3 - 4j])
>>> y = x.conj()
>>> y.is_conj(), y[0].is_conj(), (y + 1).is_conj(), (y + 1).tolist()
(True, True, False, [(2-2j), (4+4j)])
>>> y.add_(1j)
tensor([1.-1.j, 3.+5.j])
>>> x
tensor([1.+1.j, 3.-5.j])
"""
from ..core.math_bits import bits, raw_array, resolve_array, store_array, with_bits
from ..core.dispatch_keys import DispatchKey
from ..core.tensor_impl import TensorImpl, make_tensor
from .derivative import derivative
from .dispatcher import redispatch, written_argument
from .meta_util import iterator_strides
from .op_kinds import OpKind
from .registry import custom, on_register

# ---- the ops that set a bit --------------------------------------------------------------------------------------


def _toggled_view(self, conj, neg):
    """A view of self's memory (same sizes, strides, offset and version counter) whose bits are toggled."""
    old_conj, old_neg = bits(self)
    root = self._base if self._base is not None else self
    return make_tensor(self._storage, self._size, self._stride, self._offset, self.dtype,
                       with_bits(self._backend, old_conj != conj, old_neg != neg), None, self._vc, root)


def _conj_kernel(backend, self):
    return _toggled_view(self, True, False)


def _neg_view_kernel(backend, self):
    return _toggled_view(self, False, True)


custom("_conj(Tensor(a) self) -> Tensor(a)", _conj_kernel, _conj_kernel)
custom("_neg_view(Tensor(a) self) -> Tensor(a)", _neg_view_kernel, _neg_view_kernel)
derivative("_conj", name="ConjBackward0", self="grad.conj()")
derivative("_neg_view", name="NegViewBackward0", self="grad._neg_view()")

# ---- the fallback ------------------------------------------------------------------------------------------------


def resolved(t):
    """A plain tensor holding t's values with its bits applied (t itself if it has none); dense strides in t's
    memory order, as torch's clone keeps them."""
    backend = t._backend
    conj, neg = bits(t)
    if not conj and not neg:
        return t
    under = backend.under
    out = under.empty_strided(t._size, iterator_strides(t._size, [(t._size, t._stride)]), t.dtype)
    if under.xp is not None:
        under.array(out)[...] = resolve_array(backend, raw_array(t))
    return out


def _resolved_args(op, args):
    args = list(args)
    for i in op.tensor_positions:
        if isinstance(args[i], TensorImpl):
            args[i] = resolved(args[i])
    for i in op.list_positions:
        args[i] = [resolved(a) if isinstance(a, TensorImpl) else a for a in args[i]]
    return tuple(args)


def _view_bits(op, self):
    """The bits a view op's result keeps, or the error torch gives for a view it cannot make."""
    conj, neg = bits(self)
    name = op.name
    if name == "view.dtype":
        what = "conjugate view tensors" if conj else "tensors with negative bit set"
        raise RuntimeError(f"torch.Tensor.view is not supported for {what} when converting to a different dtype.")
    if name == "view_as_real" and conj:
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate "
                           "tensor so you can view it as real, use self.resolve_conj(); however, be warned that the "
                           "resulting tensor will NOT alias the original.")
    if name == "imag":  # Im(conj(z)) = -Im(z): the conjugate bit becomes a negative bit
        return False, neg != conj
    return conj, neg


def view_keeping_bits(op, args):
    self = args[0]
    conj, neg = _view_bits(op, self)
    view = self._backend.under.run_view(op, args)
    view._backend = with_bits(view._backend, conj and view.dtype.is_complex, neg)
    return view


def _write_through_bits(op, args, written):
    """Run an op that writes into args[written] (which has bits) on a resolved copy, then store the copy's values
    back through the bits and count one write on the tensor."""
    target = args[written]
    args = _resolved_args(op, args)
    stand_in = args[written]
    result = redispatch(op, args, DispatchKey.Autograd)
    if stand_in._size != target._size:
        raise RuntimeError(f"{op.name}: cannot resize a tensor with the conjugate or negative bit set "
                           f"(from {list(target._size)} to {list(stand_in._size)}); resolve it first")
    if target._backend.under.xp is not None:
        store_array(target._backend, raw_array(target), stand_in._backend.array(stand_in))
    target._bump_version()
    if isinstance(result, tuple):
        return tuple(target if r is stand_in else r for r in result)
    return target if result is stand_in else result


def math_bits_fallback(op, args):
    """The Conjugate and Negative keys' kernel for every op without one of its own (see the module docstring)."""
    if op.kind is OpKind.VIEW:
        return view_keeping_bits(op, args)
    written = written_argument(op)
    if written is not None and bits(args[written]) != (False, False):
        return _write_through_bits(op, args, written)
    return redispatch(op, _resolved_args(op, args), DispatchKey.Autograd)


def _run_on_memory(op, args):
    """The kernel of an op that handles the bits itself (_conj, _neg_view): its device kernel, given the tensor as
    it is."""
    return op.kernels[args[0]._backend.under.key](op, args)


_HANDLES_BITS = {"_conj", "_neg_view"}


def _install(op):
    kernel = _run_on_memory if op.name in _HANDLES_BITS else math_bits_fallback
    op.kernels[DispatchKey.Conjugate] = op.kernels[DispatchKey.Negative] = kernel


on_register(_install)
