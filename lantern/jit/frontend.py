"""torch.jit.script for lantern: compile a statically typed Python subset (functions and nn.Modules) into the IR.

`script(fn)` reads the function's source with `inspect`, parses it with `ast`, and emits an SSA Graph
(frontend_emit) with control flow kept as `prim::If` / `prim::Loop`. Unannotated arguments are Tensors. Unused
pure nodes are removed at compile time, as torch's cleanup does. `script(module)` compiles `forward`, the
`@export`ed methods and what they call into a RecursiveScriptModule whose submodules are scripted recursively.

>>> import lantern
>>> from lantern.jit.frontend import script
>>> def clip(x, limit: float):
...     if bool(x.max() > limit):
...         return x.clamp(max=limit)
...     return x
>>> [n.kind() for n in script(clip).graph.nodes()][-1]
'prim::If'
"""
import ast
import functools
import inspect
import itertools
import linecache
import textwrap
import typing
from typing import Final

import lantern
from .._tensor import Tensor
from ..nn.modules.module import Module
from ..ops.registry import COMPOSITES
from ..core.state import tls
from . import ir

from .types import TensorType, ClassType, FunctionType, AnyType, OptionalType, FloatType, BoolType, type_of
from .frontend_emit import (NotSupportedError, FunctionEmitter, ModuleValue, ModuleMethod, _Ctx, _CompileError,
                            _parse_annotation, error)
from .passes.dead_code_elimination import dead_code_elimination
from .language import Attribute
from .tracer import record_script_call

__all__ = ["script", "ignore", "unused", "export", "is_scripting", "Final", "NotSupportedError",
           "check_arguments", "CompilationUnit"]

def is_scripting():
    """False in eager Python; compiled code sees the constant True (torch.jit.is_scripting)."""
    return False


def ignore(fn=None, drop=False):
    """Leave `fn` as Python: scripted code calls it through the interpreter (torch.jit.ignore)."""
    if fn is None:
        return functools.partial(ignore, drop=drop)
    fn._jit_ignore = True
    if drop:
        fn._jit_unused = True
    return fn


def unused(fn):
    """Do not compile `fn`: calling it from scripted code raises (torch.jit.unused)."""
    fn._jit_unused = True
    return fn


def export(fn):
    """Compile this method of a scripted module even if forward does not call it (torch.jit.export)."""
    fn._jit_export = True
    return fn


class _FunctionRef(str):
    """A compiled (or ignored) function named in the IR: prints as its name, calls the function."""

    def __new__(cls, name, fn):
        self = super().__new__(cls, name)
        self.fn = fn
        if hasattr(fn, "graph"):
            self.graph = fn.graph
        return self

    def __call__(self, *args):
        return self.fn(*args)


# --------------------------------------------------------------------------------------------- argument checks

def _python_type_name(value):
    if isinstance(value, Tensor):
        return "Tensor"
    try:
        t = type_of(value)
        if isinstance(t, TensorType):
            return "Tensor"
        return str(t)
    except RuntimeError:
        return type(value).__name__


def _value_fits(value, t):
    if isinstance(t, AnyType):
        return True
    if isinstance(t, TensorType):
        return isinstance(value, Tensor)
    if isinstance(t, OptionalType):
        return value is None or _value_fits(value, t.getElementType())
    if isinstance(t, ClassType):
        return True
    name = str(t)
    if name == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "bool":
        return isinstance(value, bool)
    if name == "str":
        return isinstance(value, str)
    try:
        vt = type_of(value)
    except RuntimeError:
        return False
    if isinstance(value, (list, tuple, dict)) and not value:
        return type(value).__name__ == {"ListType": "list", "TupleType": "tuple", "DictType": "dict"}.get(
            type(t).__name__)
    return vt.is_subtype_of(t)


def _declaration(name, graph, skip):
    args = []
    for i, v in enumerate(graph.inputs()):
        args.append(f"{v.type()} {_arg_name(v)}")
    outs = list(graph.outputs())
    ret = str(outs[0].type()) if len(outs) == 1 else "(" + ", ".join(str(o.type()) for o in outs) + ")"
    return f"{name}({', '.join(args)}) -> {ret}"


def _arg_name(v):
    name = v.debugName()
    base, dot, suffix = name.rpartition(".")
    return base if dot and suffix.isdigit() else name


def check_arguments(name, graph, args, skip=0):
    """Raise torch's RuntimeError when `args` (the user arguments, after `skip` leading inputs such as self) do
    not fit the graph's input types: "forward() Expected a value of type 'Tensor' for argument 'x' but instead
    found type 'int'."""
    inputs = list(graph.inputs())[skip:]
    inferred = getattr(graph, "_inferred_args", None) or ()
    for pos, (v, a) in enumerate(zip(inputs, args)):
        t = v.type()
        if _value_fits(a, t):
            continue
        arg = _arg_name(v)
        shown = f"{t} (inferred)" if arg in inferred else str(t)
        note = (f"\nInferred '{arg}' to be of type 'Tensor' because it was not annotated with an explicit type."
                if arg in inferred else "")
        raise RuntimeError(f"{name}() Expected a value of type '{shown}' for argument '{arg}' but instead found "
                           f"type '{_python_type_name(a)}'.{note}\nPosition: {pos + skip}\nValue: {a!r}\n"
                           f"Declaration: {_declaration(name, graph, skip)}")


def _set_graph_meta(graph, inferred, defaults):
    try:
        graph._inferred_args = inferred
        graph._defaults = defaults
    except AttributeError:
        pass


# ------------------------------------------------------------------------------------------------- the compiler

def _source(fn):
    try:
        lines, start = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError):
        raise OSError(f"Can't get source for {fn}. TorchScript requires source access in order to carry out "
                      "compilation, make sure original .py files are available.") from None
    text = textwrap.dedent("".join(lines))
    tree = ast.parse(text)
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        raise RuntimeError("Expected a single top-level function")
    return tree.body[0], _Ctx(filename, text.splitlines(), start - 1)


def _raise(exc, ctx):
    text = exc.message
    where = ctx.describe(exc.node) if exc.node is not None else ""
    message = f"\n{text}:\n{where}" if where else text
    if exc.cls is NotSupportedError:
        raise NotSupportedError(message) from None
    raise RuntimeError(message) from None


def _class_name(obj):
    """The TorchScript name of a class or function: `__torch__.<module>.<name>` (torch's spelling: no module for
    __main__, lantern's modules as torch's)."""
    module = obj.__module__ or "__main__"  # None for a function exec'd from source text (CompilationUnit)
    prefix = "" if module == "__main__" else module.replace("lantern", "torch", 1) + "."
    return f"__torch__.{prefix}{obj.__qualname__.rpartition('<locals>.')[2]}"


class _Compiler:
    """Compiles functions (cached per function object) and modules (one per module instance)."""

    def __init__(self):
        self.functions = {}
        self.modules = {}
        self.private_attributes = {}  # id(module) -> its `_name` attributes and properties that compiled code reads

    # -- functions
    def compile_function(self, fn):
        if isinstance(fn, ScriptFunction):
            return fn
        key = id(fn)
        if key in self.functions:
            if self.functions[key] is None:
                raise RuntimeError(f"{fn.__name__}() calls itself: recursive calls aren't supported in "
                                   "TorchScript")
            return self.functions[key]
        fndef, ctx = _source(fn)
        self.functions[key] = None
        graph = self.compile_def(fn, fndef, ctx, None)
        compiled = _CompiledFunction(fndef.name, graph)
        compiled.qualified_name = _class_name(fn)
        self.functions[key] = compiled
        return compiled

    def compile_def(self, fn, fndef, ctx, self_module, self_value_holder=None):
        a = fndef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise NotSupportedError("Compiled functions can't take variable number of arguments or use "
                                    "keyword-only arguments with defaults")
        globals_ = getattr(fn, "__globals__", {})
        try:
            closure = inspect.getclosurevars(fn).nonlocals
        except (TypeError, ValueError):
            closure = {}
        graph = ir.Graph()
        emitter = FunctionEmitter(self, graph, ctx, globals_, dict(closure))
        emitter.module = self_module
        params = list(a.args)
        arg_types, inferred = [], []
        env_sugar = {}
        try:
            for i, p in enumerate(params):
                value = graph.addInput(p.arg)
                if i == 0 and self_module is not None:
                    t = ClassType(_class_name(type(self_module)))
                    value.setType(t)
                    env_sugar[p.arg] = ModuleValue(value, self_module, self)
                    arg_types.append((p.arg, t))
                    continue
                if p.annotation is None:
                    t = TensorType.get()
                    inferred.append(p.arg)
                else:
                    t = _parse_annotation(emitter.eval_annotation(p.annotation), emitter.resolve_annotation, p)
                value.setType(t)
                arg_types.append((p.arg, t))
            ret_t = None
            if fndef.returns is not None:
                ret_t = _parse_annotation(emitter.eval_annotation(fndef.returns), emitter.resolve_annotation,
                                          fndef)
            emitter.emit_function(fndef, arg_types, ret_t, env_sugar)
        except _CompileError as exc:
            _raise(exc, ctx)
        defaults = [None] * (len(params) - len(a.defaults))
        defaults += [_literal(d) for d in a.defaults]
        dead_code_elimination(graph)
        _set_graph_meta(graph, tuple(inferred), defaults)
        return graph

    def call_python(self, emitter, obj, qualname, args, kwargs, src):
        """A call to something reached through globals that is not a registry op."""
        if obj is is_scripting or getattr(obj, "__name__", "") == "is_scripting":
            return emitter.const(True)
        if getattr(obj, "_jit_unused", False):
            return self.raise_unused(emitter, getattr(obj, "__name__", "function"), src)
        if getattr(obj, "_jit_ignore", False):
            vals = [emitter.as_value(x, src) for x in args] + [emitter.as_value(x, src) for x in kwargs.values()]
            if kwargs:
                raise error("keyword arguments to an @ignore'd function aren't supported", src)
            ret = self.python_return_type(obj, emitter)
            node = emitter.emit_node("prim::CallFunction", vals, [ret],
                                     {"fn": _FunctionRef(obj.__name__, obj)}, src)
            return node.output()
        if inspect.isfunction(obj) and not (obj.__module__ or "").startswith("lantern") or isinstance(
                obj, ScriptFunction):
            callee = self.compile_function(obj)
            return self.call_script_function(emitter, callee, args, kwargs, src)
        if callable(obj) and (getattr(obj, "__module__", "") or "").startswith(("lantern", "math")):
            name = getattr(obj, "__name__", qualname.rpartition(".")[2])
            vals = [emitter.as_value(x, src) for x in args]
            kw = {k: emitter.as_value(v, src) for k, v in kwargs.items()}
            module = obj.__module__
            ret = TensorType.get()
            if module == "math":
                ret = FloatType.get()
            out = emitter.python_call(f"{module}.{name}", vals, kw, ret, src, kind=name)
            node = out.node()
            if name not in COMPOSITES:
                node.attrs.pop("op", None)
            return out
        raise error(f"Python builtin {qualname} is currently not supported in TorchScript", src)

    def python_return_type(self, fn, emitter):
        try:
            ann = inspect.signature(fn).return_annotation
        except (TypeError, ValueError):
            return TensorType.get()
        if ann is inspect.Signature.empty:
            return TensorType.get()
        return _parse_annotation(ann, emitter.resolve_annotation)

    def raise_unused(self, emitter, name, src):
        msg = emitter.const("This function was marked @torch.jit.unused" if name != "forward" else
                            "This method was marked @torch.jit.unused")
        emitter.emit_node("prim::RaiseException", [msg], [], {"exception": "RuntimeError"}, src)
        return emitter.node1("prim::Uninitialized", [], TensorType.get())

    def call_script_function(self, emitter, callee, args, kwargs, src):
        graph = callee.graph
        inputs = list(graph.inputs())
        names = [_arg_name(v) for v in inputs]
        defaults = getattr(graph, "_defaults", None) or [None] * len(inputs)
        bound = [emitter.as_value(x, src) for x in args]
        if len(bound) > len(inputs):
            raise error(f"{callee.name}() expected at most {len(inputs)} argument(s) but received {len(bound)} "
                        "argument(s)", src)
        for name in names[len(bound):]:
            i = names.index(name)
            if name in kwargs:
                bound.append(emitter.as_value(kwargs.pop(name), src))
            elif defaults[i] is not None:
                bound.append(emitter.const(defaults[i].value))
            else:
                raise error(f"{callee.name}() is missing value for argument '{name}'", src)
        if kwargs:
            raise error(f"{callee.name}() got an unexpected keyword argument '{next(iter(kwargs))}'", src)
        for v, want, name in zip(bound, inputs, names):
            emitter.coerce(v, want.type(), src, f"Expected a value of type '{{want}}' for argument '{name}' but "
                                                f"instead found type '{{got}}'.")
        ref = emitter.graph.create("prim::Constant", [], 1)
        ref.attrs["value"] = _FunctionRef(callee.qualified_name, callee)  # printed as torch prints the call
        ref.output().setType(FunctionType(callee.name))
        emitter.graph.insertNode(ref)
        out_types = [o.type() for o in graph.outputs()]
        return emitter.emit_node("prim::CallFunction", [ref.output()] + bound, out_types, src=src).output()

    # -- modules
    def compile_module(self, mod):
        if isinstance(mod, RecursiveScriptModule):
            return mod
        if id(mod) in self.modules:
            return self.modules[id(mod)][0]
        subs = {}
        for name, child in mod._modules.items():
            if child is not None:
                subs[name] = self.compile_module(child)
        params = {k: v for k, v in mod._parameters.items() if v is not None}
        buffers = {k: v for k, v in mod._buffers.items() if v is not None}
        attrs = _plain_attributes(mod, subs)
        methods = {}
        self.modules[id(mod)] = (None, methods, mod)
        names = []
        cls = type(mod)
        if getattr(cls.forward, "__code__", None) is not getattr(Module.forward, "__code__", None):
            names.append("forward")
        for name in dir(cls):
            fn = getattr(cls, name, None)
            if getattr(fn, "_jit_export", False) and name not in names:
                names.append(name)
        for name in names:
            self.compile_method(mod, name)
        for k in self.private_attributes.pop(id(mod), ()):
            attrs[k] = getattr(mod, k)  # a property's value as the module is compiled (RNNBase._flat_weights)
        scripted = RecursiveScriptModule._construct(cls.__name__, params, buffers, subs, attrs, methods,
                                                    training=mod.training)
        self.modules[id(mod)] = (scripted, methods, mod)
        return scripted

    def compile_method(self, mod, name):
        methods = self.modules[id(mod)][1]
        if name in methods:
            return methods[name]
        fn = getattr(type(mod), name)
        if getattr(fn, "_jit_unused", False):
            methods[name] = self.unused_graph(mod, fn, name)
            return methods[name]
        fndef, ctx = _source(fn)
        methods[name] = None  # recursion guard
        graph = self.compile_def(fn, fndef, ctx, mod)
        methods[name] = graph
        return graph

    def unused_graph(self, mod, fn, name):
        graph = ir.Graph()
        sig = list(inspect.signature(fn).parameters)
        first = graph.addInput(sig[0])
        first.setType(ClassType(_class_name(type(mod))))
        for p in sig[1:]:
            graph.addInput(p).setType(TensorType.get())
        emitter = FunctionEmitter(self, graph, None, {}, {})
        out = self.raise_unused(emitter, "forward", None)
        graph.registerOutput(out)
        return graph

    def module_attribute(self, emitter, mv, name, src):
        mod = mv.module
        if name in mod._parameters or name in mod._buffers:
            value = mod._parameters.get(name, mod._buffers.get(name))
            if value is None:
                return emitter.const(None)
            return _named(emitter.node1("prim::GetAttr", [mv.value], TensorType.get(), {"name": name}, src), name)
        if name in mod._modules:
            return self.submodule_value(emitter, mv, name, src)
        if name == "training":
            return emitter.node1("prim::GetAttr", [mv.value], BoolType.get(), {"name": name}, src)
        cls_attr = getattr(type(mod), name, None)
        if isinstance(inspect.getattr_static(type(mod), name, None), staticmethod):
            return emitter.py_value(cls_attr, name)  # a function the class holds (AvgPool2d._pool = F.avg_pool2d)
        if inspect.isfunction(cls_attr):
            return ModuleMethod(mv, name)
        constant = _constant_attribute(mod, name)
        if constant is not None:
            return emitter.const(constant.value)
        if inspect.isfunction(vars(mod).get(name)):  # a function the module holds (TransformerEncoderLayer's
            return emitter.py_value(vars(mod)[name], name)  # activation = F.relu): compiled where it is called
        is_property = isinstance(inspect.getattr_static(type(mod), name, None), property)
        if isinstance(vars(mod).get(name), Attribute):
            t = _parse_annotation(vars(mod)[name].type, emitter.resolve_annotation, src)
            return emitter.node1("prim::GetAttr", [mv.value], t, {"name": name}, src)
        if name in vars(mod) or is_property:
            value = getattr(mod, name)
            try:
                t = type_of(value)
            except RuntimeError:
                raise error(f"Module '{type(mod).__name__}' has no attribute '{name}' (its type is not "
                            "supported in TorchScript)", src) from None
            if isinstance(t, TensorType):
                t = TensorType.get()
            if name.startswith("_") or is_property:
                self.private_attributes.setdefault(id(mod), set()).add(name)
            return emitter.node1("prim::GetAttr", [mv.value], t, {"name": name}, src)
        raise error(f"Module '{type(mod).__name__}' has no attribute '{name}'", src)

    def submodule_value(self, emitter, mv, name, src):
        """`self.<name>` for a submodule: compiled, read with prim::GetAttr (marked when the attribute is declared
        with a jit.interface type, so that calls through it stay calls and another module may be assigned)."""
        child = mv.module._modules[name]
        if child is None:
            return emitter.const(None)
        self.compile_module(child)
        attrs = {"name": name}
        declared = vars(type(mv.module)).get("__annotations__", {}).get(name)
        if getattr(declared, "__torch_script_interface__", None):
            attrs["interface"] = declared.__torch_script_interface__
        v = emitter.node1("prim::GetAttr", [mv.value], ClassType(_class_name(type(child))), attrs, src)
        return ModuleValue(_named(v, name), child, self)

    def module_children(self, emitter, mv, src):
        items = []
        for name, child in mv.module._modules.items():
            if child is None:
                continue
            self.compile_module(child)
            v = emitter.node1("prim::GetAttr", [mv.value], ClassType(_class_name(type(child))), {"name": name}, src)
            items.append(ModuleValue(v, child, self))
        return items

    def call_module_method(self, emitter, mv, name, args, kwargs, src):
        mod = mv.module
        fn = getattr(type(mod), name, None)
        if fn is None:
            raise error(f"Module '{type(mod).__name__}' has no method '{name}'", src)
        if getattr(fn, "_jit_unused", False):
            return self.raise_unused(emitter, "forward", src)
        vals = [emitter.as_value(x, src) for x in args]
        if getattr(fn, "_jit_ignore", False):
            ret = self.python_return_type(fn, emitter)
            return emitter.emit_node("prim::CallFunction", [mv.value] + vals, [ret],
                                     {"fn": _FunctionRef(fn.__name__, fn)}, src).output()
        if id(mod) not in self.modules:
            self.compile_module(mod)
        graph = self.compile_method(mod, name)
        if graph is None:
            raise error(f"recursive call of method '{name}' is not supported", src)
        inputs = list(graph.inputs())[1:]
        names = [_arg_name(v) for v in inputs]
        defaults = getattr(graph, "_defaults", None) or [None] * (len(inputs) + 1)
        for i, n in enumerate(names[len(vals):], start=len(vals)):
            if n in kwargs:
                vals.append(emitter.as_value(kwargs.pop(n), src))
            elif defaults[i + 1] is not None:
                vals.append(emitter.const(defaults[i + 1].value))
            else:
                raise error(f"{name}() is missing value for argument '{n}'", src)
        out_types = [o.type() for o in graph.outputs()]
        return emitter.emit_node("prim::CallMethod", [mv.value] + vals, out_types, {"name": name}, src).output()


_CONSTANT_TYPES = (bool, int, float, str, type(None))


def _plain_attributes(mod, submodules):
    """The module's public attributes that TorchScript can type (an Attribute(value, type) gives its value), which
    the scripted module keeps as they are."""
    attrs = {}
    for k, v in vars(mod).items():
        if k.startswith("_") or k == "training" or k in submodules:
            continue
        if isinstance(v, Attribute):
            attrs[k] = v.value
            continue
        try:
            type_of(v)
        except RuntimeError:
            continue
        attrs[k] = v
    return attrs


def _constant_attribute(mod, name):
    """A module attribute compiled as a constant (a _Default holding it), else None: names listed in the class's
    `__constants__` (torch's rule), and plain values set on the class itself (`Conv2d._dims = 2`)."""
    if name in vars(mod):
        if name not in getattr(type(mod), "__constants__", ()):
            return None
        value = vars(mod)[name]
    elif hasattr(type(mod), name):
        value = getattr(type(mod), name)
    else:
        return None
    items = value if isinstance(value, tuple) else (value,)
    if not all(isinstance(v, _CONSTANT_TYPES) for v in items):
        return None
    return _Default(value)


def _named(value, name):
    value.setDebugName(name)
    return value


class _Default:
    def __init__(self, value):
        self.value = value


def _literal(node):
    try:
        return _Default(ast.literal_eval(node))
    except ValueError:
        raise NotSupportedError("default arguments must be literals in lantern's script") from None


from .module import RecursiveScriptModule, ScriptFunction as _ScriptFunctionBase, ScriptFunction  # noqa: E402


class _CompiledFunction(_ScriptFunctionBase):
    """A scripted function: a ScriptFunction that checks its arguments and applies its defaults."""

    def __call__(self, *args, **kwargs):
        inputs = list(self.graph.inputs())
        defaults = getattr(self.graph, "_defaults", None) or []
        names = [_arg_name(v) for v in inputs]
        bound = list(args)
        for i, name in enumerate(names[len(bound):], start=len(bound)):
            if name in kwargs:
                bound.append(kwargs.pop(name))
            elif i < len(defaults) and defaults[i] is not None:
                bound.append(defaults[i].value)
            else:
                raise RuntimeError(f"{self.name}() is missing value for argument '{name}'. Declaration: "
                                   f"{_declaration(self.name, self.graph, 0)}")
        if kwargs:
            raise RuntimeError(f"{self.name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
        check_arguments(self.name, self.graph, bound)
        if tls.tracer is not None:  # a trace records the call itself, keeping the function's control flow
            return record_script_call(self, bound)
        return super().__call__(*bound)


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Compile a function or nn.Module to TorchScript (torch.jit.script): a ScriptFunction or a
    RecursiveScriptModule. Compile errors raise RuntimeError (NotSupportedError for unsupported syntax) naming
    the source line."""
    if isinstance(obj, (ScriptFunction, RecursiveScriptModule)):
        return obj
    compiler = _Compiler()
    if isinstance(obj, Module):
        return compiler.compile_module(obj)
    if inspect.isclass(obj):
        raise NotSupportedError("scripting classes is not supported by lantern's script")
    if getattr(obj, "__name__", None) == "<lambda>":
        raise RuntimeError("Expected a single top-level function")
    if not inspect.isfunction(obj):
        raise RuntimeError(f"script() expects a function or an nn.Module instance, not {type(obj).__name__}")
    return compiler.compile_function(obj)


_units = itertools.count()


class CompilationUnit:
    """Script functions from source text (torch.jit.CompilationUnit): each `def` becomes an attribute.

    The text sees `torch` (lantern), `Tensor` and the typing names; it is kept in linecache so errors can quote it.
    """

    def __init__(self, lang=None, _frames_up=0):
        self._functions = {}
        if lang is None:
            return
        filename = f"<lantern.jit.CompilationUnit {next(_units)}>"
        lines = textwrap.dedent(lang).splitlines(True)
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
        namespace = {name: getattr(typing, name) for name in ("List", "Tuple", "Dict", "Optional", "Any")}
        namespace.update(torch=lantern, Tensor=lantern.Tensor)
        exec(compile("".join(lines), filename, "exec"), namespace)
        for name, fn in namespace.items():
            if inspect.isfunction(fn) and fn.__code__.co_filename == filename:
                self._functions[name] = script(fn)

    def __getattr__(self, name):
        functions = self.__dict__.get("_functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(f"'CompilationUnit' has no function '{name}'")
