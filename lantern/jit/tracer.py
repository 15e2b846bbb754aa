"""jit.tracer: run a function once on example inputs and record every op it dispatches as a graph (torch.jit.trace).

While a trace records, `tls.tracer` holds a `TracingState` and the dispatcher sends each op call to the tracer
kernel: it runs the op below the Tracer key, then appends an `aten::<name>` node whose inputs are the values of the
arguments (non-tensor arguments become `prim::Constant`s) and whose outputs carry the example run's tensor types.
Python control flow is not recorded: the branch the example took is frozen into the graph, and converting a tensor
to a Python value warns with a `TracerWarning`.

>>> import warnings, lantern
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", DeprecationWarning)    # torch 2.13 deprecates trace; so do we
...     traced = lantern.jit.trace(lambda x: x.t().t(), lantern.ones(2, 3))
>>> [(n.kind(), n.attrs["op"]) for n in traced.graph.nodes()]
[('aten::t', 't'), ('aten::t', 't')]
>>> traced(lantern.ones(2, 3)).shape
lantern.Size([2, 3])
"""
import difflib
import inspect
import os
import sys
import warnings

from ..autograd.grad_mode import no_grad
from ..core.dispatch_keys import DispatchKey
from ..core.layout import memory_format
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from ..nn.modules import module as nn_module
from ..nn.modules.module import Module
from ..ops import dispatcher
from ..ops.schema import qualified_name
from . import types as T
from .ir import Graph
from .module import ScriptFunction, ScriptModule, TopLevelTracedModule, TracedModule
from .passes import dead_code_elimination

__all__ = ["trace", "trace_module", "TracerWarning", "TracingCheckError"]


class TracerWarning(Warning):
    """A trace may not generalise: Python saw a tensor's value, so the branch or number taken is frozen."""


class TracingCheckError(Exception):
    """check_trace found that re-tracing gave another graph, other constants, or that running the trace failed."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            message += extra_msg + "\n"
        if graph_diff_error is not None:
            message += "ERROR: Graphs differed across invocations!\n" + _indent(graph_diff_error) + "\n"
        if tensor_compare_error is not None:
            message += ("ERROR: Tensor-valued Constant nodes differed in value across invocations. This often "
                        "indicates that the tracer has encountered untraceable code.\n"
                        + _indent(tensor_compare_error) + "\n")
        self.message = message
        super().__init__(message)


def _indent(text):
    return "".join("\t" + line for line in text.splitlines(True))


_PYTHON_VALUE_WARNING = ("Converting a tensor to a Python {} might cause the trace to be incorrect. We can't record "
                         "the data flow of Python values, so this value will be treated as a constant in the future. "
                         "This means that the trace might not generalize to other inputs!")
_ITERATION_WARNING = ("Iterating over a tensor might cause the trace to be incorrect. Passing a tensor of different "
                      "shape won't change the number of iterations executed (and might lead to errors or silently "
                      "give incorrect results).")
_LEN_WARNING = ("Using len to get tensor shape might cause the trace to be incorrect. Recommended usage would be "
                "tensor.shape[0]. Passing a tensor of different shape might lead to errors or silently give incorrect "
                "results.")


# ---- recording ------------------------------------------------------------------------------------------------

class TracingState:
    """One recording: the graph being built and the Value that each live tensor currently is.

    Tensors are keyed by id() and kept alive until the trace ends, so that an id is never reused for another tensor
    mid-trace. A tensor seen for the first time is a parameter/buffer of the traced module (read with
    prim::GetAttr chains from `self`) or else a constant, as torch does with captured tensors."""

    def __init__(self, graph, module=None, self_value=None):
        self.graph = graph
        self.active = [self]         # this trace, then the traces of the submodule calls now running (or None)
        self.submodule_graphs = {}   # id(submodule) -> the graph of its first call's forward
        self._values = {}
        self._alive = []
        self._attr_paths = {}    # id(parameter or buffer) -> ('seq', '0', 'weight')
        self._attr_values = {}   # path prefix -> the Value of that submodule / attribute
        if module is not None:
            self._attr_values[()] = self_value
            for prefix, sub in module.named_modules():
                for name, t in list(sub._parameters.items()) + list(sub._buffers.items()):
                    if t is not None and id(t) not in self._attr_paths:
                        path = tuple(prefix.split(".")) + (name,) if prefix else (name,)
                        self._attr_paths[id(t)] = path
            self._module = module

    def set_value(self, t, value):
        if id(t) not in self._values:
            self._alive.append(t)
        self._values[id(t)] = value

    def value_of(self, t):
        """The Value standing for tensor `t`, emitting a GetAttr chain or a constant for a tensor not seen yet."""
        v = self._values.get(id(t))
        if v is not None:
            return v
        path = self._attr_paths.get(id(t))
        if path is not None:
            v = self._get_attr(path)
        else:
            v = self.graph.insertConstant(t)
        self.set_value(t, v)
        return v

    def _get_attr(self, path):
        for i in range(1, len(path) + 1):
            prefix = path[:i]
            if prefix in self._attr_values:
                continue
            name = prefix[-1]
            node = self.graph.create("prim::GetAttr", [self._attr_values[prefix[:-1]]], 1)
            node.s_("name", name)
            self.graph.insertNode(node)
            out = node.output()
            if i == len(path):
                out.setType(T.TensorType.get())
            else:
                out.setType(T.ClassType(_class_name(self._module.get_submodule(".".join(prefix)))))
            out.setDebugName("_" + name if name.isdigit() else name)
            self._attr_values[prefix] = out
        return self._attr_values[path]

    def argument_value(self, arg, a, location=None):
        """The Value of one op argument: tensors by identity, tensor lists through prim::ListConstruct."""
        if isinstance(a, TensorImpl):
            return self.value_of(a)
        if arg.is_tensor and arg.is_list and a is not None:
            items = [self.constant(None, location) if t is None else self.value_of(t) for t in a]
            node = self.graph.create("prim::ListConstruct", items, 1)
            self.graph.insertNode(node)
            elem = T.OptionalType(T.TensorType.get()) if arg.optional else T.TensorType.get()
            node.output().setType(T.ListType(elem))
            return node.output()
        return self.constant(a, location)

    def record(self, op, inputs, result, location=None):
        """Append the node for one op call whose argument Values are `inputs` and whose result is `result`."""
        returns = op.schema.returns
        node = self.graph.create(qualified_name(op.schema.name), inputs, max(len(returns), 1))
        node.attrs["op"] = op.name
        self.graph.insertNode(node)
        node.setSourceRange(location)
        values, results = node.outputs(), result if isinstance(result, tuple) and len(returns) > 1 else (result,)
        if len(returns) == 1 and returns[0].is_tensor and returns[0].is_list:  # split's Tensor[]: unpacked, as torch
            node.output().setType(T.ListType(T.TensorType.get()))
            unpack = self.graph.create("prim::ListUnpack", [node.output()], len(result))
            self.graph.insertNode(unpack)
            values, results = unpack.outputs(), result
        for value, r in zip(values, results):
            if isinstance(r, TensorImpl):
                value.setType(T.TensorType.create_from_tensor(r))
                self.set_value(r, value)
            else:
                value.setType(_type_of(r))

    def record_call(self, fn, inputs, result, location=None):
        """Append a prim::CallFunction of the compiled function `fn` (torch's trace of a scripted call): its
        outputs stand for `result`, a tuple result through prim::TupleUnpack."""
        from .frontend import _FunctionRef  # cycle: jit.frontend imports this module
        ref = self.graph.create("prim::Constant", [], 1)
        ref.attrs["value"] = _FunctionRef(fn.qualified_name, fn)
        ref.output().setType(T.FunctionType(fn.name))
        self.graph.insertNode(ref)
        declared = [v.type() for v in fn.graph.outputs()]
        node = self.graph.create("prim::CallFunction", [ref.output()] + inputs, len(declared))
        self.graph.insertNode(node)
        node.setSourceRange(location)
        values, results = node.outputs(), (result,) if len(declared) == 1 else result
        if len(declared) == 1 and isinstance(declared[0], T.TupleType) and isinstance(result, tuple):
            node.output().setType(declared[0])
            unpack = self.graph.create("prim::TupleUnpack", [node.output()], len(result))
            self.graph.insertNode(unpack)
            values, results = unpack.outputs(), result
        for value, r in zip(values, results):
            if isinstance(r, TensorImpl):
                value.setType(T.TensorType.create_from_tensor(r))
                self.set_value(r, value)
            else:
                value.setType(_type_of(r))

    def constant(self, value, location=None):
        """A prim::Constant for a non-tensor argument (typed Any when TorchScript has no type for it); a memory
        format is its int, as in torch's IR."""
        if isinstance(value, memory_format):
            value = T.memory_format_index(value)
        v = self.graph.insertConstant(value, _type_of(value))
        v.node().setSourceRange(location)
        return v

    def warn_python_value(self, what):
        """A tensor's value became a Python `what` ('boolean', 'float', ...): the trace freezes it."""
        warnings.warn(_PYTHON_VALUE_WARNING.format(what), TracerWarning, stacklevel=_user_stacklevel())

    def warn_iteration(self):
        warnings.warn(_ITERATION_WARNING, TracerWarning, stacklevel=_user_stacklevel())

    def warn_len(self):
        warnings.warn(_LEN_WARNING, TracerWarning, stacklevel=_user_stacklevel())


def _type_of(value):
    try:
        return T.type_of(value)
    except RuntimeError:
        return T.AnyType.get()


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_frame():
    """(frame, warnings stacklevel) of the innermost caller outside lantern, seen from the caller's caller."""
    frame, level = sys._getframe(3), 2
    while frame is not None and frame.f_code.co_filename.startswith((_PACKAGE_DIR, "<lantern")):
        frame, level = frame.f_back, level + 1
    return frame, level


def _user_stacklevel():
    """The stacklevel for a warnings.warn in the caller that points at user code."""
    return _user_frame()[1]


def _user_location():
    """'file:line:0' of the user code running an op (torch's source range comment on traced nodes)."""
    frame = _user_frame()[0]
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}:0"


class _Suspended:
    """Run with no trace recording (the tracer kernel computes below its key; check_trace runs eagerly)."""

    def __enter__(self):
        self.saved = tls.tracer
        tls.tracer = None
        tls.refresh()

    def __exit__(self, *exc):
        tls.tracer = self.saved
        tls.refresh()


def _tracer_kernel(op, args):
    """Record the call in the trace and in every submodule trace open around it, then compute below Tracer."""
    root = tls.tracer
    with _Suspended():
        location = _user_location()
        states = [s for s in root.active if s is not None]
        pending = [(s, [s.argument_value(arg, a, location) for arg, a in zip(op.schema.args, args)])
                   for s in states]
        result = dispatcher.redispatch(op, args, DispatchKey.Tracer)
        for s, inputs in pending:
            s.record(op, inputs, result, location)
    return result


dispatcher.set_tracer_kernel(_tracer_kernel)


def record_script_call(fn, args):
    """A compiled function called while a trace records: it runs untraced, and every trace open around the call
    records one prim::CallFunction of it, so the trace keeps the function's control flow."""
    root = tls.tracer
    with _Suspended():
        location = _user_location()
        states = [s for s in root.active if s is not None]
        pending = [(s, [s.value_of(a) if isinstance(a, TensorImpl) else s.constant(a, location) for a in args])
                   for s in states]
        result = fn(*args)
        for s, inputs in pending:
            s.record_call(fn, inputs, result, location)
    return result


# ---- graph inputs and outputs ---------------------------------------------------------------------------------

def _class_name(module):
    """The TorchScript class name torch gives a module's type: __torch__.<module path>.<class>."""
    cls = type(module)
    path = cls.__module__
    if path.startswith("lantern."):
        path = "torch." + path[len("lantern."):]
    qual = cls.__qualname__ if path == "__main__" else f"{path}.{cls.__qualname__}"
    return "__torch__." + qual


def _bind_input(state, graph, value, example):
    """Type a graph input after its example argument: a tensor, or a (nested) tuple/list of tensors unpacked."""
    if isinstance(example, TensorImpl):
        value.setType(T.TensorType.create_from_tensor(example))
        state.set_value(example, value)
        return
    if isinstance(example, (tuple, list)):
        kind = "prim::TupleUnpack" if isinstance(example, tuple) else "prim::ListUnpack"
        node = graph.create(kind, [value], len(example))
        graph.insertNode(node)
        for item_value, item in zip(node.outputs(), example):
            _bind_input(state, graph, item_value, item)
        types = [v.type() for v in node.outputs()]
        value.setType(T.TupleType(types) if isinstance(example, tuple) else T.ListType(T.TensorType.get()))
        return
    if isinstance(example, dict):
        raise NotImplementedError("lantern.jit.trace: dict example inputs are not supported yet; pass the tensors "
                                  "as separate arguments or a tuple")
    raise RuntimeError(f"Type '{type(example).__name__}' cannot be traced. Only Tensors and (possibly nested) Lists, "
                       "Dicts, and Tuples of Tensors can be traced")


_DICT_OUTPUT_ERROR = (
    "Encountering a dict at the output of the tracer might cause the trace to be incorrect, this is only valid if "
    "the container structure does not change based on the module's inputs. Consider using a constant container "
    "instead (e.g. for `list`, use a `tuple` instead. for `dict`, use a `NamedTuple` instead). If you absolutely "
    "need this and know the side effects, pass strict=False to trace() to allow this behavior.")


def _output_value(state, graph, out, strict):
    if isinstance(out, TensorImpl):
        return state.value_of(out)
    if isinstance(out, (tuple, list)):
        items = [_output_value(state, graph, o, strict) for o in out]
        kind = "prim::TupleConstruct" if isinstance(out, tuple) else "prim::ListConstruct"
        node = graph.create(kind, items, 1)
        graph.insertNode(node)
        node.output().setType(T.TupleType([v.type() for v in items]) if isinstance(out, tuple)
                              else T.ListType(T.TensorType.get()))
        return node.output()
    if isinstance(out, dict):
        if strict:
            raise RuntimeError(_DICT_OUTPUT_ERROR)
        items = []
        for k, v in out.items():
            items += [graph.insertConstant(k), _output_value(state, graph, v, strict)]
        node = graph.create("prim::DictConstruct", items, 1)
        graph.insertNode(node)
        node.output().setType(T.DictType(T.type_of(next(iter(out))) if out else T.StrType.get(),
                                         T.TensorType.get()))
        return node.output()
    raise RuntimeError("Only tensors, lists, tuples of tensors, or dictionary of tensors can be output from "
                       "traced functions")


def _input_names(fn, count):
    """Graph input names: the function's positional parameter names (input<i> past them)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [names[i] if i < len(names) else f"input{i}" for i in range(count)]


def _new_state(module, signature_of, args, kwargs):
    """A TracingState over a new Graph whose inputs are `self` (with a module) and the example arguments."""
    graph = Graph()
    self_value = None
    if module is not None:
        self_value = graph.addInput("self")
        self_value.setType(T.ClassType(_class_name(module)))
    state = TracingState(graph, module, self_value)
    names = _input_names(signature_of, len(args)) + list(kwargs)
    for name, example in zip(names, list(args) + list(kwargs.values())):
        _bind_input(state, graph, graph.addInput(name), example)
    return state


def _finish(state, out, strict):
    """Return `out` from the graph and drop what it does not need (as torch, e.g. a branch condition's ops)."""
    if out is None:
        raise RuntimeError("The traced function didn't return any values! Side-effects are not captured in traces, "
                           "so it would be a no-op.")
    with _Suspended():
        state.graph.registerOutput(_output_value(state, state.graph, out, strict))
    dead_code_elimination(state.graph)


def _submodule_hooks(root, module):
    """Global module hooks that give each submodule of `module` called during the trace its own forward graph
    (from its first call with tensor arguments), recorded alongside the flattened top-level graph."""
    members = {id(m) for _, m in module.named_modules()} - {id(module)}

    def pre(sub, args):
        if tls.tracer is not root:  # the hooks are global: a module running in another thread is not ours
            return
        traceable = (id(sub) in members and id(sub) not in root.submodule_graphs
                     and all(isinstance(a, TensorImpl) for a in args))
        with _Suspended():
            root.active.append(_new_state(sub, sub.forward, args, {}) if traceable else None)

    def post(sub, args, kwargs, out):
        if tls.tracer is not root:
            return
        state = root.active.pop()
        if state is None or kwargs or id(sub) in root.submodule_graphs:
            return
        try:
            _finish(state, out, strict=True)
        except RuntimeError:
            return  # an output a graph cannot return: the call stays inlined in its parent only
        root.submodule_graphs[id(sub)] = state.graph

    return (nn_module.register_module_forward_pre_hook(pre),
            nn_module.register_module_forward_hook(post, with_kwargs=True))


def _trace_graph(fn, args, module=None, signature_of=None, strict=True, kwargs=None):
    """Record one call `fn(*args, **kwargs)` into a new Graph; with `module`, input 0 is `self` of its class.

    Returns (graph, {id(submodule): its forward graph})."""
    kwargs = kwargs or {}
    state = _new_state(module, signature_of or fn, args, kwargs)
    hooks = _submodule_hooks(state, module) if module is not None else ()
    previous = tls.tracer
    tls.tracer = state
    tls.refresh()
    try:
        out = fn(*args, **kwargs)
    finally:
        tls.tracer = previous
        tls.refresh()
        for h in hooks:
            h.remove()
    _finish(state, out, strict)
    return state.graph, state.submodule_graphs


# ---- the public entry points --------------------------------------------------------------------------------

def _as_tuple(example_inputs):
    if isinstance(example_inputs, (TensorImpl, dict)):
        return (example_inputs,)
    return tuple(example_inputs)


def _deprecation(entry):
    warnings.warn(f"`torch.jit.{entry}` is deprecated. Please switch to `torch.compile` or `torch.export`.",
                  DeprecationWarning, stacklevel=3)


def _warn_optimize(optimize):
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with torch.jit.optimized_execution()` "
                      "instead", FutureWarning, stacklevel=3)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """Run `func` once on `example_inputs` and return it compiled as the ops it ran (torch.jit.trace).

    A plain function gives a `ScriptFunction`; an nn.Module (or its bound `forward`) a `TopLevelTracedModule`.
    With `check_trace`, the trace is re-made and run on `check_inputs` (default: the example inputs) and compared
    with the eager function; a different graph raises `TracingCheckError`, different outputs warn."""
    if isinstance(func, ScriptModule):
        warnings.warn("The input to trace is already a ScriptModule, tracing it is a no-op. Returning the object "
                      "as is.", stacklevel=2)
        return func
    _deprecation("trace")
    _warn_optimize(optimize)
    owner = getattr(func, "__self__", None)
    if not (isinstance(owner, Module) and getattr(func, "__name__", None) == "forward"):
        owner = func if isinstance(func, Module) else None
    if owner is not None:  # a module, or its bound forward
        inputs = example_kwarg_inputs if example_inputs is None else example_inputs
        return trace_module(owner, {"forward": inputs}, None, check_trace,
                            None if check_inputs is None else [{"forward": c} for c in check_inputs],
                            check_tolerance, strict, _force_outplace,
                            example_inputs_is_kwarg=example_inputs is None and example_kwarg_inputs is not None)
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be provided to trace")
    name = getattr(func, "__name__", type(func).__name__).replace("<lambda>", "_lambda")
    if example_kwarg_inputs is not None and example_inputs is None:
        args, kwargs = (), dict(example_kwarg_inputs)
    else:
        args, kwargs = _as_tuple(example_inputs), None
    graph, _ = _trace_graph(func, args, strict=strict, kwargs=kwargs)
    traced = ScriptFunction(name, graph)
    if check_trace:
        checks = [example_inputs if kwargs is None else kwargs] if check_inputs is None else check_inputs
        for check in checks:
            _check(func, traced, graph, check, check_tolerance, strict, kwargs is not None, None)
    return traced


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    """Trace the methods of `mod` named by `inputs` ({'forward': example inputs, ...}) into a TopLevelTracedModule.

    Each method graph takes the module as input 0 (`self`) and reads parameters and buffers with prim::GetAttr
    chains; submodule calls are flattened into it (torch's inlined_graph), and each traced submodule gets the
    forward graph of its first call."""
    _deprecation("trace_method")
    _warn_optimize(optimize)
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    methods, submodule_graphs = {}, {}
    for method_name, example in inputs.items():
        args, kwargs = _method_args(example, example_inputs_is_kwarg)
        fn = mod if method_name == "forward" else getattr(mod, method_name)
        signature_of = mod.forward if method_name == "forward" else fn
        graph, subs = _trace_graph(fn, args, module=mod, signature_of=signature_of, strict=strict, kwargs=kwargs)
        methods[method_name] = graph
        submodule_graphs = {**subs, **submodule_graphs}
    traced = _build_module(mod, methods, submodule_graphs, top=True)
    if check_trace:
        checks = [inputs] if check_inputs is None else check_inputs
        for check in checks:
            for method_name, example in check.items():
                fn = mod if method_name == "forward" else getattr(mod, method_name)
                runner = traced if method_name == "forward" else getattr(traced, method_name)
                _check(fn, runner, methods[method_name], example, check_tolerance, strict, example_inputs_is_kwarg,
                       (mod, method_name))
    return traced


def _method_args(example, is_kwarg):
    if is_kwarg:
        return (), dict(example)
    return _as_tuple(example), None


def _build_module(mod, methods, submodule_graphs, top):
    """The traced module: mod's parameters, buffers and traced submodules (with the forward graph of their first
    call, when they ran), plus the method graphs."""
    cls = TopLevelTracedModule if top else TracedModule
    params = {k: v for k, v in mod._parameters.items() if v is not None}
    buffers = {k: v for k, v in mod._buffers.items() if v is not None}
    subs = {}
    for name, sub in mod._modules.items():
        if sub is not None:
            graph = submodule_graphs.get(id(sub))
            subs[name] = _build_module(sub, {} if graph is None else {"forward": graph}, submodule_graphs, top=False)
    return cls._construct(type(mod).__name__, params, buffers, subs, {}, methods, training=mod.training)


# ---- check_trace --------------------------------------------------------------------------------------------

def _clone_inputs(value):
    if isinstance(value, TensorImpl):
        c = value.detach().clone()
        return c.requires_grad_(value.requires_grad) if value.is_leaf else c
    if isinstance(value, tuple):
        return tuple(_clone_inputs(v) for v in value)
    if isinstance(value, list):
        return [_clone_inputs(v) for v in value]
    if isinstance(value, dict):
        return {k: _clone_inputs(v) for k, v in value.items()}
    return value


def _check(func, traced, graph, check_input, tolerance, strict, is_kwarg, module_method):
    """torch's _check_trace for one input set: retrace, run trace / function / retrace, compare."""
    with no_grad():
        args, kwargs = _method_args(check_input, is_kwarg)
        if module_method is None:
            check_graph, _ = _trace_graph(func, _clone_inputs(args), strict=strict, kwargs=_clone_inputs(kwargs))
            retraced = ScriptFunction(getattr(traced, "name", "fn"), check_graph)
        else:
            mod, name = module_method
            fn = mod if name == "forward" else getattr(mod, name)
            check_graph, subs = _trace_graph(fn, _clone_inputs(args), module=mod,
                                             signature_of=mod.forward if name == "forward" else fn, strict=strict,
                                             kwargs=_clone_inputs(kwargs))
            retraced = getattr(_build_module(mod, {name: check_graph}, subs, top=True), name)

        def run(f, what):
            try:
                out = f(*_clone_inputs(args), **(_clone_inputs(kwargs) or {}))
            except Exception as e:
                raise TracingCheckError(*_graph_diagnostics(graph, check_graph),
                                        extra_msg=f"encountered an exception while running the {what} with test "
                                                  f"inputs.\nException:\n{_indent(str(e))}") from e
            outs = out if isinstance(out, tuple) else (out,)
            return [o for o in outs if isinstance(o, TensorImpl)]

        traced_outs = run(traced, "trace")
        fn_outs = run(func, "Python function")
        if _compare_outputs(graph, traced_outs, fn_outs, "Python function", tolerance):
            _compare_outputs(graph, traced_outs, run(retraced, "repeated trace"), "repeated trace", tolerance)
    diagnostics = _graph_diagnostics(graph, check_graph)
    if any(d is not None for d in diagnostics):
        raise TracingCheckError(*diagnostics)


def _mismatch(a, b, rtol):
    """None if a and b are close (torch.testing.assert_close with this rtol), else the reason."""
    if tuple(a.shape) != tuple(b.shape):
        return f"The values for attribute 'shape' do not match: {tuple(a.shape)} != {tuple(b.shape)}."
    a64, b64 = a.detach().double(), b.detach().double()
    atol = 1e-5 if a.dtype.is_floating_point or b.dtype.is_floating_point else 0.0
    diff = (a64 - b64).abs()
    bad = (diff > atol + rtol * b64.abs()) & ~(a64.isnan() & b64.isnan())
    if not bool(bad.any()):
        return None
    if a.numel() == 1:
        return (f"Scalars are not close!\n\nExpected {b64.item()} but got {a64.item()}.\n"
                f"Absolute difference: {diff.item()} (up to {atol} allowed)")
    n = int(bad.sum())
    return (f"Tensor-likes are not close!\n\nMismatched elements: {n} / {a.numel()} "
            f"({100.0 * n / a.numel():.1f}%)\nGreatest absolute difference: {float(diff.max())} "
            f"(up to {atol} allowed)")


def _compare_outputs(graph, original, reference, match_what, rtol):
    ok = True
    for i, (orig, ref) in enumerate(zip(original, reference)):
        reason = _mismatch(orig, ref, rtol)
        if reason is not None:
            if ok:
                _warn_nondeterministic(graph)
            warnings.warn(f"Output nr {i + 1}. of the traced function does not match the corresponding output of "
                          f"the {match_what}. Detailed error:\n{reason}", TracerWarning, stacklevel=_user_stacklevel())
            ok = False
    return ok


def _warn_nondeterministic(graph):
    nodes = [n for n in graph.nodes() if n.isNondeterministic()]
    if nodes:
        warnings.warn("Trace had nondeterministic nodes. Did you forget call .eval() on your model? Nodes:\n"
                      + "\n".join(_indent(str(n).rstrip("\n")) for n in nodes[:20])
                      + "\nThis may cause errors in trace checking. To disable trace checking, pass "
                      "check_trace=False to torch.jit.trace()", TracerWarning, stacklevel=_user_stacklevel())


def _canonical(graph):
    """The graph as text with values numbered by first appearance and no types: what check_trace compares.
    Tensor constants print their value when they have one element (torch's `{2}`), else as `{...}`."""
    names = {}

    def name(v):
        return names.setdefault(v, f"%{len(names)}")

    lines = ["graph(" + ", ".join(name(v) for v in graph.inputs()) + "):"]
    tensors = []

    def walk(nodes, depth):
        for n in nodes:
            attrs = []
            for key, value in sorted(n.attrs.items()):
                if isinstance(value, TensorImpl):
                    tensors.append(n)
                    value = "{" + (repr(value.item()) if value.numel() == 1 else "...") + "}"
                attrs.append(f"{key}={value!r}" if not isinstance(value, str) or key != "value" else
                             f"{key}={value}")
            outs = ", ".join(name(o) for o in n.outputs())
            ins = ", ".join(name(i) for i in n.inputs())
            lines.append("  " * depth + f"{outs} = {n.kind()}[{', '.join(attrs)}]({ins})")
            for b in n.blocks():
                walk(b.nodes(), depth + 1)

    walk(graph.nodes(), 1)
    lines.append("  return (" + ", ".join(name(v) for v in graph.outputs()) + ")")
    return "\n".join(lines) + "\n", tensors


def _graph_diagnostics(graph, check_graph):
    """(graph diff error or None, tensor constant error or None) between a trace and its re-trace."""
    with _Suspended():
        mine, my_tensors = _canonical(graph)
        theirs, their_tensors = _canonical(check_graph)
        graph_diff = None
        if mine != theirs:
            diff = "".join(difflib.ndiff(mine.splitlines(True), theirs.splitlines(True)))
            graph_diff = "Graph diff:\n" + _indent(diff) + "\n"
            for a, b in zip(mine.splitlines(True)[1:], theirs.splitlines(True)[1:]):
                if a != b:
                    graph_diff += "First diverging operator:\nNode diff:\n" + _indent(
                        "".join(difflib.ndiff([a.strip() + "\n"], [b.strip() + "\n"]))) + "\n"
                    break
        tensor_error = None
        for a, b in zip(my_tensors, their_tensors):
            if a.kind() != b.kind():
                break
            reason = _mismatch(a.attrs["value"], b.attrs["value"], 1.3e-6)
            if reason is not None:
                tensor_error = "Node:\n" + _indent(str(a).strip() + "\n") + "Comparison exception: " + \
                    _indent(reason)
                break
    return graph_diff, tensor_error
