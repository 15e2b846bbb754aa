"""TorchScript archives: `save(m, f)` writes a compiled module as torch.jit.save lays it out, `load(f)` reads it back.

The zip holds, under `archive/` (or the file's stem when saving to a path):
  code/__torch__.py   the module classes as readable TorchScript-like Python (what `.code` shows), for people;
                      as in torch, class `__torch__.a.b.C` is written to code/__torch__/a/b.py
  code/__torch__.ir   how load rebuilds the classes: JSON with, per class, its parameter and buffer names and each
                      method's IR text (`str(graph)`, read back with `lantern.jit.ir.parse_ir`), plus the
                      functions its nodes call (lantern functions by name, compiled functions as IR)
  data.pkl            the module tree: each module pickled as `__torch__.<Class>` with its state (parameters,
                      buffers, attributes, `training`, submodules) in a dict, tensors as torch's storage records
  data/<key>          the storages of data.pkl (written by lantern.serialization's machinery)
  constants.pkl       the tuple of tensor constants the graphs use (`CONSTANTS.c0` in code), storages in constants/
  extra/<name>        the `_extra_files`
  version (.data/version from 6 on), byteorder, .data/serialization_id
Loading needs no user class: the result is a `RecursiveScriptModule` with the same state and methods. Archives
written by torch.jit.save carry TorchScript source instead of IR, which lantern cannot compile: loading one raises
a RuntimeError that says so.

>>> import io, lantern
>>> from lantern.jit.ir import parse_ir
>>> from lantern.jit.module import RecursiveScriptModule
>>> g = parse_ir('''graph(%self : __torch__.Lin, %x : Tensor):
...   %w : Tensor = prim::GetAttr[name="weight"](%self)
...   %y : Tensor = aten::mul(%x, %w)
...   return (%y)''')
>>> m = RecursiveScriptModule._construct("Lin", {"weight": lantern.nn.Parameter(lantern.ones(2))}, {}, {}, {},
...                                      {"forward": g})
>>> buf = io.BytesIO()
>>> save(m, buf, _extra_files={"note.txt": "hi"})
>>> _ = buf.seek(0)
>>> extra = {"note.txt": ""}
>>> loaded = load(buf, _extra_files=extra)
>>> loaded, loaded.weight, extra
(RecursiveScriptModule(original_name=Lin), Parameter containing:
tensor([1., 1.], requires_grad=True), {'note.txt': b'hi'})
"""
import ast
import copyreg
import io
import json
import os
import pathlib
import pickle
import random
import re
import sys
import zipfile

from .. import serialization as _ser
from ..core.tensor_impl import TensorImpl
from ..nn.parameter import Parameter
from ..ops.registry import REGISTRY
from .code import python_code
from .frontend_emit import _PythonRef
from .ir import parse_ir
from .types import ClassType, DtypeType, ListType, dtype_from_index, type_of

__all__ = ["save", "load"]

_IR_FORMAT = 1
_CONSTANT_PREFIX = "CONSTANTS.c"


# ---- the module tree as data.pkl sees it --------------------------------------------------------------------------

class _Object:
    """A pickled TorchScript object: its class is `__torch__.<name>`, its state a dict (NEWOBJ + BUILD)."""

    def __init__(self, state=None):
        self.state = state

    def __setstate__(self, state):
        self.state = state


def _record_class(qualname):
    """A stand-in class spelled `qualname` in data.pkl ('__torch__.M' -> GLOBAL '__torch__ M')."""
    module, _, name = qualname.rpartition(".")
    return type(name, (_Object,), {"_qualname": qualname, "__module__": module})


# ---- typed lists: torch keeps List[int] / List[float] / List[bool] / List[Tensor] unboxed, so its archives build
# them with torch.jit._pickle.build_intlist(...) & co.; a plain pickled list would reach torch's ops as a generic list

def _list_builder(qualname, element_check):
    def build(items):
        """Rebuild a typed list from an archive: only a list whose elements all pass the element check."""
        if type(items) is not list or not all(element_check(x) for x in items):
            raise pickle.UnpicklingError(f"{qualname} expects a list of its element type")
        return items
    build._qualname = qualname
    return build


def _is_tensor(x):
    return isinstance(x, TensorImpl)


_LIST_BUILDERS = {element: _list_builder(f"torch.jit._pickle.{name}", check) for element, name, check in (
    ("int", "build_intlist", lambda x: type(x) is int),
    ("float", "build_doublelist", lambda x: type(x) is float),
    ("bool", "build_boollist", lambda x: type(x) is bool),
    ("Tensor", "build_tensorlist", _is_tensor))}


class _TypedList:
    """A list attribute of one of the unboxed element types, pickled as `build_<type>list(items)`."""

    def __init__(self, element, items):
        self.builder, self.items = _LIST_BUILDERS[element], items


def _typed_list_or_value(value, plain):
    """`value`, or a _TypedList for it when torch keeps such a list unboxed (List[int], ...); a parameter in a
    List[Tensor] is written as the module's plain tensor for it (`plain`: id(parameter) -> that tensor)."""
    if type(value) is not list or not value:
        return value
    try:
        t = type_of(value)
    except RuntimeError:
        return value
    element = t.getElementType().annotation_str() if isinstance(t, ListType) else None
    if element == "Tensor":
        value = [plain[id(x)] if id(x) in plain else _plain(x) if isinstance(x, Parameter) else x for x in value]
    return _TypedList(element, value) if element in _LIST_BUILDERS else value


class _ScriptPickler(_ser._TorchPickler):
    """lantern.save's pickler, also writing `__torch__` objects and typed lists as torch.jit.save does."""

    def reducer_override(self, obj):
        if isinstance(obj, _Object):
            return (copyreg.__newobj__, (type(obj),), obj.state)
        if isinstance(obj, _TypedList):
            return (obj.builder, (obj.items,))
        return super().reducer_override(obj)

    def save_global(self, obj, name=None):
        qualname = getattr(obj, "_qualname", None)
        if qualname is None or not (isinstance(obj, type) and issubclass(obj, _Object) or
                                    obj in _LIST_BUILDERS.values()):
            return super().save_global(obj, name)
        module, _, name = qualname.rpartition(".")
        self.write(pickle.GLOBAL + module.encode() + b"\n" + name.encode() + b"\n")
        self.memoize(obj)


# ---- save -----------------------------------------------------------------------------------------------------------

class _ConstantName(str):
    """'CONSTANTS.c<i>' standing for a tensor constant: the IR prints it as a string, the saved code as a name."""


class _Classes:
    """Gives each distinct module layout a class name (torch's mangling: '__torch__.___torch_mangle_1.Linear')."""

    def __init__(self):
        self.by_layout = {}   # layout -> qualname
        self.info = {}        # qualname -> what code/__torch__.ir stores
        self.code = {}        # code file -> readable sources of the classes it holds
        self.constants = []   # tensor constants, shared across every graph
        self.functions = set()  # qualified names of the compiled functions written to the code files
        self.version = int(_ser._FORMAT_VERSION)  # raised to the newest operator version a graph uses

    def class_of(self, m, children):
        params = list(m._parameters)
        buffers = list(m._buffers)
        attrs = list(m.__dict__.get("_attributes", ()))
        layout = (m.original_name, tuple((name, id(g)) for name, g in m._methods.items()), tuple(params),
                  tuple(buffers), tuple(attrs), tuple(children.items()))
        qualname = self.by_layout.get(layout)
        if qualname is not None:
            return qualname
        qualname = _self_type_name(m) or f"__torch__.{_identifier(m.original_name)}"
        if qualname in self.info:
            module, _, name = qualname.rpartition(".")
            qualname = f"{module}.___torch_mangle_{len(self.info)}.{name}"
        self.by_layout[layout] = qualname
        graphs = {name: _with_class_names(graph, qualname) for name, graph in m._methods.items()}
        for graph in graphs.values():
            self._add_functions(graph)
        self.info[qualname] = {"original_name": m.original_name, "parameters": params, "buffers": buffers,
                               "methods": {name: self.encode(g, copy=False) for name, g in graphs.items()}}
        module = qualname.rpartition(".")[0]
        self.code.setdefault("code/" + module.replace(".", "/") + ".py", []).append(
            self._class_source(m, qualname, children, graphs))
        return qualname

    def _add_functions(self, graph):
        """Write the compiled functions `graph` calls (and those they call) as `def`s in the code file of their
        module, where torch.jit.load finds the `__torch__.<module>.<name>(...)` the calls are printed as."""
        for node in _all_nodes(graph.block()):
            ref = node.attrs.get("value") if node.kind() == "prim::Constant" else None
            fn = getattr(ref, "fn", None)
            if getattr(fn, "graph", None) is None or str(ref) in self.functions:
                continue
            self.functions.add(str(ref))
            module, _, name = str(ref).rpartition(".")
            self.code.setdefault("code/" + module.replace(".", "/") + ".py", []).append(python_code(fn.graph, name))
            self._add_functions(fn.graph)

    def encode(self, graph, copy=True):
        """{'ir': the graph's text, 'refs': what the text cannot hold}. Tensor constants become the string
        'CONSTANTS.c<i>' (the tensors go to constants.pkl); the script frontend's function references (node
        attributes that call a lantern function or another compiled function) are listed in 'refs'."""
        g = _with_class_names(graph, None) if copy else graph
        refs = []
        for index, node in enumerate(_all_nodes(g.block())):
            self.version = max(self.version, _OPERATOR_VERSIONS.get(node.kind(), 0))
            for attr, value in list(node.attrs.items()):
                if node.kind() == "prim::Constant" and attr == "value" and isinstance(value, TensorImpl):
                    node.attrs[attr] = _ConstantName(f"{_CONSTANT_PREFIX}{self._constant_index(value)}")
                elif isinstance(value, str) and type(value) is not str:
                    refs.append({"node": index, "attribute": attr, **self._encode_ref(value)})
            if node.kind().startswith("aten::") and "op" not in node.attrs:
                refs.append({"node": index, "attribute": "op", "absent": True})  # parse_ir would add one
        record = {"ir": str(g), "refs": refs}
        defaults = getattr(graph, "_defaults", None)
        if defaults:  # argument name -> its default as a Python literal
            from .frontend import _arg_name  # cycle: jit.frontend -> jit.module -> jit.serialization
            record["defaults"] = {_arg_name(v): repr(d.value) for v, d in zip(graph.inputs(), defaults)
                                  if d is not None}
        return record

    def _constant_index(self, value):
        for i, c in enumerate(self.constants):
            if c is value:
                return i
        self.constants.append(value)
        return len(self.constants) - 1

    def _encode_ref(self, ref):
        if hasattr(ref, "kwnames"):  # a lantern function called from script (frontend_emit._PythonRef)
            return {"python": str(ref), "kwnames": list(ref.kwnames), "attr": bool(getattr(ref, "attr", False))}
        fn = getattr(ref, "fn", None)  # a compiled function called from script (frontend._FunctionRef)
        if getattr(fn, "graph", None) is not None:
            return {"function": str(ref), **self.encode(fn.graph)}
        raise NotImplementedError(f"lantern.jit.save cannot store a call to the Python function {ref} (an "
                                  "@ignore'd function): only compiled code and lantern functions can be saved")

    @staticmethod
    def _class_source(m, qualname, children, graphs):
        lines = [f"class {qualname.rpartition('.')[2]}(Module):"]
        lines.append("  __parameters__ = [" + "".join(f'"{n}", ' for n in m._parameters) + "]")
        lines.append("  __buffers__ = [" + "".join(f'"{n}", ' for n in m._buffers) + "]")
        for name in list(m._parameters) + list(m._buffers):
            lines.append(_declaration(name, "Tensor"))
        lines.append("  training : bool")
        for name in m.__dict__.get("_attributes", ()):
            lines.append(_declaration(name, _annotation_of(getattr(m, name))))
        for name, child in children.items():
            lines.append(_declaration(name, child))
        for name, graph in graphs.items():
            for line in python_code(graph, name, annotate_self=True).splitlines():
                lines.append("  " + line)
        return "\n".join(lines) + "\n"


# the file format version from which torch reads an op with its current schema: an older file has torch rewrite the
# call as the op was then (aten::gelu without `approximate`; aten::div of integers rounding down)
_OPERATOR_VERSIONS = {"aten::div": 4, "aten::div_": 4, "aten::full": 5, "aten::linspace": 8, "aten::logspace": 9,
                      "aten::gelu": 10, "aten::gelu_backward": 10}


def _version_record(version):
    """The file format version as torch writes it: `version` up to 5, `.data/version` from 6 on."""
    return ("version" if version <= 5 else ".data/version", f"{version}\n".encode())


def _declaration(name, annotation):
    """A class attribute's declaration in saved code: `name : T`, or for a name that is no identifier (a
    Sequential's "0") `__annotations__["0"] = T`, as torch writes it."""
    if name.isidentifier():
        return f"  {name} : {annotation}"
    return f'  __annotations__["{name}"] = {annotation}'


def _identifier(name):
    return re.sub(r"\W", "_", name)


def _with_class_names(graph, self_name):
    """A copy of `graph` whose class types all have names parse_ir reads back ('<locals>' is not one), the
    `self` input's type renamed to `self_name` (the class it is saved as) when given."""
    g = graph.copy()
    if getattr(graph, "_defaults", None):
        g._defaults = graph._defaults

    def fix(values):
        for v in values:
            t = v.type()
            if type(t).__name__ == "ClassType" and not all(p.isidentifier() for p in t.name.split(".")):
                v.setType(ClassType(".".join(_identifier(p) for p in t.name.split("."))))

    fix(g.inputs())
    for node in _all_nodes(g.block()):
        fix(node.outputs())
        for block in node.blocks():
            fix(block.inputs())
    inputs = list(g.inputs())
    if self_name is not None and inputs and type(inputs[0].type()).__name__ == "ClassType":
        inputs[0].setType(ClassType(self_name))
    return g


def _self_type_name(m):
    """The class name the compiler gave the module (its methods' `self` type), if any."""
    for graph in m._methods.values():
        inputs = list(graph.inputs())
        if inputs and type(inputs[0].type()).__name__ == "ClassType" and inputs[0].type().name.startswith("__torch__."):
            return ".".join(_identifier(p) for p in inputs[0].type().name.split("."))
    return None


def _annotation_of(value):
    try:
        return type_of(value).annotation_str()
    except RuntimeError:
        return "Any"


def _all_nodes(block):
    for node in block.nodes():
        yield node
        for sub in node.blocks():
            yield from _all_nodes(sub)


def _module_object(m, classes):
    """The data.pkl object of module `m` (submodules first, so their classes are named before the parent's)."""
    from .module import RecursiveScriptModule  # cycle: jit.module imports jit.serialization
    children, child_objects = {}, {}
    for name, child in m._modules.items():
        if child is None:  # saved as a None attribute, as torch does
            child_objects[name] = None
            continue
        if not isinstance(child, RecursiveScriptModule):
            raise RuntimeError(f"cannot save submodule '{name}' of type {type(child).__name__}: every submodule "
                               "of a saved ScriptModule must be compiled")
        child_objects[name] = _module_object(child, classes)
        children[name] = type(child_objects[name])._qualname
    qualname = classes.class_of(m, children)
    plain = {id(p): _plain(p) for p in m._parameters.values() if p is not None}
    state = {name: None if p is None else plain[id(p)] for name, p in m._parameters.items()}
    state.update(m._buffers)
    state["training"] = m.training
    for name in m.__dict__.get("_attributes", ()):
        state[name] = _typed_list_or_value(getattr(m, name), plain)
    state.update(child_objects)
    return _record_class(qualname)(state)


def _plain(p):
    """A parameter stored as torch.jit.save stores it: a plain tensor on the same storage."""
    t = p.detach()
    if p.requires_grad:
        t.requires_grad_(True)
    return t


def _as_module(fn):
    """A ScriptFunction saved as torch saves one: the forward of a stateless 'PlaceholderModule'."""
    from .module import RecursiveScriptModule  # cycle: jit.module imports jit.serialization
    graph = fn.graph.copy()
    if not hasattr(graph, "insertInput"):
        raise NotImplementedError("saving a ScriptFunction needs Graph.insertInput from lantern.jit.ir")
    graph.insertInput(0, "self").setType(ClassType("__torch__.PlaceholderModule"))
    return RecursiveScriptModule._construct("PlaceholderModule", {}, {}, {}, {}, {"forward": graph})


def save(m, f, _extra_files=None):
    """Write the compiled module `m` (or a ScriptFunction) to `f`, a path or a writable binary file."""
    from .module import RecursiveScriptModule, ScriptFunction  # cycle: jit.module imports jit.serialization
    if isinstance(m, ScriptFunction):
        m = _as_module(m)
    if not isinstance(m, RecursiveScriptModule):  # torch calls m.save / m.save_to_buffer, which only these have
        method = "save" if isinstance(f, (str, os.PathLike)) else "save_to_buffer"
        raise AttributeError(f"'{type(m).__name__}' object has no attribute '{method}'")
    classes = _Classes()
    root = _module_object(m, classes)
    data, data_storages = _pickle(root)
    constants, constant_storages = _pickle(tuple(classes.constants))
    ir = json.dumps({"format": _IR_FORMAT, "root": type(root)._qualname, "classes": classes.info}, indent=1)
    records = [(f"extra/{name}", content.encode() if isinstance(content, str) else bytes(content))
               for name, content in (_extra_files or {}).items()]
    records += [(f"data/{key}", _ser._storage_bytes(s)) for key, s in data_storages.items()]
    records += [("data.pkl", data)]
    records += [(path, "\n".join(sources).encode()) for path, sources in classes.code.items()]
    records += [("code/__torch__.ir", ir.encode())]
    records += [(f"constants/{key}", _ser._storage_bytes(s)) for key, s in constant_storages.items()]
    records += [("constants.pkl", constants), _version_record(classes.version),
                ("byteorder", sys.byteorder.encode()),
                (".data/serialization_id", "".join(random.choices("0123456789", k=40)).encode())]
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _write(fh, pathlib.Path(f).stem or "archive", records)
    else:
        _write(f, "archive", records)


def _pickle(obj):
    buf = io.BytesIO()
    pickler = _ScriptPickler(buf, 2)
    pickler.dump(obj)
    return buf.getvalue(), pickler.storages


def _write(fh, prefix, records):
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        for name, payload in records:
            _ser._write_record(zf, f"{prefix}/{name}", payload)


# ---- load -----------------------------------------------------------------------------------------------------------

class _ScriptClasses:
    """The `__torch__.*` classes data.pkl names: a stand-in class per name (NEWOBJ + BUILD make _Objects of them),
    offered to lantern.load's weights-only unpickler next to its allow-list."""

    def __init__(self):
        self.classes = {}

    def __call__(self, module, name):
        if module == "torch.jit._pickle":
            return next((b for b in _LIST_BUILDERS.values() if b._qualname == f"{module}.{name}"), None)
        if module != "__torch__" and not module.startswith("__torch__."):
            return None
        qualname = f"{module}.{name}"
        if not all(part.isidentifier() for part in qualname.split(".")):
            raise pickle.UnpicklingError(f"invalid TorchScript class name {qualname!r:.80} in the archive")
        if qualname not in self.classes:
            self.classes[qualname] = _record_class(qualname)
        return self.classes[qualname]


def load(f, map_location=None, _extra_files=None):
    """Read a TorchScript archive written by lantern.jit.save from a path or binary file: a RecursiveScriptModule.

    map_location moves the tensors as in lantern.load; `_extra_files` (a dict of names) is filled in place with
    the bytes of those extra files. Loading runs no Python named by the file: every call in the IR must be a
    registered operator or one of the functions lantern.jit.archive_check allows, checked before anything runs."""
    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {f} does not exist")
        with open(f, "rb") as fh:
            return _load(fh, map_location, _extra_files)
    return _load(f, map_location, _extra_files)


def _load(fh, map_location, extra_files):
    start = fh.tell()
    magic = fh.read(4)
    fh.seek(start)
    if magic != b"PK\x03\x04":
        raise RuntimeError("lantern.jit.load reads TorchScript archives (zip files written by lantern.jit.save); "
                           "this file is not a zip archive")
    with _ser._open_zip(fh) as zf:
        archive = _ser._Archive(zf, fh)
        if not archive.has("constants.pkl"):
            raise RuntimeError("PytorchStreamReader failed locating file constants.pkl: file not found (this is not "
                               "a TorchScript archive; a torch.save/lantern.save checkpoint loads with lantern.load)")
        if not archive.has("code/__torch__.ir"):
            raise RuntimeError("this TorchScript archive was written by torch.jit.save: it holds TorchScript source, "
                               "which lantern cannot compile; lantern.jit.load reads the archives lantern.jit.save "
                               "writes (they also store each method's IR)")
        ir = _read_ir(archive.read("code/__torch__.ir"))
        for name in extra_files or {}:  # as torch: a name the archive lacks reads as b""
            extra_files[name] = archive.read("extra/" + name) if archive.has("extra/" + name) else b""
        classes = _ScriptClasses()
        constants = _unpickle(archive, "constants.pkl", "constants/", map_location, classes)
        root = _unpickle(archive, "data.pkl", "data/", map_location, classes)
    graphs = _Graphs(ir["classes"], constants, _layouts(root, ir["classes"]))
    return _build(root, graphs)


def _read_ir(raw):
    """code/__torch__.ir's JSON, its layout checked (the graphs themselves are checked as they are decoded)."""
    from .archive_check import check_ir_layout  # cycle: jit.archive_check -> jit.module -> jit.serialization
    try:
        ir = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise RuntimeError(f"code/__torch__.ir is not valid JSON: {e}") from None
    if not isinstance(ir, dict) or ir.get("format") != _IR_FORMAT:
        raise RuntimeError(f"unsupported lantern TorchScript IR format "
                           f"{ir.get('format') if isinstance(ir, dict) else type(ir).__name__!r}")
    check_ir_layout(ir)
    return ir


def _unpickle(archive, pickle_name, folder, map_location, classes):
    reader = _ser._StorageReader(archive, folder, map_location)
    unpickler = _ser._unpickler(io.BytesIO(archive.read(pickle_name)), True, reader.persistent_load,
                                extra_globals=classes)
    try:
        return reader.finish(unpickler.load)
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(f"lantern.jit.load: {pickle_name}: {e}") from None


class _Graphs:
    """Each class's method graphs, parsed and checked (lantern.jit.archive_check) once, shared by every module of
    that class."""

    def __init__(self, classes, constants, layouts):
        self.classes = classes
        self.constants = constants if isinstance(constants, tuple) else ()
        self.layouts = layouts
        self.parsed = {}

    def methods(self, qualname):
        if qualname not in self.parsed:
            methods = self.classes[qualname]["methods"]
            self.parsed[qualname] = {name: self.decode(rec, qualname) for name, rec in methods.items()}
        return self.parsed[qualname]

    def decode(self, record, self_class):
        from .archive_check import check_graph  # cycle: jit.archive_check -> jit.module -> jit.serialization
        try:
            graph = parse_ir(record["ir"])
        except (ValueError, IndexError, KeyError, TypeError, AttributeError) as e:
            raise RuntimeError(f"lantern.jit.load: a graph of the archive does not parse: {e}") from None
        nodes = list(_all_nodes(graph.block()))
        for node in nodes:
            value = node.attrs.get("value") if node.kind() == "prim::Constant" else None
            if isinstance(value, str) and value.startswith(_CONSTANT_PREFIX) and \
                    type(node.output().type()).__name__ == "TensorType":
                node.attrs["value"] = self.constant(value)
        for ref in record["refs"]:
            if not 0 <= ref["node"] < len(nodes):
                raise RuntimeError(f"lantern.jit.load: a reference of code/__torch__.ir names node {ref['node']}, "
                                   f"but its graph has {len(nodes)}")
            attrs = nodes[ref["node"]].attrs
            if ref.get("absent"):
                attrs.pop(ref["attribute"], None)
            else:
                attrs[ref["attribute"]] = self._decode_ref(ref)
        check_graph(graph, self.layouts, self_class)
        _dtype_constants(graph)
        if "defaults" in record:
            graph._defaults = _decode_defaults(record["defaults"], graph)
        return graph

    def constant(self, name):
        index = name[len(_CONSTANT_PREFIX):]
        if not index.isdigit() or int(index) >= len(self.constants) or \
                not isinstance(self.constants[int(index)], TensorImpl):
            raise RuntimeError(f"lantern.jit.load: the archive uses tensor constant {name}, which constants.pkl "
                               "lacks")
        return self.constants[int(index)]

    def _decode_ref(self, ref):
        if "python" in ref:
            from .archive_check import allowed_python  # cycle: jit.archive_check -> jit.module -> jit.serialization
            allowed_python(ref["python"], ref["attr"])
            return _PythonRef(ref["python"], ref["kwnames"], ref["attr"])
        from .frontend import _FunctionRef  # cycle: jit.frontend -> jit.module -> jit.serialization
        from .module import ScriptFunction  # cycle: jit.module imports jit.serialization
        function = ScriptFunction(ref["function"].rpartition(".")[2], self.decode(ref, None))
        function.qualified_name = ref["function"]
        return _FunctionRef(ref["function"], function)


def _dtype_constants(graph):
    """The IR keeps a dtype constant as its ScalarType int, as torch's does; an operator's ScalarType argument gets
    the dtype itself (a scripted `prim::dtype(x)` already gives one; a saved trace's `aten::zeros(..., 6, ...)`
    gets float32)."""
    for node in list(_all_nodes(graph.block())):
        op = REGISTRY.get(node.attrs.get("op") or "")
        if op is None:
            continue
        for i, (arg, value) in enumerate(zip(op.schema.args, node.inputs())):
            producer = value.node()
            if arg.type == "ScalarType" and producer.kind() == "prim::Constant" and \
                    type(producer.attrs.get("value")) is int:
                constant = graph.create("prim::Constant")
                constant.attrs["value"] = dtype_from_index(producer.attrs["value"])
                constant.output().setType(DtypeType.get())
                constant.insertBefore(node)
                node.replaceInput(i, constant.output())


def _decode_defaults(defaults, graph):
    """A method record's argument defaults (name -> Python literal) as the frontend keeps them: one entry per
    graph input, None where the argument has no default."""
    from .frontend import _arg_name, _Default  # cycle: jit.frontend -> jit.module -> jit.serialization
    names = [_arg_name(v) for v in graph.inputs()]
    if not set(defaults) <= set(names):
        raise RuntimeError(f"lantern.jit.load: defaults name arguments the graph lacks: {sorted(defaults)!r:.80}")
    try:
        return [_Default(ast.literal_eval(defaults[n])) if n in defaults else None for n in names]
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise RuntimeError("lantern.jit.load: an argument default of the archive is not a Python literal") from None


def _layouts(root, classes):
    """qualname -> archive_check.ClassLayout for every class of the module tree under `root` (data.pkl's objects),
    each checked: declared in code/__torch__.ir, its state a dict of allowed names, the same children for every
    module of one class, no module its own ancestor."""
    from .archive_check import ClassLayout, check_member_name  # cycle: archive_check -> module -> serialization
    layouts, path_ids = {}, set()  # path_ids: the modules from the root down to the one being visited

    def visit(obj, path):
        if not isinstance(obj, _Object):
            raise RuntimeError(f"lantern.jit.load: {path} is a {type(obj).__name__}, not a TorchScript module")
        if id(obj) in path_ids:
            raise RuntimeError(f"lantern.jit.load: module {path} contains itself")
        qualname = type(obj)._qualname
        info = classes.get(qualname)
        if info is None:
            raise RuntimeError(f"the archive's data.pkl names class {qualname}, which code/__torch__.ir lacks")
        state = obj.state
        if type(state) is not dict or not all(type(k) is str for k in state):
            raise RuntimeError(f"lantern.jit.load: the state of {path} is not a dict of names")
        for name in state:
            if name != "training":
                check_member_name(name, "attribute")
        if type(state.get("training", True)) is not bool:
            raise RuntimeError(f"lantern.jit.load: {path}.training is not a bool")
        missing = [n for n in info["parameters"] + info["buffers"] if n not in state]
        if missing:
            raise RuntimeError(f"lantern.jit.load: {path} lacks its parameters/buffers {missing}")
        children = {name: type(v)._qualname for name, v in state.items() if isinstance(v, _Object)}
        layout = ClassLayout(qualname, [n for n in state if n not in children], children, info["methods"])
        known = layouts.setdefault(qualname, layout)
        if known.children != layout.children or known.data != layout.data:
            raise RuntimeError(f"lantern.jit.load: modules of class {qualname} differ in their attributes")
        path_ids.add(id(obj))
        for name, child in state.items():
            if isinstance(child, _Object):
                visit(child, f"{path}.{name}")
        path_ids.discard(id(obj))

    visit(root, "the root module")
    return layouts


def _build(obj, graphs):
    from .module import RecursiveScriptModule  # cycle: jit.module imports jit.serialization
    qualname = type(obj)._qualname
    info = graphs.classes[qualname]
    state = dict(obj.state)
    params, as_parameter = {}, {}  # as_parameter: id(saved tensor) -> the Parameter made of it
    for name in info["parameters"]:
        t = state.pop(name)
        if t is not None and not isinstance(t, TensorImpl):
            raise RuntimeError(f"lantern.jit.load: parameter {name} of {qualname} is a {type(t).__name__}")
        params[name] = None if t is None else Parameter(t, t.requires_grad)
        as_parameter[id(t)] = params[name]
    buffers = {name: state.pop(name) for name in info["buffers"]}
    if any(b is not None and not isinstance(b, TensorImpl) for b in buffers.values()):
        raise RuntimeError(f"lantern.jit.load: a buffer of {qualname} is not a tensor")
    training = state.pop("training", True)
    submodules = {name: _build(v, graphs) for name, v in state.items() if isinstance(v, _Object)}
    attributes = {name: [as_parameter.get(id(x), x) for x in v] if type(v) is list else v
                  for name, v in state.items() if name not in submodules}  # a List[Tensor] holds the parameters
    return RecursiveScriptModule._construct(info["original_name"], params, buffers, submodules, attributes,
                                            graphs.methods(qualname), training)
