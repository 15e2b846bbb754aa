"""OpNode: the graph node recorded for a registry op; its apply runs the op's generated backward.

One class per node name (`MulBackward0`, `SumBackward1`, ...), made on first use, so `type(y.grad_fn).__name__`
reads as in PyTorch. Saved inputs are exposed as `_saved_<name>` (the input itself), the output as
`_saved_result` (an equal tensor, not the same object).

>>> x = lantern.tensor([1., 2.], requires_grad=True)
>>> y = x.pow(2)
>>> y.grad_fn._saved_self is x, y.grad_fn._saved_exponent
(True, 2)
"""
from ..core.reference import mode
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..ops.derivative_helpers import unpack
from .graph import Node, SavedTensor, freed_error


class OpNode(Node):
    """Backward of one registry op call. `needs[k]`: does the k-th formula's input need a gradient."""

    __slots__ = ("derivative", "saved", "needs", "edge_counts")

    def apply(self, grads):
        derivative = self.derivative
        if derivative.specialised is not None and mode.fast and not tls.grad_enabled and not tls.observed:
            derivative = derivative.specialised  # ops/derivative_specialisation's runs_specialised(), written in
        outs = derivative.backward(self, grads)
        return self._flatten(outs) if self.edge_counts else outs

    def _flatten(self, outs):
        """One gradient per edge: a list argument (cat's tensors) has one edge per element, a number given for a
        Scalar-overload argument none."""
        flat = []
        for k, g in enumerate(outs):
            n = self.edge_counts.get(k)
            if n is None:
                flat.append(g)
            elif n:
                flat.extend(g if g is not None else [None] * n)
        return tuple(flat)

    def release_saved(self):
        """Drop the saved tensors (reading one later raises); saved sizes and scalars stay readable."""
        saved = self.saved
        for name in self.derivative.tensor_names:
            if name in saved:
                saved[name] = FREED

    def __getattr__(self, name):
        if name.startswith("_saved_"):
            key = name[len("_saved_"):]
            if key in self.saved:
                return unpack(self.saved[key], self)
            if key in self.derivative.tensor_names:
                return None  # not saved: no formula that reads it runs for this call
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self):
        """The `_saved_<name>` attributes join the listing, as on PyTorch's nodes (those not saved read None)."""
        d = self.derivative
        names = [n for n, _, _ in d.save_plan] + [n for n, _ in d.output_plan]
        return sorted(set(super().__dir__()) | {"_saved_" + n for n in names})


class _Freed:
    """Stands in for a saved tensor after backward released it."""

    __slots__ = ()

    def unpack(self, node):
        raise freed_error()


FREED = _Freed()


_NODE_CLASSES = {}


def node_class(name):
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (OpNode,), {"__slots__": ()})
    return cls


def save_value(v, is_output=False, output_nr=0):
    """A tensor argument as the node keeps it: SavedTensor (also for each tensor of a list); numbers as they are."""
    if isinstance(v, TensorImpl):
        return SavedTensor(v, is_output, output_nr)
    if isinstance(v, (list, tuple)):
        return [SavedTensor(t) if isinstance(t, TensorImpl) else t for t in v]
    return v
