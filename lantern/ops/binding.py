"""Python bindings generated from schemas, as PyTorch generates its python_torch_functions from native_functions.yaml.

Each binding is a small function with the op's exact signature that packs its arguments into a tuple and calls the
dispatcher; nothing is parsed per call. The generated source is kept for reading:

>>> print(binding_source("add"))
def make_add(op, op_out):
    def add(input, other, *, alpha=1, out=None):
        if _TORCH_FUNCTION[0] and _has_torch_function((input, other, out)):
            return _handle_torch_function(add, (input, other, out), (input, other), {'alpha': alpha, 'out': out})
        try:
            if out is None:
                return (op.scan or entry(op))((input, other, alpha))
            return call(op_out, (input, other, alpha, out))
        except Exception:
            if not _has_torch_function((input, other, out)):
                raise
            return _handle_torch_function(add, (input, other, out), (input, other), {'alpha': alpha, 'out': out})
    return add
<BLANKLINE>

(`op.scan or entry(op)` is the op's generated dispatcher entry: the same as call(op, args), one call shorter.
`_TORCH_FUNCTION[0]` is False unless a TorchFunctionMode is on or a class overriding `__torch_function__` exists;
an object with `__torch_function__` that is no Tensor fails the call and is handed it in the `except`, which costs
a call that does not fail nothing: see lantern.core.torch_function.)
`make codegen` writes every binding into lantern/_generated/functions.py and methods.py, where lantern takes them
from at start-up (see lantern.ops.generated).
"""
from . import generated, keyword_aliases
from ..core.torch_function import handle_torch_function
from .dispatcher import call, entry
from .op_kinds import OpKind
from .registry import REGISTRY

_BINDINGS = {}  # ('method ' or '') + name -> the binding made for it


def _int_list(values, name="", arg="size"):
    """`view(2, 3)` and `view((2, 3))` both mean the sizes (2, 3); anything but ints, or nothing, is a TypeError."""
    if not values:
        raise TypeError(f'{name}() missing 1 required positional arguments: "{arg}" (pass the {arg}, () for none)')
    plain = values[0] if len(values) == 1 and values[0].__class__ is tuple else values
    for v in plain:  # the common case, ints already: nothing to convert
        if v.__class__ is not int:
            break
    else:
        return plain
    if len(values) == 1 and (isinstance(values[0], (list, tuple)) or not hasattr(values[0], "__index__")):
        if not isinstance(values[0], (list, tuple)):
            raise TypeError(f"{name}(): argument '{arg}' (position 1) must be tuple of ints, not "
                            f"{type(values[0]).__name__}")
        values = values[0]
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not hasattr(v, "__index__") or (hasattr(v, "dim") and v.dim() != 0):
            raise TypeError(f"{name}(): argument '{arg}' must be tuple of ints, but found element of type "
                            f"{type(v).__name__} at pos {i}")
        out.append(v.__index__())
    return tuple(out)


def _params(schema, method):
    """(signature text, argument names in schema order, varargs name, required parameters given a placeholder
    default) for a binding. A required `dim` gets the placeholder keyword_aliases.REQUIRED, so that `axis=` can
    fill it, and so does every required positional parameter after it (Python wants defaults to the end)."""
    sig, names, star, placeholders = [], [], False, []
    args = schema.args
    varargs = None
    first = args[1] if method and len(args) > 1 else (args[0] if not method and args else None)
    positional = [a for a in args if not a.kwarg_only]
    if (first is not None and first.type == "int" and first.is_list and first.required and not first.kwarg_only
            and positional[-1] is first):
        varargs = first.name
    for i, a in enumerate(args):
        if a.name == "out" and a.kwarg_only:
            continue
        name = "input" if (a.name == "self" and not method) else a.name
        names.append(name)
        if method and i == 0:
            sig.append("self")
            continue
        if a.name == varargs:
            sig.append("*" + name)
            star = True
            continue
        if a.kwarg_only and not star:
            sig.append("*")
            star = True
        if a.required and not a.kwarg_only and (placeholders or name in keyword_aliases.NUMPY_NAMES.values()):
            placeholders.append(name)
            sig.append(f"{name}=_REQUIRED")
        else:
            sig.append(name if a.required else f"{name}={a.default!r}")
    return sig, names, varargs, placeholders


# The names a generated binding reads besides its op: the header of lantern/_generated/{functions,methods}.py
BINDING_IMPORTS = """\
from lantern.core.torch_function import ACTIVE as _TORCH_FUNCTION, has_torch_function as _has_torch_function
from lantern.ops.binding import _handle_torch_function, _int_list
from lantern.ops.dispatcher import call, entry
from lantern.ops.keyword_aliases import REQUIRED as _REQUIRED, missing as _missing, resolve as _resolve_aliases
"""
_binding_namespace = {}


def generated_source(op, method=False, name=None, out_op=None):
    """The source of `def name(...)` for op (a function, or a Tensor method when `method`), inside its factory
    make_<op>(op, op_out)."""
    schema = op.schema
    name = name or schema.name
    sig, names, varargs, placeholders = _params(schema, method)
    if out_op is not None:
        if "*" not in sig and not any(s.startswith("*") for s in sig):
            sig.append("*")
        sig.append("out=None")
    targets = keyword_aliases.plan(names, varargs)
    if targets:  # other spellings a call may use (axis=, keepdims=, size=): see lantern.ops.keyword_aliases
        sig.append("**_aliases")
    lines = [f"def {name}({', '.join(sig)}):"]
    lines += keyword_aliases.binding_lines(name, targets, varargs)
    lines += keyword_aliases.placeholder_lines(name, placeholders)
    if varargs:
        lines.append(f"    {varargs} = _int_list({varargs}, {name!r}, {varargs!r})")
    packed = ", ".join(names) + ("," if len(names) == 1 else "")
    relevant, handoff = _torch_function_call(op.schema, name, names, out_op is not None)
    lines += [f"    if _TORCH_FUNCTION[0] and _has_torch_function({relevant}):", f"        return {handoff}"]
    if out_op is not None:
        calls = ["    if out is None:", f"        return (op.scan or entry(op))(({packed}))",
                 f"    return call(op_out, ({', '.join(names)}, out))"]
    else:
        calls = [f"    return (op.scan or entry(op))(({packed}))"]
    if relevant == "()":
        lines += calls
    else:  # an object with __torch_function__ that is no Tensor fails the call, and then gets it
        lines += ["    try:"] + ["    " + line for line in calls]
        lines += ["    except Exception:", f"        if not _has_torch_function({relevant}):", "            raise",
                  f"        return {handoff}"]
    if name in names:  # a parameter named as the function (threshold's threshold): the handler reads it as public
        lines.append(f"public = {name}")
    body = "".join(f"    {line}\n" for line in lines)
    return f"def make_{generated.identifier(op.name)}(op, op_out):\n{body}    return {name}\n"


def _torch_function_call(schema, name, names, has_out):
    """(the tensor arguments, the call handing the binding's call to `__torch_function__`) as source text.

    The binding's first test hands the call over (lantern.core.torch_function) when a mode is on or a tensor
    argument's class overrides it; an argument that is no Tensor but has `__torch_function__` (a "tensor-like")
    makes the call fail, and the binding hands it over then, so that the test costs plain calls nothing. The
    handler gets the positional parameters as positional arguments and the keyword-only ones as keywords."""
    args = [a for a in schema.args if not (a.name == "out" and a.kwarg_only)]
    tensors = [n for a, n in zip(args, names) if a.is_tensor] + (["out"] if has_out else [])
    positional = [n for a, n in zip(args, names) if not a.kwarg_only]
    keywords = [n for a, n in zip(args, names) if a.kwarg_only] + (["out"] if has_out else [])
    relevant = "(" + ", ".join(tensors) + ("," if len(tensors) == 1 else "") + ")"
    packed = "(" + ", ".join(positional) + ("," if len(positional) == 1 else "") + ")"
    kwargs = "{" + ", ".join(f"{k!r}: {k}" for k in keywords) + "}"
    public = "public" if name in names else name
    return relevant, f"_handle_torch_function({public}, {relevant}, {packed}, {kwargs})"


def _handle_torch_function(binding, relevant, args, kwargs):
    """A binding's call handed to `__torch_function__`: trailing positional arguments and keywords left at their
    defaults are dropped, so the handler sees the call much as it was written (`add(a, b)`, not `add(a, b,
    alpha=1, out=None)`); kwargs is None when none remain, as PyTorch passes it from its C++ bindings."""
    code = binding.__code__
    defaults = binding.__defaults__ or ()
    first_default = code.co_argcount - len(defaults)
    n = len(args)
    if n <= code.co_argcount:
        while n > first_default and args[n - 1] is defaults[n - 1 - first_default]:
            n -= 1
    kwdefaults = binding.__kwdefaults__ or {}
    kept = {k: v for k, v in kwargs.items() if k not in kwdefaults or v is not kwdefaults[k]}
    return handle_torch_function(binding, relevant, args[:n], kept or None)


def make_binding(op, method=False, name=None, out_op=None):
    """The binding `def name(...)` for op, from lantern/_generated/functions.py (methods.py when `method`), or
    compiled when the file has none (see lantern.ops.generated)."""
    if not _binding_namespace:
        _binding_namespace.update(generated.imported(BINDING_IMPORTS))
    source = generated_source(op, method, name, out_op)
    factory = generated.define("methods" if method else "functions", f"make_{generated.identifier(op.name)}",
                               source, _binding_namespace)
    fn = factory(op, out_op)
    fn.source = source
    fn.lantern_op = op  # the Operator behind it (the JIT compiles a call of a binding as a call of its op)
    fn.__qualname__ = fn.__name__
    fn.__doc__ = f"{op.schema.text}\n\nGenerated from lantern's op registry; see lantern.ops.registry.get({op.name!r})."
    _BINDINGS[("method " if method else "") + fn.__name__] = fn
    return fn


def made_binding(name, method=False):
    """The binding made for `name` (`method=True`: the Tensor method's), else None."""
    return _BINDINGS.get(("method " if method else "") + name)


def binding_source(name, method=False):
    """The generated source of a binding (`method=True` for the Tensor method), inside its factory."""
    return _BINDINGS[("method " if method else "") + name].source


def functional_ops():
    """The registered ops with a public functional form (lantern.<name>); a lantern.library op ("mylib::f") is
    reached as lantern.ops.mylib.f instead."""
    return [op for op in REGISTRY.values()
            if op.kind not in (OpKind.STRUCTURED_INPLACE, OpKind.STRUCTURED_OUT) and "." not in op.name
            and "::" not in op.name and not op.name.startswith("_")]


def method_ops():
    """The ops that are Tensor methods: each public op whose first argument is `Tensor self`, and its in-place
    form (not internal ops like _to_copy, nor function-only ones like im2col)."""
    return [op for op in REGISTRY.values()
            if op.schema.args and op.schema.args[0].name == "self" and op.kind is not OpKind.STRUCTURED_OUT
            and not op.schema.overload and not op.schema.name.startswith("_") and op.method]


def functional_bindings():
    """{name: function} for every registered op with a public functional form."""
    return {op.name: make_binding(op, out_op=op.out) for op in functional_ops()}


def method_bindings():
    """{name: function} for Tensor methods."""
    return {op.schema.name: make_binding(op, method=True) for op in method_ops()}
