"""What trace and script return: ScriptFunction (a compiled function) and the ScriptModule family (torch.jit).

A `RecursiveScriptModule` is an ordinary `lantern.nn.Module` (parameters, buffers, submodules, state_dict, train,
to) whose methods are IR graphs instead of Python code. Each method graph takes the module itself as its first
input (`self`) and reads state with `prim::GetAttr`; calling a method runs its graph through
`lantern.jit.executor.run(graph, [self, *args])`. Tracing a module gives a `TopLevelTracedModule` (its children are
`TracedModule`s), which differ only in how they print.

>>> import lantern
>>> from lantern.jit.module import RecursiveScriptModule
>>> m = RecursiveScriptModule._construct("Scale", {"w": lantern.nn.Parameter(lantern.ones(2))}, {}, {}, {"k": 3},
...                                      {})
>>> m, [n for n, _ in m.named_parameters()], m.k, m.original_name
(RecursiveScriptModule(original_name=Scale), ['w'], 3, 'Scale')
"""
from ..nn.modules.module import Module
from .code import python_code
from .executor import run
from .passes import inline
from .serialization import save

__all__ = ["ScriptFunction", "ScriptMethod", "ScriptModule", "RecursiveScriptModule", "TracedModule",
           "TopLevelTracedModule"]


def _arg_name(value):
    """A graph input's name as a schema spells it: the debug name without its '.N' uniquing suffix."""
    name = value.debugName() if hasattr(value, "debugName") else ""
    base, dot, suffix = name.rpartition(".")
    if dot and suffix.isdigit():
        name = base
    return name or "arg"


def _schema_type(t):
    """A type as an operator schema spells it: 'Tensor', 'int[]', 'Tensor?', '(Tensor, int)', 'Dict(str, int)'."""
    kind = type(t).__name__
    if kind == "TensorType":
        return "Tensor"
    if kind == "ListType":
        return f"{_schema_type(t.getElementType())}[]"
    if kind == "OptionalType":
        return f"{_schema_type(t.getElementType())}?"
    if kind == "TupleType":
        return "(" + ", ".join(_schema_type(e) for e in t.elements()) + ")"
    if kind == "DictType":
        return f"Dict({_schema_type(t.getKeyType())}, {_schema_type(t.getValueType())})"
    return str(t)


def _schema(name, graph):
    """'forward(__torch__.M self, Tensor x) -> Tensor' from a graph's typed inputs and outputs."""
    args = ", ".join(f"{_schema_type(v.type())} {_arg_name(v)}" for v in graph.inputs())
    outputs = list(graph.outputs())
    if len(outputs) == 1:
        ret = _schema_type(outputs[0].type())
        if type(outputs[0].type()).__name__ == "TupleType":
            ret = f"({ret})"
    else:
        ret = "(" + ", ".join(_schema_type(v.type()) for v in outputs) + ")"
    return f"{name}({args}) -> {ret}"


def _run_graph(graph, inputs):
    """Run `graph` on `inputs` through the executor and return its result as Python returns it."""
    outputs = run(graph, inputs)
    if len(outputs) == 1:
        return outputs[0]
    return tuple(outputs) if outputs else None


def _bind(name, graph, args, kwargs, skip):
    """Positional and keyword arguments -> the graph's inputs in order, checked as torch checks a call (the first
    `skip` inputs, a method's self, are supplied by the caller and counted in the messages)."""
    from .frontend import check_arguments  # cycle: jit.frontend imports jit.module
    names = [_arg_name(v) for v in list(graph.inputs())[skip:]]
    if len(args) + len(kwargs) > len(names):
        raise RuntimeError(f"{name}() expected at most {len(names) + skip} argument(s) but received "
                           f"{len(args) + len(kwargs) + skip} argument(s). Declaration: {_schema(name, graph)}")
    defaults = (getattr(graph, "_defaults", None) or [None] * (len(names) + skip))[skip:]
    bound = list(args)
    for arg, default in zip(names[len(args):], defaults[len(args):]):
        if arg in kwargs:
            bound.append(kwargs[arg])
        elif default is not None:
            bound.append(default.value)
        else:
            raise RuntimeError(f"{name}() is missing value for argument '{arg}'. Declaration: "
                               f"{_schema(name, graph)}")
    for key in kwargs:
        if key not in names[len(args):]:
            raise RuntimeError(f"Unknown keyword argument '{key}' for operator '{name}'. Schema: "
                               f"{_schema(name, graph)}")
    check_arguments(name, graph, bound, skip)
    return bound


class _Compiled:
    """What a compiled function and a compiled method share: `.code`, `.schema`, `.inlined_graph` of `.graph`
    (a method inlines its module's submodule calls too: `_owner`)."""

    __slots__ = ()
    _owner = None

    @property
    def code(self):
        return python_code(self.graph, self.name)

    @property
    def schema(self):
        return _schema(self.name, self.graph)

    @property
    def inlined_graph(self):
        return _inlined(self.graph, self._owner)


def _inlined(graph, owner):
    """A copy of `graph` with calls replaced by the callee bodies (submodule methods too, given `owner`)."""
    return inline(graph.copy(), owner)


class ScriptFunction(_Compiled):
    """A compiled free function (torch.jit.ScriptFunction): what script(fn) and trace(fn, inputs) return.

    Calling it runs `graph`; `.code` shows it as TorchScript-like Python, `.schema` as an operator schema."""

    def __init__(self, name, graph):
        self.name = name
        self.graph = graph
        self.qualified_name = f"__torch__.{name}"

    def __call__(self, *args, **kwargs):
        return _run_graph(self.graph, _bind(self.name, self.graph, args, kwargs, 0))

    def save(self, f, _extra_files=None):
        save(self, f, _extra_files=_extra_files)

    def __repr__(self):
        return f"<lantern.jit.ScriptFunction object at {hex(id(self))}>"


class ScriptMethod(_Compiled):
    """A compiled method bound to its module (torch.ScriptMethod): callable, with `.graph`, `.code`, `.schema`."""

    __slots__ = ("owner", "name")

    def __init__(self, owner, name):
        self.owner = owner
        self.name = name

    @property
    def _owner(self):
        return self.owner

    @property
    def graph(self):
        return self.owner._methods[self.name]

    def __call__(self, *args, **kwargs):
        graph = self.graph
        return _run_graph(graph, [self.owner] + _bind(self.name, graph, args, kwargs, 1))

    def __repr__(self):
        return f"<lantern.jit.ScriptMethod {self.name} of {self.owner.original_name}>"


class ScriptModule(Module):
    """Base class of every compiled module (torch.jit.ScriptModule); use isinstance(m, ScriptModule) to test."""


class RecursiveScriptModule(ScriptModule):
    """A compiled module: nn.Module state plus one IR graph per method (torch.jit.RecursiveScriptModule).

    Build one with `_construct`; `forward`/calling and other methods (by attribute) run their graphs; `.graph`
    and `.code` show forward; `.save(f)` writes a TorchScript archive that `lantern.jit.load` reads back."""

    @classmethod
    def _construct(cls, original_name, parameters, buffers, submodules, attributes, methods, training=True):
        """A module of this class with the given state; `methods` maps a name to a Graph whose input 0 is self."""
        m = cls.__new__(cls)
        Module.__init__(m)
        d = m.__dict__
        d["original_name"] = original_name
        d["_methods"] = dict(methods)
        d["_attributes"] = list(attributes)
        d["training"] = training
        for name, p in parameters.items():
            m.register_parameter(name, p)
        for name, b in buffers.items():
            m.register_buffer(name, b)
        for name, sub in submodules.items():
            m.add_module(name, sub)
        for name, value in attributes.items():
            object.__setattr__(m, name, value)
        for name in methods:  # as in torch, compiled methods shadow nn.Module's (a scripted `double` wins)
            d[name] = ScriptMethod(m, name)
        return m

    def _method_names(self):
        return list(self._methods)

    @property
    def graph(self):
        return self._forward_graph()

    @property
    def inlined_graph(self):
        return _inlined(self._forward_graph(), self)

    @property
    def code(self):
        return python_code(self._forward_graph(), "forward")

    def _forward_graph(self):
        graph = self._methods.get("forward")
        if graph is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'graph' (the module has no "
                                 "compiled forward method)")
        return graph

    def save(self, f, _extra_files=None):
        """Write this module as a TorchScript archive (lantern.jit.save)."""
        save(self, f, _extra_files=_extra_files)

    def extra_repr(self):
        return f"original_name={self.original_name}"

    def _get_name(self):
        return "RecursiveScriptModule"


class TracedModule(RecursiveScriptModule):
    """A submodule of a traced module (torch.jit.TracedModule): prints under its original class name."""

    def _get_name(self):
        return self.original_name


class TopLevelTracedModule(TracedModule):
    """What trace(module, inputs) returns (torch.jit.TopLevelTracedModule)."""
