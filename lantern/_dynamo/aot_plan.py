"""torch.compile's training path: a specialisation that needs gradients runs as one captured forward/backward pair.

`capture_aot` traces the call's forward and backward into a joint graph (lantern/_functorch), with the module's
parameters and buffers as graph inputs beside the call's tensors, and returns an `AotPlan` and the call's result.
Each later call with that specialisation runs the compiled forward graph as one autograd node whose backward is
the compiled backward graph. Where the joint trace cannot stand for the call (a graph break, a tensor the function
closes over), `capture_aot` returns None and torch.compile captures the ordinary way (eval_frame.py), running the
function a second time for that first call: the module's buffers (BatchNorm's running statistics) and the default
generator are first put back as they were, so that the call updates them once; Python side effects of the
function itself (a print, a list it appends to) happen twice on that first call.

Two kinds of call stay off this path, each for a measured reason:
- a module with a recurrent layer (nn.RNN, nn.LSTM, nn.GRU) runs eagerly (`runs_eagerly`): its eager layer is
  one autograd node over compiled recurrence kernels, while a trace records the step equations unrolled op by op
  (about 6 times slower on the bench LSTM);
- a call whose forward runs an op in `_FUSED_BACKWARD_OPS` keeps the ordinary capture: eager autograd runs those
  ops' specialised backward kernels, which a trace cannot record (it records their readable formulas: the CNN
  step's backward took 3 times as long).
A module with backward hooks runs eagerly too (the hooks fire on every call, as in eager). Calls whose tensors carry
autograd hooks keep the ordinary capture (the joint trace's backward would run them), and so do calls where a tensor
that requires grad is passed twice or depends on another input or a parameter (its gradient would count twice).

>>> import lantern
>>> lin = lantern.compile(lantern.nn.Linear(3, 2))
>>> x = lantern.randn(4, 3)
>>> _ = lin(x); type(lin(x).grad_fn).__name__
'CompiledFunctionBackward'
>>> plan = next(iter(lin._compiled_call.plans.values()))
>>> sorted({n.kind() for n in plan.function.backward_graph.nodes()} - {"prim::Constant"})
['aten::mm', 'aten::sum', 'aten::t', 'aten::view']
"""
from ..autograd.graph import AccumulateGrad
from ..core.reference import mode, specialisation
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..autograd.grad_mode import no_grad
from .. import random as _random
from .._functorch.compiled_function import compile_joint
from ..nn.modules import module as nn_module
from ..nn.modules.rnn import RNNBase
from .._functorch.joint_graph import trace_joint
from ..utils._pytree import tree_flatten, tree_unflatten

__all__ = ["AotPlan", "capture_aot", "module_state", "runs_eagerly"]

_OUTPUT = object()  # in a plan's output leaves: the place of the next tensor output
_FUSED_BACKWARD_OPS = {"aten::convolution", "aten::max_pool2d_with_indices"}


def module_state(module):
    """The module's parameters then buffers: graph inputs of a joint graph, read at every call."""
    return [] if module is None else [*module.parameters(), *module.buffers()]


class AotPlan:
    """One captured specialisation with gradients: the compiled pair and where its outputs go."""

    __slots__ = ("function", "out_leaves", "out_spec")

    def __init__(self, function, out_leaves, out_spec):
        self.function = function
        self.out_leaves = [_OUTPUT if isinstance(v, TensorImpl) else v for v in out_leaves]
        self.out_spec = out_spec

    @staticmethod
    def wanted(module, leaves):
        """Whether a call with these arguments needs gradients: grad mode on, and a tensor argument or a parameter
        that requires grad."""
        if not tls.grad_enabled:
            return False
        return (any(isinstance(v, TensorImpl) and v._requires_grad for v in leaves)
                or any(p._requires_grad for p in module_state(module)))

    @staticmethod
    def active():
        """Off in reference mode: the specialisation then runs the function eagerly."""
        return mode.fast

    @specialisation(replaces="torch.compile: a captured call run through the GraphExecutor while autograd records "
                             "each op (eval_frame._Plan), or in reference mode the function run eagerly",
                    when="torch.compile(...) called with grad mode on and an argument or parameter that requires "
                         "grad, when the forward and backward trace into one joint graph",
                    parity_test="tests/test_compile_aot.py::test_reference_mode_runs_eagerly_with_equal_gradients")
    def run(self, module, tensors):
        outputs = iter(self.function(*tensors, *module_state(module)))
        return tree_unflatten([next(outputs) if v is _OUTPUT else v for v in self.out_leaves], self.out_spec)


def runs_eagerly(module):
    """Whether a call that needs gradients runs the module eagerly: it has a recurrent layer (see above) or a
    backward hook (a module's backward hooks run in the autograd graph the call records, which a captured graph
    does not record)."""
    if nn_module._global_backward_hooks or nn_module._global_backward_pre_hooks:
        return True
    return module is not None and any(isinstance(m, RNNBase) or m._backward_hooks or m._backward_pre_hooks
                                      for m in module.modules())


def _entangled(tensors):
    """Whether a tensor that requires grad appears twice among the graph inputs, or reaches another through its
    autograd history (a view of a parameter passed as an argument): the joint trace's gradient with respect to
    each would then count the shared path twice."""
    tracked = [t for t in tensors if t._requires_grad]
    if len({id(t) for t in tracked}) != len(tracked):
        return True
    leaves = {id(t) for t in tracked if t._grad_fn is None}
    nodes = {id(t._grad_fn) for t in tracked if t._grad_fn is not None}
    for t in tracked:
        seen, stack = set(), [f for f, _ in (t._grad_fn.next_functions if t._grad_fn is not None else ())]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            variable = node.variable if isinstance(node, AccumulateGrad) else None
            if id(node) in nodes or (variable is not None and id(variable) in leaves):
                return True
            stack.extend(f for f, _ in node.next_functions)
    return False


def _hooked(tensors):
    return any(t._autograd is not None and (t._autograd.hooks or t._autograd.post_accumulate_hooks) for t in tensors)


def _state_restorer(module):
    """A function that puts the module's buffers and the default generator back as they are now: called when the
    joint trace, which ran the call, gives way to the ordinary capture, which runs it again."""
    buffers = [] if module is None else [(b, b.clone()) for b in module.buffers()]
    rng = _random.get_rng_state()

    def restore():
        with no_grad():
            for buffer, value in buffers:
                buffer.copy_(value)
        _random.set_rng_state(rng)

    return restore


def capture_aot(fn, args, kwargs, leaves, spec, module, optimize):
    """(AotPlan, this call's result), or None where the joint trace cannot stand for the call or the ordinary
    capture serves it better."""
    positions = [i for i, v in enumerate(leaves) if isinstance(v, TensorImpl)]
    primals = [leaves[i] for i in positions] + module_state(module)
    if _hooked(primals) or _entangled(primals):
        return None

    def forward(*primals):
        filled = list(leaves)
        for i, t in zip(positions, primals):
            filled[i] = t
        call_args, call_kwargs = tree_unflatten(filled, spec)
        return fn(*call_args, **call_kwargs)

    restore = _state_restorer(module)
    try:
        joint = trace_joint(forward, primals)
        fused = any(n.kind() in _FUSED_BACKWARD_OPS for n in joint.graph.nodes())
        function = None if fused else compile_joint(joint, optimize)
    except Exception:  # noqa: BLE001 - NotCapturable or another error: the ordinary capture runs the call
        function = None  # again and reports what it raises
    if function is None:
        restore()
        return None
    out_leaves, out_spec = tree_flatten(joint.outputs)
    return AotPlan(function, out_leaves, out_spec), joint.outputs
