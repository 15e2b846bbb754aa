"""The graph executor: specialise a graph on its inputs, optimise each specialisation once, cache the plan.

As torch's GraphExecutor, a call computes a key from its arguments (each tensor's dtype, sizes and requires_grad;
the type of anything else; whether grad mode is on). The first call with a key copies the graph, writes the
refined input types into it, runs the optimisation pipeline (`lantern.jit.passes.optimize`) and builds an
`Interpreter`; later calls with the same key reuse that plan.

>>> import lantern
>>> from lantern.jit.ir import Graph
>>> g = Graph()
>>> x = g.addInput("x")
>>> y = g.insertNode(g.create("aten::neg", [x])).output()
>>> _ = g.registerOutput(y)
>>> ex = GraphExecutor(g)
>>> ex.run([lantern.tensor([1., 2.])])
[tensor([-1., -2.])]
>>> len(ex.plans), next(iter(ex.plans.values())).graph.inputs()[0].type()
(1, Float(2, requires_grad=0, device=cpu))
"""
import weakref

from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..nn.modules.module import Module as _Module
from . import passes, types as jit_types
from .interpreter import Interpreter
from .passes import PassLog

__all__ = ["GraphExecutor", "ExecutionPlan"]  # run and executor_for stay in this module


class ExecutionPlan:
    """One specialisation: its key, the optimised graph and the interpreter that runs it."""

    __slots__ = ("key", "graph", "interpreter", "log")

    def __init__(self, key, graph, interpreter, log=None):
        self.key = key
        self.graph = graph
        self.interpreter = interpreter
        self.log = log

    def __repr__(self):
        return f"<ExecutionPlan {_describe_key(self.key)}: {len(self.interpreter.instructions)} instructions>"


def _key(inputs):
    """The specialisation key: grad mode, then per input (dtype, sizes, requires_grad, backend) for a tensor, the
    module object itself for a Module (the optimiser may inline its methods), else the Python type."""
    key = [tls.grad_enabled]
    for v in inputs:
        if isinstance(v, TensorImpl):
            key.append((v.dtype, v._size, v._requires_grad, v._backend))
        elif isinstance(v, _Module):
            key.append(v)
        else:
            key.append(type(v))
    return tuple(key)


def _describe_key(key):
    parts = []
    for k in key[1:]:
        if isinstance(k, tuple):
            dtype, sizes, grad, backend = k
            device = str(backend.device)
            parts.append(f"{str(dtype).rpartition('.')[2]}{list(sizes)}{' requires_grad' if grad else ''}"
                         f"{'' if device == 'cpu' else ' ' + device}")
        else:
            parts.append(k.__name__ if isinstance(k, type) else type(k).__name__)
    return f"({', '.join(parts)}){'' if key[0] else ' no_grad'}"


def _refined_type(value):
    if isinstance(value, TensorImpl):
        # strides are not part of the key, so the refined type leaves them unknown
        return jit_types.TensorType(value.dtype, tuple(value.shape), value.requires_grad, None, str(value.device))
    return None


def _optimizer():
    return getattr(passes, "optimize", None)


class GraphExecutor:
    """Runs a graph through cached, specialised, optimised plans. `plans` maps a specialisation key to its
    ExecutionPlan; `debug_state()` describes them (key, optimised graph, instruction count, and with
    `log_passes=True` what each optimisation pass changed)."""

    def __init__(self, graph, optimize=True, log_passes=False):
        self.graph = graph
        self.optimize = optimize
        self.log_passes = log_passes
        self.plans = {}

    def plan_for(self, inputs):
        """The ExecutionPlan for these inputs, built (specialised, optimised, compiled) on first use."""
        key = _key(inputs)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = self._build(key, inputs)
        return plan

    def _build(self, key, inputs):
        if len(inputs) != len(self.graph.inputs()):
            raise RuntimeError(f"expected {len(self.graph.inputs())} inputs, got {len(inputs)}")
        graph = self.graph.copy()
        for value, arg in zip(graph.inputs(), inputs):
            t = _refined_type(arg)
            if t is not None:
                value.setType(t)
        log = None
        optimize = _optimizer() if self.optimize else None
        if optimize is not None:
            log = PassLog() if self.log_passes else None
            module = inputs[0] if inputs and isinstance(inputs[0], _Module) else None
            graph = optimize(graph, log=log, module=module) or graph
        return ExecutionPlan(key, graph, Interpreter(graph), log)

    def run(self, inputs):
        """Run the graph on `inputs` (a list, one per graph input); returns the list of outputs."""
        key = _key(inputs)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = self._build(key, inputs)
        return plan.interpreter.run(inputs)

    __call__ = run

    def debug_state(self):
        """A readable summary of every cached plan: its key, the optimised graph and the instruction count."""
        out = [f"GraphExecutor: {len(self.plans)} plan(s), optimize={self.optimize}"]
        for plan in self.plans.values():
            out.append(f"plan {_describe_key(plan.key)}: {len(plan.interpreter.instructions)} instructions")
            out.append(str(plan.graph).rstrip())
            if plan.log is not None:
                out.append(str(plan.log))
        return "\n".join(out)

    def __repr__(self):
        return f"<lantern.jit.GraphExecutor: {len(self.plans)} plan(s)>"


_EXECUTORS = {}  # id(graph) -> (weak reference to the graph, its GraphExecutor); entries leave with their graph


def executor_for(graph, optimize=True):
    """The GraphExecutor kept with `graph` (made on first use)."""
    entry = _EXECUTORS.get(id(graph))
    if entry is not None and entry[0]() is graph and entry[1].optimize == optimize:
        return entry[1]
    executor = GraphExecutor(graph, optimize)
    _EXECUTORS[id(graph)] = (weakref.ref(graph), executor)
    weakref.finalize(graph, _EXECUTORS.pop, id(graph), None)
    return executor


def run(graph, inputs, optimize=True):
    """Run `graph` on `inputs` through the GraphExecutor kept with the graph (plans are reused across calls)."""
    entry = _EXECUTORS.get(id(graph))
    if entry is not None and entry[0]() is graph and entry[1].optimize == optimize:
        return entry[1].run(inputs)
    return executor_for(graph, optimize).run(inputs)
