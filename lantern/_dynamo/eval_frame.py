"""torch.compile over lantern's JIT: capture a call into a graph, run later calls through the graph executor.

torch.compile's Dynamo reads a function's bytecode; lantern captures by tracing instead. The first call with a
new specialisation (each tensor's dtype, shape, requires_grad and device, the value of every other argument,
grad mode, CPU autocast, and for a module every submodule's `training`) runs the function once under lantern's
tracer: that run is the call's result, and the ops it ran become a JIT graph (a module's parameters and buffers
are read from the module at each run, so optimizer steps and load_state_dict are seen). Later calls with that
specialisation run the graph through lantern.jit's GraphExecutor (optimisation passes and elementwise fusion; the
"eager" and "aot_eager" backends run it unoptimised). Autograd records through the graph as in eager mode.

A call that needs gradients (grad mode on, and an argument or parameter that requires grad) is captured as
AOTAutograd does instead (lantern/_functorch, aot_plan.py): the forward and the backward the derivative formulas
run are traced into one joint graph, partitioned into a forward and a backward graph, and each later call runs
them as one autograd node, without per-op recording. In reference mode a captured graph runs without the
optimisation passes (no fused kernels), and a call that needs gradients is captured the ordinary way (an AotPlan
captured before runs the function eagerly).

Where the trace cannot stand for the function, that specialisation runs eagerly from then on, as Dynamo's graph
breaks fall back to Python: a tensor's value turned into a Python number or bool (data-dependent control flow,
`.item()`), iteration over a tensor, a `torch.compiler.disable`d function, or anything the tracer rejects. With
fullgraph=True these raise `torch._dynamo.exc.Unsupported` instead.

>>> import lantern
>>> lin = lantern.nn.Linear(3, 2)
>>> compiled = lantern.compile(lin)
>>> x = lantern.randn(4, 3)
>>> [compiled(x).equal(lin(x)) for _ in range(2)], list(compiled.state_dict())
([True, True], ['_orig_mod.weight', '_orig_mod.bias'])
"""
import functools
import warnings
import weakref

from ..core import reference
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..jit.executor import GraphExecutor
from ..jit.tracer import TracerWarning, _trace_graph
from ..ops import autocast as _autocast
from ..nn.modules.module import Module
from ..utils._pytree import tree_flatten, tree_unflatten
from . import config
from .aot_plan import AotPlan, capture_aot, runs_eagerly
from .exc import InvalidBackend, Unsupported
from .pool_relu import pool_before_relu
from ..core import user_warnings

__all__ = ["OptimizedModule", "compile", "optimize", "reset", "is_compiling", "list_backends", "disable"]

# torch's registered backend names; False: a debugging backend that runs the captured graph as it is
_BACKENDS = {
    "inductor": True, "cudagraphs": True, "openxla": True, "openxla_eval": True, "tvm": True, "ts": True,
    "aot_ts": True, "eager": False, "eager_debug": False, "eager_noexcept": False, "pre_dispatch_eager": False,
    "aot_eager": False, "aot_eager_decomp_partition": False, "aot_eager_decomp_partition_crossref": False,
    "aot_eager_decomp_partition_with_mode": False, "aot_eager_default_partitioner": False,
    "invoke_subgraph": False,
}
_LISTED_BACKENDS = ("cudagraphs", "inductor", "openxla", "tvm")  # list_backends() leaves out debug/experimental
_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")

_EAGER = "eager"  # a specialisation that runs the function itself
_OUTPUT = object()  # in a plan's output leaves: the place of the graph's next output tensor
_compiled_callables = weakref.WeakSet()


class _Capturing:
    """Set while a compiled function is being captured (torch.compiler.is_compiling())."""

    depth = 0


def is_compiling():
    """True while torch.compile captures a function (inside that function's code)."""
    return _Capturing.depth > 0


def list_backends(exclude_tags=("debug", "experimental")):
    """The backend names torch.compile accepts (by default without the debugging ones, as torch lists them)."""
    return sorted(_BACKENDS) if not exclude_tags else list(_LISTED_BACKENDS)


def reset():
    """Forget every captured graph (torch._dynamo.reset()): the next call of each compiled function captures
    again."""
    for compiled in list(_compiled_callables):
        compiled.plans.clear()


class _GraphBreak(TracerWarning):
    """Emitted during a capture by code that must run in Python (torch.compiler.disable)."""


def disable(fn=None, recursive=True, *, reason=None):
    """Run `fn` outside any graph: a compiled function that calls it runs eagerly (torch.compiler.disable)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)

    @functools.wraps(fn)
    def eager_only(*args, **kwargs):
        if is_compiling():
            user_warnings.warn(f"graph break: {getattr(fn, '__qualname__', fn)} is torch.compiler.disable'd"
                          + (f" ({reason})" if reason else ""), _GraphBreak)
        return fn(*args, **kwargs)
    return eager_only


class _Plan:
    """One captured specialisation: the graph's executor and how to put the outputs back in their structure. In
    reference mode the graph runs through `plain_executor`, as captured and without the optimisation passes (no
    fused kernels, no ReLU moved after a max pool)."""

    __slots__ = ("executor", "plain_executor", "out_leaves", "out_spec")

    def __init__(self, graph, out_leaves, out_spec, optimize):
        self.executor = GraphExecutor(pool_before_relu(graph.copy()) if optimize else graph, optimize)
        self.plain_executor = GraphExecutor(graph, optimize=False) if optimize else self.executor
        self.out_leaves = [_OUTPUT if isinstance(v, TensorImpl) else v for v in out_leaves]
        self.out_spec = out_spec

    def run(self, module, tensors):
        executor = self.executor if reference.mode.fast else self.plain_executor
        outputs = iter(executor.run([module, *tensors] if module is not None else tensors)[0])
        leaves = [next(outputs) if v is _OUTPUT else v for v in self.out_leaves]
        return tree_unflatten(leaves, self.out_spec)


def _leaf_key(v):
    if isinstance(v, TensorImpl):
        return (v.dtype, v._size, v._requires_grad, v._backend)
    try:
        hash(v)
    except TypeError:
        return (type(v), id(v))
    return (type(v), v)


class _CompiledCallable:
    """fn captured per specialisation (see the module docstring); `plans` maps a key to its _Plan or _EAGER."""

    def __init__(self, fn, module, fullgraph, optimize):
        self.fn, self.module, self.fullgraph, self.optimize = fn, module, fullgraph, optimize
        self.plans = {}
        _compiled_callables.add(self)

    def _key(self, leaves, spec):
        autocast = _autocast.state
        key = [tls.grad_enabled, autocast.enabled["cpu"], autocast.dtypes["cpu"], spec,
               tuple(_leaf_key(v) for v in leaves)]
        if self.module is not None:
            key.append(tuple(m.training for m in self.module.modules()))
            key.append(tuple(p._requires_grad for p in self.module.parameters()))
        return tuple(key)

    def __call__(self, *args, **kwargs):
        if is_compiling():  # called inside another capture: its ops join that graph
            return self.fn(*args, **kwargs)
        leaves, spec = tree_flatten((args, kwargs))
        key = self._key(leaves, spec)
        plan = self.plans.get(key)
        if plan is None:
            if len(self.plans) >= config.cache_size_limit:
                return self.fn(*args, **kwargs)
            plan, result = (self._capture_with_backward(args, kwargs, leaves, spec)
                            or self._capture(args, kwargs, leaves, spec))
            self.plans[key] = plan
            return result
        if plan is _EAGER or (type(plan) is AotPlan and not plan.active()):
            return self.fn(*args, **kwargs)
        return plan.run(self.module, [v for v in leaves if isinstance(v, TensorImpl)])

    def _capture(self, args, kwargs, leaves, spec):
        """(plan, result of this call): trace one call; on a graph break the specialisation stays eager."""
        positions = [i for i, v in enumerate(leaves) if isinstance(v, TensorImpl)]
        ran = []

        def captured(*tensors):
            filled = list(leaves)
            for i, t in zip(positions, tensors):
                filled[i] = t
            call_args, call_kwargs = tree_unflatten(filled, spec)
            out = self.fn(*call_args, **call_kwargs)
            ran.append(out)
            out_leaves, out_spec = tree_flatten(out)
            ran.append((out_leaves, out_spec))
            return tuple(v for v in out_leaves if isinstance(v, TensorImpl))

        error = None
        _Capturing.depth += 1
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    graph, _ = _trace_graph(captured, tuple(leaves[i] for i in positions), module=self.module,
                                            signature_of=captured, strict=False)
                except Exception as e:  # the tracer rejected something (or the function raised: it will again)
                    error = e
        finally:
            _Capturing.depth -= 1
        breaks = [w for w in caught if issubclass(w.category, TracerWarning)]
        for w in caught:
            if not issubclass(w.category, TracerWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if error is None and not breaks:
            return _Plan(graph, *ran[1], self.optimize), ran[0]
        if self.fullgraph:
            reason = str(breaks[0].message) if breaks else f"{type(error).__name__}: {error}"
            raise Unsupported(f"torch.compile(fullgraph=True) cannot capture {_name(self.fn)} as one graph: "
                              f"{reason}") from error
        if config.verbose:
            user_warnings.warn(f"torch.compile: {_name(self.fn)} runs eagerly for these inputs (graph break)")
        return _EAGER, (ran[0] if len(ran) == 2 else self.fn(*args, **kwargs))


    def _capture_with_backward(self, args, kwargs, leaves, spec):
        """(plan, result) for a call that needs gradients (aot_plan.py); None for another call, or to capture it
        the ordinary way."""
        if not AotPlan.wanted(self.module, leaves):
            return None
        if runs_eagerly(self.module):
            return _EAGER, self.fn(*args, **kwargs)
        if not AotPlan.active():  # reference mode: autograd records through the ordinary capture
            return None
        _Capturing.depth += 1
        try:
            return capture_aot(self.fn, args, kwargs, leaves, spec, self.module, self.optimize)
        finally:
            _Capturing.depth -= 1


def _name(fn):
    return getattr(fn, "__qualname__", type(fn).__name__)


class OptimizedModule(Module):
    """A compiled nn.Module (torch._dynamo.eval_frame.OptimizedModule): the original is the submodule
    `_orig_mod`, so state_dict keys carry the `_orig_mod.` prefix as torch's do; other attributes are the
    original module's."""

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        self._compiled_call = compiled
        self.training = mod.training

    def forward(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def _check_options(backend, mode, options):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if callable(backend):
        raise NotImplementedError("torch.compile(backend=<callable>): a custom backend receives a torch.fx "
                                  "GraphModule, which lantern does not have; use a backend name such as "
                                  "'inductor' or 'eager'")
    if backend not in _BACKENDS:
        raise InvalidBackend(backend)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, name=None,
            disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """torch.compile: `model` (a function or nn.Module) captured into lantern JIT graphs, falling back to eager
    execution where a call cannot be captured. Without `model`, a decorator. `dynamic` and `options` are accepted:
    lantern specialises on every shape."""
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, name=name, disable=disable, recompile_limit=recompile_limit,
                                 isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
    backend = "inductor" if backend is None else backend
    _check_options(backend, mode, options)
    if disable:
        return model
    optimize = _BACKENDS[backend]
    if isinstance(model, Module):
        return OptimizedModule(model, _CompiledCallable(model, model, fullgraph, optimize))
    if not callable(model):
        raise RuntimeError(f"torch.compile: expected a callable or an nn.Module, got {type(model).__name__}")
    compiled = _CompiledCallable(model, None, fullgraph, optimize)
    return functools.wraps(model)(lambda *args, **kwargs: compiled(*args, **kwargs))


def optimize(backend="inductor", *, nopython=False, dynamic=None, disable=False):
    """torch._dynamo.optimize(backend): the decorator form of compile (nopython is fullgraph)."""
    return functools.partial(compile, backend=backend, fullgraph=nopython, dynamic=dynamic, disable=disable)
