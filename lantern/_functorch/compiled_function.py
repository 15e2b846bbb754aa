"""A captured forward/backward pair run as ONE autograd node (AOTAutograd's CompiledFunction).

`compile_joint(joint)` partitions a JointGraph (partition.py), optimises both graphs with lantern.jit's pass
pipeline (constant propagation, CSE, elementwise fusion into numba kernels), then lets an op write into an input
that dies there (reuse_buffers.py); in the forward, dropout's masks come from compiled_random.py. It returns an
`AotFunction`. Calling
it runs the forward graph with autograd off — no per-op recording — and records one `CompiledFunctionBackward`
node whose backward runs the backward graph on the saved values and the output gradients. Each graph runs in the
JIT interpreter, which drops every intermediate at its last use (liveness), so the forward keeps alive only what
the backward reads.

Double backward through the node is not supported (as in torch): a gradient computed with create_graph=True
carries a node that raises when differentiated.

>>> import lantern
>>> from lantern._functorch.joint_graph import trace_joint
>>> w = lantern.tensor([2.0, 3.0], requires_grad=True)
>>> f = compile_joint(trace_joint(lambda x, w: (x * w).tanh(), [lantern.ones(2), w]))
>>> y = f(lantern.tensor([0.5, -1.0]), w)[0]
>>> type(y.grad_fn).__name__
'CompiledFunctionBackward'
>>> y.sum().backward(); [round(g, 4) for g in w.grad.tolist()]
[0.21, -0.0099]
"""
from ..autograd.function import Function
from ..autograd.graph import InputMeta, Node
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..jit import passes
from ..jit.interpreter import Interpreter
from .compiled_random import fast_bernoulli
from .partition import partition
from .reuse_buffers import reuse_buffers

__all__ = ["compile_joint", "AotFunction", "DOUBLE_BACKWARD_ERROR"]

DOUBLE_BACKWARD_ERROR = "torch.compile with aot_autograd does not currently support double backward"


class AotFunction:
    """The compiled pair: `forward`/`backward` interpreters over the optimised graphs of a Partition."""

    def __init__(self, parts, differentiable, roots, optimize=True):
        self.parts = parts
        self.forward_graph = _optimised(parts.forward, optimize)
        if optimize:
            fast_bernoulli(self.forward_graph)
        self.backward_graph = _optimised(parts.backward, optimize)
        self.forward = Interpreter(self.forward_graph)
        self.backward = Interpreter(self.backward_graph)
        self.differentiable = differentiable     # primal indices that get gradients, in gradient order
        self.roots = roots                       # output indices that take a tangent, in tangent order

    def __call__(self, *primals):
        """The forward's tensor outputs, recorded as one node over `primals`."""
        return CompiledFunction.apply(self, *primals)


def _optimised(graph, optimize):
    """The graph to run: a copy optimised by lantern.jit's passes (the Partition keeps the graph as split)."""
    if not optimize:
        return graph
    graph = graph.copy()
    return reuse_buffers(passes.optimize(graph) or graph)


def compile_joint(joint, optimize=True):
    """An AotFunction for a JointGraph (`optimize=False` runs the graphs as traced, without fusion)."""
    roots = [i for i, o in enumerate(joint.out_tensors) if o.requires_grad]
    return AotFunction(partition(joint), joint.differentiable, roots, optimize)


class CompiledFunction(Function):
    """Forward: the forward graph, saving what the backward graph reads. Backward: the backward graph."""

    @staticmethod
    def forward(ctx, aot, *primals):
        values = aot.forward.run(list(primals))
        n_out = aot.parts.n_outputs
        outputs, saved = values[:n_out], values[n_out:]
        tensors = [i for i, v in enumerate(saved) if isinstance(v, TensorImpl)]
        ctx.save_for_backward(*[saved[i] for i in tensors])
        ctx.aot, ctx.saved_layout, ctx.saved_values = aot, tensors, saved
        ctx.mark_non_differentiable(*[o for i, o in enumerate(outputs) if i not in aot.roots])
        ctx.n_primals = len(primals)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        aot = ctx.aot
        saved = list(ctx.saved_values)
        for i, t in zip(ctx.saved_layout, ctx.saved_tensors):
            saved[i] = t
        tangents = [grad_outputs[i] for i in aot.roots]
        grads = aot.backward.run(saved + tangents)
        if tls.grad_enabled and any(isinstance(g, TensorImpl) and g._requires_grad for g in grad_outputs):
            grads = _refusing_double_backward(grads)
        result = [None] * (ctx.n_primals + 1)
        for index, g in zip(aot.differentiable, grads):
            result[index + 1] = g
        return tuple(result)


# The gradients the backward graph returns are computed from the output gradients, like an op node's (new tensors,
# or views of the gradients the engine handed in), never tensors user code holds: a weight can keep its as .grad
# without a copy.
CompiledFunction._backward_cls.returns_user_tensors = False


class CompiledFunctionDoubleBackward(Node):
    """The grad_fn of gradients computed through a compiled node with create_graph=True: differentiating them
    raises, as torch's compiled backward does."""

    __slots__ = ()

    def apply(self, grads):
        raise RuntimeError(DOUBLE_BACKWARD_ERROR)


def _refusing_double_backward(grads):
    outs = [g.detach() for g in grads]
    node = CompiledFunctionDoubleBackward(tuple((None, 0) for _ in outs), tuple(InputMeta(o) for o in outs))
    for nr, o in enumerate(outs):
        o._requires_grad, o._grad_fn, o._output_nr = True, node, nr
    return outs
