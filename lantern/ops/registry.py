"""The operator registry: one `Operator` record per op (schema, meta, kernels per dispatch key, derivative).

Three ways to declare an op, by how its output is made:
- `structured(schema, meta, impl)`: meta returns the output's `shape, dtype` (and does every check); impl writes
  into an output array. The functional, in-place (`add_`) and out= (`add.out`) operators all come from this one record,
  as PyTorch's structured kernels do.
- `view(schema, meta)`: meta returns the view's `shape, strides, storage_offset` over the input's storage, with a
  fourth item, the dtype, where the view reinterprets the elements (view(dtype), view_as_real, real/imag); no data
  moves, the same on every backend.

What metas return is a plain tuple on purpose: every op call makes one, and a named tuple (a tuple subclass,
allocated without the tuple free list) cost 0.2-0.35 µs of a ~3 µs small op. tests/test_meta_results.py holds
every meta to these forms.
- `custom(schema, kernel)`: kernel(backend, *args) builds its own outputs (data-dependent shapes, several outputs).

>>> op = REGISTRY["add"]
>>> op.schema.text, op.inplace.name, op.out.name
('add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor', 'add_', 'add.out')
"""
import functools
import inspect
import threading

from ..core import torch_function
from ..core.state import tls
from . import autocast, autocast_policy, generated, keyword_aliases
from .op_kinds import OpKind
from .schema import parse_schema

REGISTRY = {}
COMPOSITES = {}  # name -> Python function built from other ops (PyTorch's CompositeImplicitAutograd)
COMPOSITE_METHODS = set()  # the composites that are also Tensor methods


class Operator:
    """One registered operator. `kernels` maps a DispatchKey to fn(op, args) -> result."""

    __slots__ = ("schema", "name", "kind", "meta", "meta_kernel", "impl", "kernels", "derivative",
                 "tensor_positions", "list_positions", "device_position", "functional", "inplace", "out", "backends",
                 "scan", "pointwise", "sets_base", "exact_out_dtype", "dtype_from_out", "method", "batch_rule",
                 "__weakref__")

    def __init__(self, schema, kind, meta=None, impl=None):
        self.schema = schema
        self.name = schema.full_name
        self.kind = kind
        self.meta = meta  # structured: (*args) -> (shape, dtype); view: (*args) -> (shape, strides, offset[, dtype])
        self.meta_kernel = None  # custom: the kernel(backend, *args) the meta device runs instead of impl
        self.impl = impl
        self.kernels = {}
        self.derivative = None
        args = schema.args
        self.tensor_positions = tuple(i for i, a in enumerate(args) if a.is_tensor and not a.is_list)
        self.list_positions = tuple(i for i, a in enumerate(args) if a.is_tensor and a.is_list)
        self.device_position = next((i for i, a in enumerate(args) if a.type == "Device"), None)
        self.functional = self
        self.inplace = None
        self.out = None
        self.backends = None  # device types with a kernel; None: every backend
        self.scan = None      # the dispatcher's entry for this op (call without the call), generated on first use
        self.pointwise = False  # outputs follow the inputs' memory order (TensorIterator) instead of row-major
        self.sets_base = True   # view ops: the result's _base is the input's root (view(dtype) has none)
        self.exact_out_dtype = False  # out= and in-place results must have exactly the result dtype
        self.dtype_from_out = False   # reductions with a dtype= argument compute in out's dtype
        self.method = True            # also a Tensor method (native_functions' `variants: method`)
        self.batch_rule = None        # vmap's rule(op, args, level) (lantern/_functorch/batching_rules.py)

    @property
    def alias(self):
        return self.schema.alias

    def __repr__(self):
        return f"<lantern op {self.name}: {self.schema.text}>"


def _register(op):
    key = op.name
    if key in REGISTRY:
        raise ValueError(f"operator {key} is already registered")
    REGISTRY[key] = op
    _on_register(op)
    return op


_listeners = []


def on_register(fn):
    """Backends subscribe here to install their kernels for every op, including ops registered later."""
    _listeners.append(fn)
    for op in list(REGISTRY.values()):
        fn(op)


def _on_register(op):
    for fn in _listeners:
        fn(op)


def _inplace_schema(schema):
    """add.Tensor(Tensor self, ...) -> Tensor   becomes   add_.Tensor(Tensor(a!) self, ...) -> Tensor(a!)"""
    head, _, rest = schema.text.partition("(")
    name, dot, overload = head.partition(".")
    rest = rest.replace("Tensor self", "Tensor(a!) self", 1)
    args_part, _, _ = rest.rpartition("->")
    return parse_schema(f"{name}_{dot}{overload}({args_part.strip()} -> Tensor(a!)")


def _out_schema(schema):
    """add.Tensor(Tensor self, ..., *, Scalar alpha=1) -> Tensor   becomes   add.out(..., *, Tensor(a!) out)"""
    head, _, rest = schema.text.partition("(")
    name = head.partition(".")[0]
    args_part = rest.rpartition("->")[0].strip()[:-1]
    sep = ", " if "*" in args_part.split(", ") else ", *, "
    if not args_part:
        sep = "*, "
    return parse_schema(f"{name}.out({args_part}{sep}Tensor(a!) out) -> Tensor(a!)")


def structured(text, meta, impl, inplace=True, out=True, pointwise=False, exact_out_dtype=False,
               dtype_from_out=False, method=True):
    """Declare an op whose meta computes (shape, dtype) and whose impl(xp, out, dtype, *args) fills the output.

    pointwise: the output is laid out in the inputs' memory order, as PyTorch's TensorIterator does.
    exact_out_dtype: an out= or in-place result must have exactly the result dtype (else any allowed cast).
    dtype_from_out: with out= and no dtype= argument, compute in out's dtype (sum, prod).
    method: also a Tensor method (False for ops PyTorch has only as functions, like im2col)."""
    schema = parse_schema(text)
    variants = [Operator(schema, OpKind.STRUCTURED, meta, impl)]
    if inplace:
        variants.append(Operator(_inplace_schema(schema), OpKind.STRUCTURED_INPLACE, meta, impl))
    if out:
        variants.append(Operator(_out_schema(schema), OpKind.STRUCTURED_OUT, meta, impl))
    op = variants[0]
    for v in variants:
        v.functional = op
        v.pointwise, v.exact_out_dtype, v.dtype_from_out, v.method = pointwise, exact_out_dtype, dtype_from_out, method
        _register(v)
        if v.kind is OpKind.STRUCTURED_INPLACE:
            op.inplace = v
        elif v.kind is OpKind.STRUCTURED_OUT:
            op.out = v
    return op


def view(text, meta, sets_base=True, method=True):
    """Declare a view op: meta(*args) -> (shape, strides, storage_offset) of the result over the input's storage,
    or (shape, strides, storage_offset, dtype) for a view that reinterprets the elements."""
    op = Operator(parse_schema(text), OpKind.VIEW, meta)
    op.sets_base = sets_base
    op.method = method
    return _register(op)


def custom(text, kernel, meta_kernel=None, backends=None, method=True):
    """Declare an op with its own kernel(backend, *args) and the meta_kernel(backend, *args) the meta device runs
    (shapes and checks, no data); `backends` limits which backends it runs on; `method=False` for ops PyTorch has
    only as functions."""
    op = Operator(parse_schema(text), OpKind.CUSTOM, None, kernel)
    op.meta_kernel = meta_kernel
    op.backends = backends
    op.method = method
    return _register(op)


# True while some thread has dispatch watchers or autocast on (lantern.profiler.watchers and lantern.amp set it
# through count_watching), or while `__torch_function__` is in use: a module global, cheaper to test than the
# thread-local state on every composite call
watched = False
_watching = {"watchers": 0, "autocast": 0, "torch_function": 0}   # threads with watchers / with autocast on
_watching_lock = threading.Lock()


def count_watching(reason, change):
    """A thread starts (+1) or stops (-1) having `reason` ('watchers' or 'autocast'): keep `watched` in step."""
    global watched
    with _watching_lock:
        _watching[reason] += change
        watched = any(_watching.values())


torch_function.watch(lambda active: count_watching("torch_function", 1 if active else -1))


def observed(name, fn):
    """`fn` wrapped so that dispatch watchers (the profiler, the dispatch trace) see each call as an op `name`, the
    parent of the ops it dispatches, as PyTorch's profiler shows aten::matmul over aten::mm; a composite with an
    autocast policy (matmul, linear, conv2d) also runs behind the Autocast key there (lantern.ops.autocast.stage).
    Unwatched and without autocast, the wrapper costs one flag test; it takes fn's own parameters (no *args packing)
    where it can, and functools.wraps keeps fn's name, docstring and signature. The same test opens the
    `__torch_function__` check: a composite is a public function (lantern.matmul, F.linear, Tensor.matmul)."""
    staged = autocast.stage(name, fn) if name in autocast_policy.FUNCTIONS else fn
    wrapper = functools.update_wrapper(_exact_wrapper(name, fn, staged) or _generic_wrapper(name, fn, staged), fn)
    wrapper.overridable = True  # lantern.core.overridable.is_overridable
    return wrapper


def _generic_wrapper(name, fn, staged):
    def wrapper(*args, **kwargs):
        if watched:
            relevant = (*args, *kwargs.values())
            if torch_function.ACTIVE[0] and torch_function.has_torch_function(relevant):
                return torch_function.handle_torch_function(wrapper, relevant, args, kwargs or None)
            watcher = tls.dispatch_trace
            if watcher is not None:
                return watcher.composite(name, staged, args, kwargs)
            return staged(*args, **kwargs)
        return fn(*args, **kwargs)
    return wrapper


_RESERVED = {"watched", "tls", "torch_function", "_relevant", "_fn", "_staged", "_name", "_d", "_w", "wrapper",
             "_aliases", "_resolve_aliases", "_REQUIRED", "_missing"}
_KINDS = inspect.Parameter


def _exact_wrapper(name, fn, staged):
    """A wrapper generated with fn's parameter list, passing them on as they are: twice as fast as *args, **kwargs.
    The watchers get the positional parameters as args and the keyword-only ones as kwargs. None when fn's
    signature is unknown or uses a name the wrapper needs."""
    try:
        params = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.name in _RESERVED for p in params):
        return None
    varargs = next((p.name for p in params if p.kind is _KINDS.VAR_POSITIONAL), None)
    targets = () if any(p.kind is _KINDS.VAR_KEYWORD for p in params) else keyword_aliases.plan(
        [p.name for p in params if p.kind in (_KINDS.POSITIONAL_OR_KEYWORD, _KINDS.KEYWORD_ONLY)], varargs)
    defaults, heads, calls, positional, keywords, placeholders = [], [], [], [], [], []
    for i, p in enumerate(params):
        if p.kind is _KINDS.VAR_POSITIONAL:
            heads.append(f"*{p.name}")
            calls.append(f"*{p.name}")
            positional.append(f"*{p.name}")
            continue
        if p.kind is _KINDS.VAR_KEYWORD:
            heads.append(f"**{p.name}")
            calls.append(f"**{p.name}")
            keywords.append(f"**{p.name}")
            continue
        if p.kind is _KINDS.KEYWORD_ONLY and "*" not in "".join(heads):
            heads.append("*")
        head = p.name
        default = p.default
        if targets and default is _KINDS.empty and p.kind is _KINDS.POSITIONAL_OR_KEYWORD and (
                placeholders or p.name in targets):  # a required dim that axis= may fill (see binding._params)
            placeholders.append(p.name)
            default = keyword_aliases.REQUIRED
        if default is not _KINDS.empty:
            head += f"=_d[{len(defaults)}]"
            defaults.append(default)
        heads.append(head)
        if p.kind is _KINDS.KEYWORD_ONLY:
            calls.append(f"{p.name}={p.name}")
            keywords.append(f"{p.name!r}: {p.name}")
        else:
            calls.append(p.name)
            positional.append(p.name)
        if p.kind is _KINDS.POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind is not p.kind):
            heads.append("/")
    args = f"({', '.join(positional)}{',' if len(positional) == 1 else ''})"
    kwargs = f"{{{', '.join(keywords)}}}"
    check = "".join(line + "\n" for line in keyword_aliases.torch_function_lines("wrapper", calls, " " * 12))
    if targets:  # axis=, keepdims=, size= (lantern.ops.keyword_aliases)
        heads.append("**_aliases")
    respell = "".join(line + "\n" for line in keyword_aliases.binding_lines(name, targets, varargs, " " * 8)
                      + keyword_aliases.placeholder_lines(name, placeholders, " " * 8))
    source = (f"def _make(_fn, _staged, _name, _d, _resolve_aliases, _REQUIRED, _missing):\n"
              f"    def wrapper({', '.join(heads)}):\n"
              f"{respell}"
              f"        if watched:\n"
              f"{check}"
              f"            _w = tls.dispatch_trace\n"
              f"            if _w is not None:\n"
              f"                return _w.composite(_name, _staged, {args}, {kwargs})\n"
              f"            return _staged({', '.join(calls)})\n"
              f"        return _fn({', '.join(calls)})\n"
              f"    return wrapper\n")
    wrapper = generated.in_memory(f"composite {name}", "_make", source, {}, live_globals=globals())(
        fn, staged, name, defaults, keyword_aliases.resolve, keyword_aliases.REQUIRED, keyword_aliases.missing)
    wrapper.source = source
    return wrapper


def composite(name, fn, method=True):
    """Declare an op written in terms of other ops: it needs no kernel and no derivative of its own.

    Registers and returns `fn` wrapped by `observed`, so that the profiler and the dispatch trace show it."""
    if name in COMPOSITES:
        raise ValueError(f"composite {name} is already registered")
    wrapper = observed(name, fn)
    COMPOSITES[name] = wrapper
    if method:
        COMPOSITE_METHODS.add(name)
    return wrapper


def get(name):
    """The Operator registered under `name` (e.g. 'add', 'add_.Tensor', 'add.out')."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no operator named {name!r} is registered in lantern") from None
