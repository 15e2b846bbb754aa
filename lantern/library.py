"""torch.library: operators defined outside lantern that are records like lantern's own.

An op defined here is an `Operator` in the registry (lantern/ops/registry.py) with its schema: it dispatches
through the generated entry, shows in the dispatch trace, the profiler and the JIT's graphs under its qualified
name, runs its kernel per device (`register_kernel`, `Library.impl(name, fn, "CPU")`), shapes-only on the meta
device (`register_fake`), and records its derivative through autograd (`register_autograd`), as PyTorch's
custom operators do.

>>> @lantern.library.custom_op("mylib::scale", mutates_args=())
... def scale(x: lantern.Tensor, k: float) -> lantern.Tensor:
...     return x * k
>>> scale.register_autograd(lambda ctx, grad: (grad * ctx.k, None), setup_context=lambda ctx, inputs, output:
...                         setattr(ctx, "k", inputs[1]))
>>> x = lantern.ones(2, requires_grad=True)
>>> y = lantern.ops.mylib.scale(x, 3.0)
>>> y, y.grad_fn.name()
(tensor([3., 3.], grad_fn=<GeneratedBackwardFor_mylib_scale_defaultBackward>), 'GeneratedBackwardFor_mylib_scale_defaultBackward')
>>> y.sum().backward(); x.grad
tensor([3., 3.])
"""
import contextlib
import inspect
import logging
import typing
import weakref

from .autograd.function import Function
from .autograd.kernel import record_without_derivative
from .core import dtype as dt
from .core.device import device as _device, privateuse1_name
from .core.dispatch_keys import BACKEND_KEYS, DispatchKey
from .core.tensor_impl import TensorImpl
from . import ops
from .ops import op_namespaces
from .ops.dispatcher import redispatch
from .ops.registry import REGISTRY, custom
from .ops.schema import parse_schema
from .library_opcheck import OpCheckError, opcheck  # noqa: F401  (part of the namespace)
from . import library_rules
from .library_rules import get_ctx, get_kernel  # noqa: F401  (part of the namespace)
from .core import user_warnings
from ._functorch.custom_vmap import register_vmap  # noqa: F401  (part of the namespace)

__all__ = ["Library", "CustomOpDef", "custom_op", "define", "impl", "register_kernel", "register_fake",
           "register_autograd", "infer_schema", "fallthrough_kernel", "opcheck", "get_ctx", "get_kernel",
           "impl_abstract", "register_autocast", "register_torch_dispatch", "register_vmap"]
_log = logging.getLogger(__name__)

_KINDS = ("DEF", "IMPL", "FRAGMENT")
_BACKEND_DISPATCH_KEYS = {"CPU": DispatchKey.CPU, "CUDA": DispatchKey.CUDA, "Meta": DispatchKey.Meta,
                          "PrivateUse1": DispatchKey.PrivateUse1}
_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "privateuseone": "PrivateUse1"}
_ALL_BACKENDS = ("CompositeExplicitAutograd", "")  # a kernel for every backend
# the keys whose kernels serve every op, a library's too: __torch_dispatch__, the conjugate / negative bits and
# vmap's batching layer
_EVERY_OP_KEYS = (DispatchKey.Python, DispatchKey.Conjugate, DispatchKey.Negative, DispatchKey.FuncTorchBatched)


def fallthrough_kernel():
    """A dummy kernel standing for "fall through to the next key" in Library.impl (only Autograd may take it)."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


class Library:
    """A set of registrations under one namespace: `define` schemas (kind "DEF" or "FRAGMENT") and `impl` kernels.
    They last as long as the Library object does, as in PyTorch.

    >>> lib = lantern.library.Library("mylib_doc", "DEF")
    >>> lib.define("twice(Tensor x) -> Tensor")
    'twice'
    >>> lib.impl("twice", lambda x: x * 2, "CPU")
    >>> lantern.ops.mylib_doc.twice(lantern.ones(2))
    tensor([2., 2.])
    """

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in _KINDS:
            raise ValueError("Unsupported kind: ", kind)
        if ns == op_namespaces.ATEN and kind == "DEF":
            raise ValueError(ns, " is a reserved namespace. Please try creating a library with another name.")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        ops.NAMESPACES.add(ns)
        self._defined = []   # the op names this library registered
        self._kernels = []   # (op, key) of the kernels it installed
        weakref.finalize(self, _destroy, self._defined, self._kernels)

    def define(self, schema, alias_analysis="", *, tags=()):
        """Register an op with this schema ("name(args) -> returns", in the namespace); returns its name."""
        if self.kind == "IMPL":
            raise RuntimeError(f"define() is not allowed in an IMPL library ({self.ns}); use a DEF or FRAGMENT one")
        parsed = parse_schema(f"{self.ns}::{schema}" if "::" not in schema.partition("(")[0] else schema)
        name = parsed.full_name
        if name in REGISTRY:
            raise RuntimeError(f"Tried to register an operator ({parsed.text}) with the same name and overload name "
                               "multiple times. Each overload's schema should only be registered with a single call "
                               "to def().")
        op = custom(parsed.text, _missing_kernel, _missing_kernel, method=False)
        for key in [k for k in op.kernels if k not in _EVERY_OP_KEYS]:
            del op.kernels[key]  # the op's own kernels come from impl(); none until then
        self._defined.append(name)
        op_namespaces.registry_changed()
        return name.partition("::")[2]

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        """Register fn(*args) as the op's kernel for a dispatch key: "CPU", "Meta", "Autograd",
        "CompositeExplicitAutograd" (every backend) or "CompositeImplicitAutograd" (above autograd: fn's own ops
        record the gradient)."""
        if with_keyset:
            raise NotImplementedError("Library.impl(with_keyset=True): lantern passes no DispatchKeySet to kernels")
        op = _operator(op_name if "::" in op_name else f"{self.ns}::{op_name}")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        for installed in _install(op, fn, key):
            self._kernels.append((op, installed))

    def _destroy(self):
        _destroy(self._defined, self._kernels)

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"


def _destroy(defined, kernels):
    """Undo a library's registrations (when it is garbage-collected)."""
    for op, key in kernels:
        op.kernels.pop(key, None)
    for name in defined:
        library_rules.forget(REGISTRY.pop(name, None))
    kernels.clear()
    defined.clear()
    op_namespaces.registry_changed()


def _operator(qualified):
    try:
        return REGISTRY[qualified]
    except KeyError:
        raise RuntimeError(f"operator {qualified} does not exist: define it first (Library.define or "
                           "lantern.library.custom_op)") from None


def _missing_kernel(*args):
    raise AssertionError("unreachable: a library op's kernels are installed by impl()")


def _install(op, fn, key):
    """Put fn into op.kernels under the dispatch keys `key` names; returns those keys."""
    if fn is fallthrough_kernel:
        if key != "Autograd":
            raise NotImplementedError(f"lantern.library: a fallthrough kernel for {key} (only Autograd falls through)")
        keys = {DispatchKey.Autograd: _fall_through_autograd}
    elif key == "Autograd":
        keys = {DispatchKey.Autograd: lambda op, args, backend: fn(*args)}
    elif key == "CompositeImplicitAutograd":
        keys = {DispatchKey.Autograd: lambda op, args, backend: fn(*args)}
        keys.update((k, _backend_kernel(fn)) for k in BACKEND_KEYS.values())
    elif key in _ALL_BACKENDS:
        keys = {k: _backend_kernel(fn) for k in BACKEND_KEYS.values()}
    elif key in _BACKEND_DISPATCH_KEYS:
        keys = {_BACKEND_DISPATCH_KEYS[key]: _backend_kernel(fn)}
    else:
        raise NotImplementedError(f"lantern.library: no dispatch key {key!r} (lantern has CPU, CUDA, Meta, "
                                  "PrivateUse1, Autograd, CompositeExplicitAutograd and CompositeImplicitAutograd)")
    op.kernels.update(keys)
    return list(keys)


def _backend_kernel(fn):
    """The runner of a kernel registered for a backend: below Autograd, so fn sees its tensors detached (as in
    PyTorch, `x.numpy()` works there); they share storage and version counter with the caller's."""
    def kernel(op, args):
        detached = tuple(a.detach() if isinstance(a, TensorImpl) else a for a in args)
        return _checked_result(op, args, fn(*detached))
    kernel.library_kernel = fn  # what the dispatch trace names
    return kernel


def _fall_through_autograd(op, args, backend):
    return redispatch(op, args, DispatchKey.Autograd)


def _checked_result(op, args, result):
    """PyTorch refuses a custom op's output that is, or shares memory with, one of its inputs."""
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    inputs = [a for a in args if isinstance(a, TensorImpl)]
    for o in outputs:
        if isinstance(o, TensorImpl) and any(o is a or o._storage is a._storage for a in inputs):
            raise RuntimeError(
                f"{op.name}: The output of this custom operator (1) must not also be an input to this custom "
                "operator and (2) may not alias any inputs to this custom operator or other returns. The most "
                "common way to trigger this error is if we have y = custom_op(x) and y and x are the same Tensor. "
                "Please instead return a clone of the offending output tensor(s) (e.g. return x.clone()) or "
                "refactor the custom operator to not return y.")
    return result


# ---- custom_op -------------------------------------------------------------------------------------------------

class CustomOpDef:
    """What `custom_op` returns: callable as the op, with register_fake / register_kernel / register_autograd."""

    def __init__(self, namespace, name, schema, fn, device_types):
        self._namespace, self._name, self._init_fn = namespace, name, fn
        self._backend_fns = {}          # device type (None: every device) -> its kernel
        self._disabled_kernel = set()   # device types whose kernel set_kernel_enabled turned off
        self._lib = Library(namespace, "FRAGMENT")
        self._lib.define(f"{name}{schema}")
        self._lib.impl(name, self._no_autograd, "Autograd")
        self._lib.impl(name, self._no_fake, "Meta")
        self.register_kernel(device_types, fn)
        self._opoverload = getattr(getattr(ops, namespace), name).default

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    def register_kernel(self, device_types, fn=None):
        """fn as the kernel for these device types ("cpu", ("cpu", "meta"), or None: every device)."""
        if fn is None:
            return lambda f: self.register_kernel(device_types, f)
        if device_types is None:
            self._lib.impl(self._name, self._switchable(None, fn), "CompositeExplicitAutograd")
            self._lib.impl(self._name, self._no_fake, "Meta")
        else:
            for device_type in ((device_types,) if isinstance(device_types, str) else device_types):
                self._lib.impl(self._name, self._switchable(device_type, fn), _device_key(device_type))
        return fn

    def _switchable(self, device_type, fn):
        """fn as the kernel of device_type, or the op's own function while set_kernel_enabled turns it off."""
        self._backend_fns[device_type] = fn

        def kernel(*args):
            return (self._init_fn if device_type in self._disabled_kernel else fn)(*args)
        kernel.__qualname__, kernel.__module__ = fn.__qualname__, fn.__module__  # what the dispatch trace names
        return kernel

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type, enabled=True):
        """Turn the kernel registered for device_type off (the op's own function runs instead) or on again; the
        previous state comes back when the `with` block ends."""
        action = "enable" if enabled else "disable"
        was_disabled = device_type in self._disabled_kernel
        if device_type not in self._backend_fns:
            _log.warning("Attempted to %s kernel for %s but no kernel was registered for this device type.",
                         action, device_type)
        if enabled != was_disabled:
            _log.warning("Attempted to %s kernel for %s but it was already %sd.", action, device_type, action)
        (self._disabled_kernel.discard if enabled else self._disabled_kernel.add)(device_type)
        try:
            yield
        finally:
            (self._disabled_kernel.add if was_disabled else self._disabled_kernel.discard)(device_type)

    def register_fake(self, fn):
        """fn(*args) computes the outputs' shapes and dtypes on meta tensors (no data): the op on the meta device."""
        self._lib.impl(self._name, library_rules.meta_kernel(f"{self._namespace}::{self._name}", fn), "Meta")
        return fn

    def register_autograd(self, backward, *, setup_context=None):
        """backward(ctx, *grads) returns one gradient per input (None for non-tensors); setup_context(ctx, inputs,
        output) saves what it needs on ctx. The op then records a GeneratedBackwardFor_<ns>_<name>_default node."""
        function = _autograd_function(self, backward, setup_context)
        self._lib.impl(self._name, lambda *args: function.apply(*args), "Autograd")

    def register_autocast(self, device_type, cast_inputs):
        """Under autocast for device_type, the op's floating inputs on that device (not float64) are cast to
        cast_inputs and the op runs with autocast off; the first registration for a device type stays."""
        library_rules.register_autocast(self._opoverload._op, device_type, cast_inputs)

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        """fn(mode or subclass, func, types, args, kwargs) computes this op for one TorchDispatchMode class or
        __torch_dispatch__ subclass, in place of that class's __torch_dispatch__."""
        if fn is None:
            return lambda f: self.register_torch_dispatch(torch_dispatch_class, f)
        return library_rules.register_torch_dispatch(self._opoverload._op, torch_dispatch_class, fn)

    def _destroy(self):
        """Take the op out of the registry (PyTorch's CustomOpDef._destroy, for tests that define it again)."""
        self._lib._destroy()

    def _no_autograd(self, *args):
        result = redispatch(self._opoverload._op, args, DispatchKey.Autograd)
        return record_without_derivative(self._opoverload._op, args, result, _NO_FORMULA.format(
            qualified=f"{self._namespace}.{self._name}.default"))

    def _no_fake(self, *args):
        raise RuntimeError(f"There was no fake impl registered for {self!r}. This is necessary for lantern's meta "
                           f"device (torch.compile/export/fx tracing in PyTorch) to work. Please use "
                           f"`{self._name}.register_fake` to add an fake impl.")

    def __repr__(self):
        return f"<CustomOpDef({self._namespace}::{self._name})>"


_NO_FORMULA = ("Trying to backward through {qualified} but no autograd formula was registered. Please use "
               "register_autograd to add one.")


def _autograd_function(custom, backward, setup_context):
    """An autograd.Function whose forward runs the op below Autograd (as PyTorch's generated one does)."""
    op = custom._opoverload._op

    def forward(*args):
        return redispatch(op, args, DispatchKey.Autograd)

    namespace = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    if setup_context is not None:
        namespace["setup_context"] = staticmethod(setup_context)
    else:
        namespace["setup_context"] = staticmethod(lambda ctx, inputs, output: None)
    return type(f"GeneratedBackwardFor_{custom._namespace}_{custom._name}_default", (Function,), namespace)


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Wrap fn as the op `namespace::name`, its schema inferred from fn's annotations (or given)."""
    def wrap(func):
        namespace, sep, opname = name.partition("::")
        if not sep:
            raise ValueError(f"custom_op(name=...) wants 'namespace::name', got {name!r}")
        text = schema if schema is not None else infer_schema(func, mutates_args=mutates_args)
        result = CustomOpDef(namespace, opname, text, func, device_types)
        result.__doc__, result.__name__ = func.__doc__, opname
        return result
    return wrap if fn is None else wrap(fn)


def define(qualname, schema, *, lib=None, tags=()):
    """Define an op by name and schema ("(Tensor x) -> Tensor"), as a FRAGMENT library that lives forever."""
    namespace, _, name = qualname.partition("::")
    library = lib if lib is not None else _forever(namespace)
    library.define(name + schema, tags=tags)


def impl(qualname, types, func=None, *, lib=None):
    """Register func as the kernel of the op for device types ("cpu", ...) or a dispatch key ("CPU")."""
    if func is None:
        return lambda f: impl(qualname, types, f, lib=lib)
    namespace, _, name = qualname.partition("::")
    library = lib if lib is not None else _forever(namespace)
    for key in ((types,) if isinstance(types, str) else types):
        library.impl(name, func, _device_key(key) if key in _DEVICE_KEYS or key == privateuse1_name() else key)
    return func


def _device_key(device_type):
    """The dispatch key of a device type's kernels ('cpu' -> 'CPU'; the PrivateUse1 device's, renamed or not)."""
    kind = _device(device_type).type
    return "PrivateUse1" if kind == privateuse1_name() else _DEVICE_KEYS[kind]


def _as_custom(op):
    if isinstance(op, CustomOpDef):
        return op
    raise NotImplementedError(f"lantern.library: {op!r} is not an op made by custom_op (register through its "
                              "Library.impl instead)")


def register_kernel(op, device_types, func=None, /, *, lib=None):
    return _as_custom(op).register_kernel(device_types, func)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1):
    """func computes the op's outputs on meta tensors: a CustomOpDef's, or a Library-defined op's by name."""
    if func is None:
        return lambda f: register_fake(op, f, lib=lib)
    if isinstance(op, CustomOpDef):
        return op.register_fake(func)
    qualname = op if isinstance(op, str) else op.name()
    namespace, _, name = qualname.partition("::")
    library = lib if lib is not None else _forever(namespace)
    library.impl(name, library_rules.meta_kernel(qualname, func), "Meta")
    return func


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """The old name of register_fake (deprecated, as in PyTorch since 2.4)."""
    user_warnings.warn("`torch.library.impl_abstract` was renamed to `torch.library.register_fake`. Please use that "
                  "instead; we will remove `torch.library.impl_abstract` in a future version of PyTorch.",
                  FutureWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib)


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """Cast the op's floating inputs on device_type to cast_inputs under autocast (see
    CustomOpDef.register_autocast); op is a CustomOpDef, a qualified name or an OpOverload."""
    if isinstance(op, CustomOpDef):
        return op.register_autocast(device_type, cast_inputs)
    library_rules.register_autocast(library_rules.resolve(op), device_type, cast_inputs)


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """func(mode or subclass, func, types, args, kwargs) answers op for torch_dispatch_class (see
    CustomOpDef.register_torch_dispatch); op is a CustomOpDef, a qualified name or an OpOverload."""
    if isinstance(op, CustomOpDef):
        return op.register_torch_dispatch(torch_dispatch_class, func)
    if func is None:
        return lambda f: register_torch_dispatch(op, torch_dispatch_class, f, lib=lib)
    return library_rules.register_torch_dispatch(library_rules.resolve(op), torch_dispatch_class, func)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    _as_custom(op).register_autograd(backward, setup_context=setup_context)


_FOREVER = {}


def _forever(namespace):
    if namespace not in _FOREVER:
        _FOREVER[namespace] = Library(namespace, "FRAGMENT")
    return _FOREVER[namespace]


# ---- infer_schema ----------------------------------------------------------------------------------------------

_TYPES = {"Tensor": "Tensor", "int": "SymInt", "float": "float", "bool": "bool", "str": "str",
          "dtype": "ScalarType", "device": "Device", "Number": "Scalar"}


def _type_text(annotation, where):
    """The schema type of an annotation (Tensor, int, float, bool, str, dtype, device, Optional[...],
    Sequence[...] / list[...])."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union and len(args) == 2 and type(None) in args:
        return _type_text(next(a for a in args if a is not type(None)), where) + "?"
    if origin in (list, typing.List) or str(origin) in ("<class 'collections.abc.Sequence'>",):
        return _type_text(args[0], where) + "[]"
    name = getattr(annotation, "__name__", None) or type(annotation).__name__
    if name not in _TYPES:
        raise ValueError(f"infer_schema(func): {where} has unsupported type {annotation}.")
    return _TYPES[name]


def _default_text(value):
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dt.dtype):
        return str(value).rpartition(".")[2]
    return repr(value)


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema text of a function from its type annotations: "(Tensor x, float k=1.0) -> Tensor"."""
    sig = inspect.signature(prototype_function)
    params = []
    for i, p in enumerate(sig.parameters.values()):
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(f"infer_schema(func): Parameter {p.name} must have a type annotation. Got func with "
                             f"signature {sig})")
        text = _type_text(p.annotation, f"Parameter {p.name}")
        if text.startswith("Tensor") and (mutates_args == "unknown" or p.name in mutates_args):
            text = text.replace("Tensor", f"Tensor(a{i}!)", 1)
        params.append(f"{text} {p.name}" + ("" if p.default is inspect.Parameter.empty
                                            else f"={_default_text(p.default)}"))
    ret = sig.return_annotation
    if ret is None or ret is type(None):
        returns = "()"
    elif typing.get_origin(ret) is tuple:
        returns = "(" + ", ".join(_type_text(a, "the return") for a in typing.get_args(ret)) + ")"
    else:
        returns = _type_text(ret, "the return")
    return f"{op_name or ''}({', '.join(params)}) -> {returns}"

