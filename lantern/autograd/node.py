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
        elif derivative.specialised is not None and mode.fast and hasattr(tls.tracer, "record_specialised_backward"):
            outs = tls.tracer.record_specialised_backward(self, grads)  # a joint trace (_functorch/joint_graph.py)
            if outs is not None:
                return outs
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

    def __dir__(self):
        """The `_saved_<name>` attributes of this node's derivative (a class shared by name may carry others')."""
        d = self.derivative
        own = {"_saved_" + n for n, _, _ in d.save_plan} | {"_saved_" + n for n, _ in d.output_plan}
        return sorted(n for n in super().__dir__() if not n.startswith("_saved_") or n in own)

    def release_saved(self):
        """Drop the saved tensors (reading one later raises); saved sizes and scalars stay readable."""
        saved = self.saved
        for name in self.derivative.tensor_names:
            if name in saved:
                saved[name] = FREED



def _saved_attribute(key):
    """The `_saved_<key>` property of node classes: the saved value (None for a tensor no formula of this call
    reads). A property, not a __getattr__: a class with __getattr__ reads every attribute through the slow generic
    path (~70 ns against ~10), and the engine reads node attributes in its loop."""
    def read(node):
        if key in node.saved:
            return unpack(node.saved[key], node)
        if key in node.derivative.tensor_names:
            return None
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '_saved_{key}'")
    return property(read)


class _Freed:
    """Stands in for a saved tensor after backward released it."""

    __slots__ = ()

    def unpack(self, node):
        raise freed_error()


FREED = _Freed()


_NODE_CLASSES = {}


def node_class(name, derivative):
    """The node class `name` (MulBackward0), made on first use, with a `_saved_<x>` property for each value
    `derivative` saves (classes are shared by name: sum and sum.dim_IntList both make SumBackward1)."""
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (OpNode,), {"__slots__": ()})
    for key in [n for n, _, _ in derivative.save_plan] + [n for n, _ in derivative.output_plan]:
        if "_saved_" + key not in cls.__dict__:
            setattr(cls, "_saved_" + key, _saved_attribute(key))
    return cls


def save_value(v, is_output=False, output_nr=0):
    """A tensor argument as the node keeps it: SavedTensor (also for each tensor of a list); numbers as they are."""
    if isinstance(v, TensorImpl):
        return SavedTensor(v, is_output, output_nr)
    if isinstance(v, (list, tuple)):
        return [SavedTensor(t) if isinstance(t, TensorImpl) else t for t in v]
    return v
