"""Trace a function's forward AND its backward into one joint graph (AOTAutograd's joint trace).

The function runs once under lantern's tracer with grad mode on; then `autograd.grad` differentiates its tensor
outputs with respect to every input that requires grad, given "tangents" (the output gradients) that are graph
inputs too. The derivative formulas (lantern/ops/derivative.py) are written with lantern ops, so the backward's
ops are recorded like the forward's. The graph returns the forward's outputs, then one gradient per
differentiable input (a zeros tensor where an input is unused).

A saved output comes back from its node as a new tensor object over the same memory (SavedTensor.unpack); the
joint tracer knows it as the value it aliases, by its version counter and geometry.
A node of an op whose specialised derivative eager autograd runs instead of the readable one (layer norm's) is
recorded as one call of that derivative (backward_calls.py), not as its readable formulas.

>>> import lantern
>>> w = lantern.tensor([2.0, 3.0], requires_grad=True)
>>> joint = trace_joint(lambda x, w: (x * w).tanh(), [lantern.ones(2), w])
>>> joint.n_primals, joint.n_outputs, joint.differentiable
(2, 1, [1])
>>> [n.kind() for n in joint.graph.nodes() if n.kind() != "prim::Constant"]   # tanh' = 1 - tanh²
['aten::mul', 'aten::tanh', 'aten::mul', 'aten::rsub', 'aten::mul', 'aten::mul', 'prim::TupleConstruct']
"""
import warnings

import lantern
from ..autograd import grad as autograd_grad
from ..core.dtype import is_differentiable
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..jit import types as T
from ..jit.ir import Graph
from ..jit.tracer import TracerWarning, TracingState, _bind_input, _finish, _Suspended
from ..utils._pytree import tree_flatten
from .backward_calls import record_backward_call

__all__ = ["JointGraph", "trace_joint", "NotCapturable"]


class NotCapturable(Exception):
    """The joint trace cannot stand for the function (a graph break, a tensor the graph would freeze)."""


class JointGraph:
    """The joint trace: `graph` takes (primals..., tangents...) and returns (outputs..., gradients...).

    `differentiable` lists the primal indices that get a gradient, in the order of the gradient outputs;
    `outputs` is the example call's result, `out_tensors` its tensor outputs (the first n_outputs graph outputs)."""

    def __init__(self, graph, n_primals, n_outputs, differentiable, outputs, out_tensors):
        self.graph, self.n_primals, self.n_outputs = graph, n_primals, n_outputs
        self.differentiable, self.outputs, self.out_tensors = differentiable, outputs, out_tensors


class _JointTracingState(TracingState):
    """A TracingState that knows an unpacked saved output as the value it aliases, and refuses to freeze
    any other unseen tensor into the graph as a constant (its value would go stale)."""

    def __init__(self, graph):
        super().__init__(graph)
        self._by_geometry = {}

    def set_value(self, t, value):
        super().set_value(t, value)
        self._by_geometry[_geometry(t)] = value

    def record_specialised_backward(self, node, grads):
        """Called by an autograd node whose derivative has a specialised variant: its gradients, recorded as one
        call (backward_calls.py), or None to trace its readable formulas."""
        return record_backward_call(self, node, grads)

    def record_function(self, fn, inputs, results):
        """Append a prim::CallFunction of the Python function `fn` whose outputs stand for the tensors `results`."""
        node = self.graph.create("prim::CallFunction", inputs, len(results))
        node.attrs["fn"] = fn
        self.graph.insertNode(node)
        for value, r in zip(node.outputs(), results):
            value.setType(T.TensorType.create_from_tensor(r))
            self.set_value(r, value)

    def value_of(self, t):
        v = self._values.get(id(t))
        if v is None:
            v = self._by_geometry.get(_geometry(t))
            if v is None:
                raise NotCapturable(f"a tensor of shape {list(t._size)} that is neither an input nor computed "
                                    "by the function (a captured global or closed-over tensor)")
            super().set_value(t, v)
        return v


def _geometry(t):
    return (id(t._vc), t._offset, t._size, t._stride, t.dtype)


def trace_joint(fn, primals):
    """The JointGraph of `fn(*primals)`, whose tensor outputs are differentiated with respect to every primal
    that requires grad. Raises NotCapturable where the trace would not generalise."""
    graph = Graph()
    state = _JointTracingState(graph)
    for i, p in enumerate(primals):
        _bind_input(state, graph, graph.addInput(f"primal{i}"), p)
    differentiable = [i for i, p in enumerate(primals) if p.requires_grad and is_differentiable(p.dtype)]
    previous = tls.tracer
    tls.tracer = state
    tls.refresh()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outputs = fn(*primals)
            out_tensors = _tensor_leaves(outputs)
            grads = _backward(state, graph, out_tensors, [primals[i] for i in differentiable])
    finally:
        tls.tracer = previous
        tls.refresh()
    breaks = [w for w in caught if issubclass(w.category, TracerWarning)]
    if breaks:
        raise NotCapturable(str(breaks[0].message))
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    _finish(state, tuple(out_tensors) + tuple(grads), strict=False)
    return JointGraph(graph, len(primals), len(out_tensors), differentiable, outputs, out_tensors)


def _tensor_leaves(outputs):
    return [v for v in tree_flatten(outputs)[0] if isinstance(v, TensorImpl)]


def _backward(state, graph, out_tensors, wrt):
    """Record autograd.grad of the differentiable outputs with tangents that are new graph inputs; returns one
    gradient per `wrt` tensor (zeros, made in the graph, for one the outputs do not depend on)."""
    roots = [o for o in out_tensors if o.requires_grad]
    with _Suspended():
        tangents = [lantern.ones_like(o) for o in roots]
    for k, t in enumerate(tangents):
        _bind_input(state, graph, graph.addInput(f"tangent{k}"), t)
    if not roots or not wrt:
        grads = [None] * len(wrt)
    else:
        grads = autograd_grad(roots, wrt, tangents, retain_graph=True, allow_unused=True)
    return [lantern.zeros_like(w) if g is None else g for w, g in zip(wrt, grads)]

