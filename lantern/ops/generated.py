"""Generated code, loaded as source a reader can open.

lantern generates small functions from its op registry, as PyTorch generates its wrappers from
native_functions.yaml: each op's Python binding (`lantern.mul`), its dispatcher entry, its CPU runner and the
backward of its derivative formulas. `make codegen` (`python -m lantern._codegen`) writes them as plain modules
into lantern/_generated/, and start-up takes each function from there, but only while its text in the file is
exactly what the registry generates now and the names it reads are the same objects: a stale file never runs.
Code with no file there (an op a user registers at run time, a composite's wrapper, the keyword-alias wrappers) is
compiled in memory and its source registered with `linecache`, so tracebacks and debuggers show its lines too.
Either way the function carries its text as `.source`.

>>> import inspect, lantern
>>> inspect.getsourcefile(lantern.mul).endswith("lantern/_generated/functions.py")
True
>>> print(lantern.mul.source.splitlines()[1])
    def mul(input, other, *, out=None):
"""
import dis
import importlib
import linecache
import os

GENERATED_PACKAGE = "lantern._generated"
_modules = {}  # kind -> the module lantern/_generated/<kind>.py, or None when it is absent or cannot import


def identifier(op_name):
    """The Python name of an op in generated code: 'add.out' -> 'add__out' (a dot becomes two underscores, so
    that 'scatter.reduce' and 'scatter_reduce' stay apart)."""
    return op_name.replace(".", "__")


def generated_module(kind):
    """lantern/_generated/<kind>.py, imported on first use; None when it is missing or no longer imports (a helper
    it names was moved: everything is then compiled in memory until `make codegen` runs)."""
    if kind not in _modules:
        try:
            _modules[kind] = importlib.import_module(f"{GENERATED_PACKAGE}.{kind}")
        except ImportError:
            _modules[kind] = None
    return _modules[kind]


def define(kind, name, source, namespace):
    """The function `name` that `source` defines: the one in lantern/_generated/<kind>.py when that file holds
    exactly `source` and the globals it reads are `namespace`'s objects, else `source` compiled in `namespace`
    (a copy), with its text registered in linecache as `<lantern kind name>`. The function gets `.source`."""
    fn = _from_file(kind, name, source, namespace)
    if fn is None:
        fn = in_memory(f"{kind} {name}", name, source, namespace)
    fn.source = source
    return fn


def imported(header):
    """{name: object} that a header of import statements binds (the names generated code reads besides its op:
    one text is both the top of the generated file and the namespace of what is compiled in memory)."""
    namespace = {}
    exec(compile(header, "<lantern generated header>", "exec"), namespace)
    del namespace["__builtins__"]
    return namespace


def in_memory(label, name, source, namespace, live_globals=None):
    """The function `name` that `source` defines, compiled with `namespace` (a copy) as its globals, or with
    `live_globals` as globals and `namespace` for what the source defines (a module's globals() whose values
    change, registry.watched); its text is kept in linecache as the file `<lantern label>`."""
    filename = f"<lantern {label}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    space = dict(namespace)
    if live_globals is None:
        exec(compile(source, filename, "exec"), space)
    else:
        exec(compile(source, filename, "exec"), live_globals, space)
    fn = space[name]
    fn.source = source
    return fn


def _from_file(kind, name, source, namespace):
    module = generated_module(kind)
    fn = getattr(module, name, None) if module is not None else None
    if fn is None or not _same_text(module, fn, source):
        return None
    space = vars(module)
    # the same text reads the same globals, all of which the file imported when it was written: each must still be
    # the object lantern would give it now (a helper renamed, a constant changed make the file stale)
    if any(n in namespace and n in space and not _same_object(space[n], namespace[n])
           for n in _names(fn.__code__)):
        return None
    return fn


_MISSING = object()
_LITERAL_TYPES = (bool, int, float, complex, str)


def is_literal(value):
    """A number or string: generated code writes it as its repr rather than importing it."""
    return type(value) in _LITERAL_TYPES


def _same_object(a, b):
    return a is b or (is_literal(a) and type(a) is type(b) and repr(a) == repr(b))


def _same_text(module, fn, source):
    lines = linecache.getlines(module.__file__)
    first = fn.__code__.co_firstlineno - 1
    wanted = source.splitlines(True)
    return "".join(lines[first:first + len(wanted)]) == "".join(wanted) and source.endswith("\n")


def _names(code):
    """The names a function and the functions inside it use (co_names: globals and attributes alike; cheap)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names(const)
    return names


def global_names(code):
    """The global names a function and the functions inside it read (what a generated module must import)."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= global_names(const)
    return names


def source_path(kind):
    """The path of lantern/_generated/<kind>.py in this checkout."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_generated", kind + ".py")
