"""What a TorchScript archive may reference: lantern.jit.load checks every graph with this before anything runs.

An archive is data, so loading one must never run Python that the file names. The IR's nodes are checked against
what the interpreter can do with them:
  - node kinds: registered operators (`aten::<op>` of lantern's op registry), the builtins the interpreter defines
    (list/dict/str operations, control flow, constants), and the few `prim::` kinds below. Anything else (fusion
    groups with generated code, unknown kinds) is refused.
  - calls of Python-level functions (the script frontend's `python` references and the interpreter's by-name
    fallback `aten::<name>`): only lantern's tensor functions -- public functions of `lantern`,
    `lantern.nn.functional` and `lantern.linalg` that are defined in lantern's operator modules (`_OP_MODULES`:
    not save/load, seeds, default dtypes or thread counts) --, public Tensor methods and properties, and Python's
    `math` functions. Names are looked up as attributes of those namespaces; nothing is imported.
  - str.format (aten::format) only with a constant format string whose fields are positions, so '{0.__class__}'
    cannot walk attributes.
  - attributes: prim::GetAttr / SetAttr / CallMethod only on a module whose class the archive declares (the method's
    `self`, or a submodule reached from it), and only names that class has; other values have no attributes in
    TorchScript, so `__globals__`-style walks are impossible.
  - member names: identifiers, not dunder names, and not the module's own machinery (`_parameters`, `forward`'s
    bookkeeping, `training` as anything but a bool).
A refusal is a RuntimeError naming the node, raised by lantern.jit.load.

>>> from lantern.jit.ir import parse_ir
>>> check_graph(parse_ir('''graph(%x : Tensor):
...   %y : Tensor = aten::relu(%x)
...   return (%y)'''), {}, None)
>>> check_graph(parse_ir('''graph(%x : Tensor):
...   %y : Tensor = aten::save(%x)
...   return (%y)'''), {}, None)
Traceback (most recent call last):
  ...
RuntimeError: lantern.jit.load: the archive calls aten::save, which is neither a registered operator nor a lantern tensor function (node: %y : Tensor = aten::save(%x))
"""
import importlib
import inspect
import math
import string
import sys

import lantern
from .._tensor import Tensor
from ..ops.registry import COMPOSITES, REGISTRY
from .frontend import _FunctionRef
from .frontend_emit import _PythonRef
from .interpreter import _PYTHON_OPS
from .module import RecursiveScriptModule, ScriptFunction

__all__ = ["ClassLayout", "check_graph", "check_ir_layout", "check_member_name", "allowed_python"]

_OP_NAMESPACES = ("lantern", "lantern.nn.functional", "lantern.linalg")
_OP_MODULES = ("lantern.ops.", "lantern._functions", "lantern._construct", "lantern.nn.functional", "lantern.linalg",
               "lantern.core.promotion", "lantern.nn.modules.rnn")  # the last for lantern.lstm & co. (aten::lstm)

# prim:: kinds the interpreter runs that call nothing named by the file (the rest of its builtins are in _PYTHON_OPS)
_PRIM_KINDS = {"prim::Constant", "prim::If", "prim::Loop", "prim::TupleUnpack", "prim::ListUnpack",
               "prim::ConstantChunk", "prim::RaiseException", "prim::isinstance", "prim::GetAttr", "prim::SetAttr",
               "prim::CallMethod", "prim::CallFunction"}


class ClassLayout:
    """One TorchScript class of the archive: its data members, its submodules (name -> class) and its methods."""

    def __init__(self, qualname, data, children, methods):
        self.qualname = qualname
        self.data = set(data) | {"training"}
        self.children = dict(children)
        self.methods = set(methods)


def _fail(message, node=None):
    where = f" (node: {str(node).strip().splitlines()[0]})" if node is not None else ""
    raise RuntimeError(f"lantern.jit.load: {message}{where}")


def check_member_name(name, what):
    """A parameter/buffer/attribute/submodule/method name the archive gives a module: a method's is an identifier;
    a member's is any name nn.Module accepts (Sequential's '0', a ModuleDict key; no '.'); neither may start with
    '__' nor replace the module's own machinery."""
    valid = name.isidentifier() if what == "method" else (name != "" and "." not in name)
    if type(name) is not str or not valid or name.startswith("__"):
        _fail(f"invalid {what} name {name!r:.60} in the archive")
    if what != "method" and (name in _module_machinery() or hasattr(RecursiveScriptModule, name)):
        _fail(f"the archive's {what} name {name!r} would replace the module's own attribute of that name")
    return name


_MACHINERY = []


def _module_machinery():
    """The instance attributes every loaded module has before its state is set (nn.Module's dicts, the compiled
    methods table, original_name, training)."""
    if not _MACHINERY:
        _MACHINERY.append(frozenset(vars(RecursiveScriptModule._construct("M", {}, {}, {}, {}, {}))))
    return _MACHINERY[0]


def check_ir_layout(ir):
    """code/__torch__.ir's JSON has the shape lantern.jit.save writes (strings, lists, dicts where expected)."""
    classes = ir.get("classes")
    if not isinstance(classes, dict):
        _fail("code/__torch__.ir has no 'classes' table")
    for qualname, info in classes.items():
        if not isinstance(info, dict) or not isinstance(info.get("original_name"), str):
            _fail(f"class {qualname!r:.60} in code/__torch__.ir is malformed")
        for key in ("parameters", "buffers"):
            if not isinstance(info.get(key), list):
                _fail(f"class {qualname!r:.60} in code/__torch__.ir has no {key} list")
            for name in info[key]:
                check_member_name(name, key[:-1])
        methods = info.get("methods")
        if not isinstance(methods, dict):
            _fail(f"class {qualname!r:.60} in code/__torch__.ir has no methods table")
        for name, record in methods.items():
            check_member_name(name, "method")
            _check_record(record)


def _check_record(record):
    if not isinstance(record, dict) or not isinstance(record.get("ir"), str) or \
            not isinstance(record.get("refs"), list):
        _fail("a graph record of code/__torch__.ir is malformed")
    defaults = record.get("defaults", {})
    if type(defaults) is not dict or not all(type(k) is str and type(v) is str and len(v) < 1000
                                             for k, v in defaults.items()):
        _fail("the argument defaults of a graph record of code/__torch__.ir are malformed")
    for ref in record["refs"]:
        if not isinstance(ref, dict) or type(ref.get("node")) is not int or not isinstance(ref.get("attribute"), str):
            _fail(f"a reference of code/__torch__.ir is malformed: {ref!r:.80}")
        if ref.get("absent"):
            continue
        if "python" in ref:
            if not isinstance(ref["python"], str) or not isinstance(ref.get("kwnames"), list) or \
                    not all(isinstance(k, str) for k in ref["kwnames"]) or type(ref.get("attr")) is not bool:
                _fail(f"a Python reference of code/__torch__.ir is malformed: {ref!r:.80}")
            allowed_python(ref["python"], ref["attr"])
        elif isinstance(ref.get("function"), str):
            _check_record(ref)
        else:
            _fail(f"a reference of code/__torch__.ir is malformed: {ref!r:.80}")


def allowed_python(qualname, attr=False):
    """The function `qualname` names if an archive may call it (see the module docstring), else RuntimeError."""
    module, _, name = qualname.rpartition(".")
    if not name.isidentifier() or name.startswith("_"):
        _fail(f"the archive calls {qualname!r:.80}, which is not a public function")
    if module == "Tensor":
        if not hasattr(Tensor, name):
            _fail(f"the archive calls {qualname!r:.80}, which is not a Tensor method or property")
        return getattr(Tensor, name)
    if attr:
        _fail(f"the archive reads attribute {qualname!r:.80}; only Tensor properties may be read")
    if module == "math":
        fn = getattr(math, name, None)
        if callable(fn):
            return fn
        _fail(f"the archive calls {qualname!r:.80}, which is not a math function")
    fn = getattr(sys.modules.get(module), name, None)  # what the interpreter will call: only modules already loaded
    if name not in _tensor_functions() or not module.startswith(_OP_MODULES) or not callable(fn) or \
            isinstance(fn, type) or getattr(fn, "__module__", None) != module:
        _fail(f"the archive calls {qualname!r:.80}, which is not a lantern tensor function")
    return fn


_FUNCTIONS = {}


def _unwrapped(function):
    return getattr(function, "__wrapped__", function)


def _tensor_functions():
    """name -> function for lantern's tensor functions: the public callables of _OP_NAMESPACES defined in
    _OP_MODULES (a function and its alias in another namespace are the same object)."""
    if not _FUNCTIONS:
        for space in _OP_NAMESPACES:
            namespace = importlib.import_module(space)  # lantern's own modules, imported by lantern already
            for name in dir(namespace):
                fn = getattr(namespace, name)
                home = getattr(fn, "__module__", None) or ""
                if not name.startswith("_") and callable(fn) and not inspect.isclass(fn) and \
                        home.startswith(_OP_MODULES):
                    _FUNCTIONS.setdefault(name, fn)
    return _FUNCTIONS


def _registered(name):
    return name in REGISTRY or name in COMPOSITES or name.partition(".")[0] in COMPOSITES


def _interpreter_builtins():
    return _PYTHON_OPS


def check_graph(graph, layouts, self_class):
    """Refuse (RuntimeError) a graph that references anything but registered operators, the interpreter's builtins,
    allowed functions and the declared members of archive classes. `layouts`: qualname -> ClassLayout;
    `self_class`: the class whose method this is (its input 0 is that module), None for a free function."""
    classes = {}
    inputs = list(graph.inputs())
    if self_class is not None:
        if not inputs:
            _fail(f"a method of {self_class} has no self input")
        classes[id(inputs[0])] = layouts[self_class]
    producers = {}
    for node in _nodes(graph.block()):
        _check_node(node, classes, layouts, producers)
        for v in node.outputs():
            producers[id(v)] = node


def _nodes(block):
    for node in block.nodes():
        yield node
        for sub in node.blocks():
            yield from _nodes(sub)


def _check_node(node, classes, layouts, producers):
    kind = node.kind()
    if "Subgraph" in node.attrs:
        _fail(f"{kind} carries a subgraph, which archives written by lantern.jit.save never hold", node)
    for name, value in node.attrs.items():
        if isinstance(value, str) and type(value) not in (str, _PythonRef, _FunctionRef):
            _fail(f"attribute {name} of {kind} is not data", node)
    if kind == "aten::format":
        return _check_format(node, producers)
    if kind.startswith("aten::"):
        return _check_aten(node, kind)
    if kind not in _PRIM_KINDS and kind not in _interpreter_builtins():
        _fail(f"the archive uses node kind {kind!r:.60}, which lantern's interpreter does not define", node)
    if kind in ("prim::GetAttr", "prim::SetAttr", "prim::CallMethod"):
        return _check_member_access(node, kind, classes, layouts)
    if kind == "prim::CallFunction":
        return _check_call(node, producers)
    if kind == "prim::Constant":
        value = node.attrs.get("value")
        if isinstance(value, _FunctionRef) and not _is_compiled(value):
            _fail("a function constant must be compiled code", node)


def _check_format(node, producers):
    """str.format reaches attributes through its fields ('{0.__class__.__init__.__globals__}'): the format string
    must be a constant whose fields name positions only, as TorchScript's '{}'."""
    inputs = node.inputs()
    producer = producers.get(id(inputs[0])) if inputs else None
    text = producer.attrs.get("value") if producer is not None and producer.kind() == "prim::Constant" else None
    if type(text) is not str:
        _fail("aten::format needs a constant format string", node)
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(text) if field is not None]
    except ValueError:
        _fail("aten::format has a malformed format string", node)
    if any(field and not field.isdigit() for field in fields):
        _fail("aten::format's fields may only be '{}' or '{<position>}'", node)


def _check_aten(node, kind):
    name = kind[len("aten::"):]
    op = node.attrs.get("op")
    if op is not None and type(op) is not str:
        _fail(f"{kind} names an operator that is not a string", node)
    python = node.attrs.get("python")
    if python is not None:
        if type(python) is not str and type(python) is not _PythonRef:
            _fail(f"{kind} has a python attribute that is not a name", node)
        allowed_python(str(python))
        if not str(python).startswith("Tensor.") and not callable(getattr(lantern, name, None)):
            return  # the interpreter calls this checked function, as lantern has no `lantern.<name>`
    if (op is not None and _registered(op)) or kind in _interpreter_builtins():
        return  # an unregistered `op` is ignored by the interpreter, which then goes by the kind's name
    if not name.isidentifier() or name.startswith("_"):
        _fail(f"the archive calls {kind!r:.60}, which is not a public name", node)
    function = getattr(lantern, name, None)  # what the interpreter's by-name fallback calls, else a method
    # (a __torch_function__ wrapper stands in for the function while a Tensor subclass is alive: compare what it wraps)
    allowed = (_unwrapped(_tensor_functions().get(name)) is _unwrapped(function) if callable(function)
               else hasattr(Tensor, name))
    if not allowed:
        _fail(f"the archive calls {kind}, which is neither a registered operator nor a lantern tensor function", node)


def _check_member_access(node, kind, classes, layouts):
    name = node.attrs.get("name")
    inputs = node.inputs()
    layout = classes.get(id(inputs[0])) if inputs else None
    if layout is None:
        _fail(f"{kind} is only allowed on a module of a class the archive declares (self or a submodule)", node)
    if type(name) is not str:
        _fail(f"{kind} has no attribute name", node)
    if kind == "prim::CallMethod":
        if name not in layout.methods:
            _fail(f"class {layout.qualname} has no method {name!r:.60}", node)
        return
    if kind == "prim::SetAttr":
        if name not in layout.data:
            _fail(f"class {layout.qualname} has no attribute {name!r:.60} that may be assigned", node)
        return
    if name in layout.children:
        classes[id(node.output())] = layouts[layout.children[name]]
    elif name not in layout.data and name not in layout.methods:
        _fail(f"class {layout.qualname} has no attribute {name!r:.60}", node)


def _check_call(node, producers):
    target = node.attrs.get("fn", node.attrs.get("function"))
    if target is not None:
        if type(target) is _PythonRef or (type(target) is _FunctionRef and _is_compiled(target)):
            return
        _fail("prim::CallFunction calls something that is neither compiled code nor an allowed function", node)
    inputs = node.inputs()
    producer = producers.get(id(inputs[0])) if inputs else None
    callee = producer.attrs.get("value") if producer is not None and producer.kind() == "prim::Constant" else None
    if type(callee) is not _FunctionRef or not _is_compiled(callee):
        _fail("prim::CallFunction's callee must be a compiled function constant", node)


def _is_compiled(ref):
    return type(ref.fn) is ScriptFunction
