"""OpNode: the graph node recorded for a registry op, built from the op's declared Derivative.

One class per node name (`MulBackward0`, `SumBackward1`, ...), made on first use, so `type(y.grad_fn).__name__`
reads as in PyTorch. Saved inputs are exposed as `_saved_<name>` (the input itself), the output as
`_saved_result` (an equal tensor, not the same object).

>>> x = lantern.tensor([1., 2.], requires_grad=True)
>>> y = x.pow(2)
>>> y.grad_fn._saved_self is x, y.grad_fn._saved_exponent
(True, 2)
"""
from ..core.tensor_impl import TensorImpl
from .graph import Node, SavedTensor, freed_error


class OpNode(Node):
    """Backward of one registry op call: applies the op's formulas to the saved values."""

    __slots__ = ("derivative", "saved", "needs", "_freed", "list_lengths")

    def apply(self, grads):
        if self._freed:
            raise freed_error()
        d = self.derivative
        values = {"grad": grads[0], "grads": grads, "result": None}
        for name, v in self.saved.items():
            values[name] = _unpack(v, self)
        if d.out_names and values.get("result") is not None:
            result = values["result"]
            for name, r in zip(d.out_names, result if isinstance(result, tuple) else (result,)):
                values[name] = r
        ordered = [values.get(p) for p in _params(d)]
        outs = []
        for index, name, fn, _ in d.formulas:
            if not self.needs[index]:
                outs.append(None if self.list_lengths.get(index) is None else [None] * self.list_lengths[index])
                continue
            outs.append(fn(*ordered))
        return self._flatten(outs)

    def _flatten(self, outs):
        """One gradient per edge: list arguments (cat's tensors) contribute one edge per element."""
        flat = []
        for (index, _, _, _), g in zip(self.derivative.formulas, outs):
            if index in self.list_lengths:
                flat.extend(g if g is not None else [None] * self.list_lengths[index])
            else:
                flat.append(g)
        return tuple(flat)

    def release_saved(self):
        self.saved = None
        self._freed = True

    def __getattr__(self, name):
        if name.startswith("_saved_"):
            if self._freed:
                raise freed_error()
            key = name[len("_saved_"):]
            if key in self.saved:
                return _unpack(self.saved[key], self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


def _params(d):
    return d.params


def _unpack(value, node):
    if isinstance(value, SavedTensor):
        return value.unpack(node)
    if isinstance(value, list):
        return [_unpack(v, node) for v in value]
    if isinstance(value, tuple) and value and isinstance(value[0], SavedTensor):
        return tuple(_unpack(v, node) for v in value)
    return value


_NODE_CLASSES = {}


def node_class(name):
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (OpNode,), {"__slots__": ()})
    return cls


def save_value(v, is_output=False, output_nr=0):
    if isinstance(v, TensorImpl):
        return SavedTensor(v, is_output, output_nr)
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], TensorImpl):
        return [SavedTensor(t) for t in v]
    return v
