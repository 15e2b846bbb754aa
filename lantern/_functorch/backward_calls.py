"""A node's specialised backward recorded in a joint graph as ONE call, where its readable formulas are slow.

The joint trace (joint_graph.py) records the backward the derivative formulas run, op by op. For most ops that is
what eager autograd runs too. A few ops have a specialised derivative (ops/derivative_specialisation.py) that eager
autograd runs instead: layer norm's weight gradient, for one, is one numba pass over the saved mean and rstd,
while its readable formula recomputes the statistics from the input in six ops (two means, two elementwise
passes, two sums). For the ops in `CALLED_BACKWARDS`, the joint trace records the node's whole backward as one
`prim::CallFunction` of a `BackwardCall`: its inputs are the node's saved tensors and its gradients, and running
it runs the specialised formulas (each choosing its fast path on the tensors it gets, as in eager). The backward
graph then computes what eager autograd computes, the same way.

>>> import lantern
>>> from lantern._functorch.joint_graph import trace_joint
>>> ln = lantern.nn.LayerNorm(4)
>>> x = lantern.randn(2, 4, requires_grad=True)
>>> with lantern.reference_mode(False):     # a fast path: on for this example
...     joint = trace_joint(lambda x, w, b: ln(x), [x, ln.weight, ln.bias])
>>> [n.kind() for n in joint.graph.nodes() if n.kind() not in ("prim::Constant", "prim::ListConstruct")]
['aten::native_layer_norm', 'prim::CallFunction', 'prim::TupleConstruct']
>>> call = joint.graph.findNode("prim::CallFunction")
>>> [v.debugName() for v in call.inputs()], call.attrs["fn"].__name__   # saved: input, weight, mean, rstd
(['primal0', 'primal1', '6', '7', 'tangent0'], 'backward_of_native_layer_norm_specialised')
"""
from ..core.reference import specialisation
from ..core.tensor_impl import TensorImpl
from ..jit.tracer import _Suspended
from ..ops.derivative_helpers import unpack

__all__ = ["CALLED_BACKWARDS", "BackwardCall", "record_backward_call"]

CALLED_BACKWARDS = {"native_layer_norm"}


class _Frozen:
    """What a derivative's generated backward reads of its node: the saved values and which gradients it needs."""

    __slots__ = ("saved", "needs")

    def __init__(self, saved, needs):
        self.saved, self.needs = saved, needs


class BackwardCall:
    """One node's specialised backward as a function of (saved tensors..., gradients...) that returns the
    gradients it computes (those the node needs), in order."""

    def __init__(self, node, saved, tensor_names, grad_positions, n_grads):
        self.derivative, self.needs = node.derivative.specialised, node.needs
        self.saved = {k: None if k in tensor_names else v for k, v in saved.items()}  # the tensors come as inputs
        self.tensor_names = tensor_names
        self.grad_positions, self.n_grads = grad_positions, n_grads
        self.__name__ = f"{node.derivative.function_name}_specialised"

    def __call__(self, *tensors):
        saved = dict(self.saved)
        saved.update(zip(self.tensor_names, tensors))
        grads = [None] * self.n_grads
        for k, g in zip(self.grad_positions, tensors[len(self.tensor_names):]):
            grads[k] = g
        outs = [g for g in self.run(saved, grads) if g is not None]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(self, saved, grads):
        """The node's gradients, one per edge (None where none is needed)."""
        return self.derivative.backward(_Frozen(saved, self.needs), grads)


@specialisation(replaces="the joint trace of a node's readable derivative formulas, op by op",
                when="fast paths on, a joint trace (torch.compile of a call that needs gradients) differentiating an "
                     "op of CALLED_BACKWARDS whose derivative has a specialised variant",
                parity_test="tests/test_compile_aot.py::test_specialised_backward_calls_give_eagers_gradients")
def record_backward_call(state, node, grads):
    """Record `node`'s backward in the joint trace `state` as one BackwardCall, and return its gradients (one per
    edge); None for a node whose op is not in CALLED_BACKWARDS (its readable formulas are traced)."""
    derivative = node.derivative
    if derivative.op.name not in CALLED_BACKWARDS or derivative.specialised is None or node.edge_counts \
            or not any(node.needs):
        return None
    saved = {name: unpack(v, node) for name, v in node.saved.items()}
    tensor_names = [name for name, v in saved.items() if isinstance(v, TensorImpl)]
    grad_positions = [k for k, g in enumerate(grads) if isinstance(g, TensorImpl)]
    call = BackwardCall(node, saved, tensor_names, grad_positions, len(grads))
    inputs = [state.value_of(saved[n]) for n in tensor_names] + [state.value_of(grads[k]) for k in grad_positions]
    with _Suspended():
        outs = call.run(saved, list(grads))
    state.record_function(call, inputs, [g for g in outs if g is not None])
    return outs
