"""Constant folding (do_constant_folding=True): nodes whose inputs are all constants or initializers are
evaluated now, in NumPy, and replaced by initializers, as torch's exporter folds (e.g. a weight's transpose, or
the LSTM's rescaled recurrent weight). Only the simple shape and arithmetic ops below are folded.

>>> import lantern
>>> from lantern.onnx.builder import GraphBuilder
>>> g = GraphBuilder(17)
>>> w = g.add_initializer("w", np.ones((2, 3), np.float32))
>>> x = g.add_input("x", lantern.float32, (4, 3))
>>> y = g.op("MatMul", x, g.op("Transpose", w, perm=[1, 0]))
>>> fold_constants(g)
{'/Transpose_output_0': 'onnx::MatMul_1'}
>>> [n.op_type for n in g.nodes if n.op_type != "Constant"], sorted(g.initializers)
(['MatMul'], ['onnx::MatMul_1', 'w'])
"""
import numpy as np
from onnx import helper, numpy_helper

__all__ = ["fold_constants"]


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _reshape(node, x, shape):
    shape = [x.shape[i] if s == 0 and not _attr(node, "allowzero", 0) else s for i, s in enumerate(shape)]
    return x.reshape(shape)


def _slice(node, x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(int(s), int(e), int(st))
    return x[tuple(index)]


def _binary(fn):
    def run(node, a, b):
        if fn is np.divide and not np.issubdtype(np.result_type(a, b), np.floating):
            return None
        return fn(a, b).astype(np.result_type(a, b))
    return run


_FOLD = {
    "Transpose": lambda node, x: np.transpose(x, _attr(node, "perm")),
    "Reshape": _reshape,
    "Unsqueeze": lambda node, x, axes: np.expand_dims(x, tuple(int(a) % (x.ndim + len(axes)) for a in axes)),
    "Squeeze": lambda node, x, axes=None: np.squeeze(x, None if axes is None else tuple(int(a) for a in axes)),
    "Slice": _slice,
    "Concat": lambda node, *xs: np.concatenate(xs, axis=_attr(node, "axis")),
    "Gather": lambda node, x, i: np.take(x, i, axis=_attr(node, "axis", 0)),
    "Cast": lambda node, x: x.astype(helper.tensor_dtype_to_np_dtype(_attr(node, "to"))),
    "Add": _binary(np.add), "Sub": _binary(np.subtract), "Mul": _binary(np.multiply), "Div": _binary(np.divide),
    "Neg": lambda node, x: -x,
}


def fold_constants(g):
    """Fold what can be folded in `g` (in place); folded values become initializers named onnx::<user>_<n>.
    Returns {old value name: initializer name}."""
    known = {name: numpy_helper.to_array(t) for name, t in g.initializers.items()}
    kept, renames = [], {}
    count = len(g.inputs)   # numbered after the inputs, whose default names are onnx::<op>_<position>
    users = {}
    for node in g.nodes:
        for i in node.input:
            users.setdefault(i, node.op_type)
    for node in g.nodes:
        node.input[:] = [renames.get(i, i) for i in node.input]
        if node.op_type == "Constant":
            known[node.output[0]] = numpy_helper.to_array(_attr(node, "value"))
            kept.append(node)
            continue
        fn = _FOLD.get(node.op_type)
        if fn is None or len(node.output) != 1 or not all(i in known for i in node.input if i):
            kept.append(node)
            continue
        value = fn(node, *(known[i] if i else None for i in node.input))
        if value is None:
            kept.append(node)
            continue
        name = f"onnx::{users.get(node.output[0], node.op_type)}_{count}"
        count += 1
        value = np.ascontiguousarray(value)
        g.add_initializer(name, value)
        known[name] = value
        renames[node.output[0]] = name
    g.nodes = kept
    for node in g.nodes:
        node.input[:] = [renames.get(i, i) for i in node.input]
    return renames
