"""The Python dispatch key (PyTorch's `Python`): `__torch_dispatch__` of tensor subclasses and of dispatch modes.

It sits below Autograd and above the backends. A call reaches it in two ways:
- an input is a wrapper subclass (made by `Tensor._make_wrapper_subclass`): such a tensor's backend is a
  `WrapperBackend`, whose key is Python, so the dispatcher's ordinary key choice lands here;
- a `TorchDispatchMode` is on (lantern.utils._python_dispatch): the mode stack makes `tls.observed` true, and the
  observed path's redispatch puts every call's backend behind a `ModeBackend` whose key is Python.
Autograd (above) has already recorded the call when it gets here, and composites (Python functions over ops)
have already decomposed: a handler sees the ops the registry runs, as torch's sees ATen ops after autograd.

The kernel hands the call to the innermost mode (popped while its handler runs, as torch does), else to the
subclasses' `__torch_dispatch__`, one by one, until one returns something other than NotImplemented. `func` is
the op's `lantern.ops.aten.<name>.<overload>` object; calling it runs the op again from the top of the dispatcher.
Handlers run with grad mode off: torch excludes the Autograd key below itself; lantern's generated entries read
grad mode for that.

>>> import lantern
>>> from lantern.utils._python_dispatch import TorchDispatchMode
>>> class Names(TorchDispatchMode):
...     def __torch_dispatch__(self, func, types, args=(), kwargs=None):
...         print(func)
...         return func(*args, **(kwargs or {}))
>>> with Names():
...     y = lantern.ones(2) * 3
aten.ones.default
aten.mul.default
"""
import functools

from ..core.device import device as _device
from ..core.dispatch_keys import DispatchKey
from ..core.layout import strided
from ..core.state import tls
from ..core import dtype as dt, tensor_impl
from ..core.tensor_impl import TensorImpl, contiguous_strides
from . import dispatcher, factory, registry
from .op_kinds import OpKind
from .op_namespaces import overload_of
from .schema import parse_schema


class WrapperBackend:
    """The backend of wrapper subclasses on one device and layout: its key is Python, it holds no memory (the
    subclass keeps whatever it wraps), and anything that asks it for an array gets an error naming the subclass."""

    key = DispatchKey.Python
    xp = None

    def __init__(self, device, layout):
        self.device, self.layout = device, layout

    def array(self, t):
        raise RuntimeError(f"a {type(t).__name__} (a wrapper subclass) has no data of its own: lantern reads "
                           "values only through its __torch_dispatch__, or through the tensors it wraps")

    array_or_none = host_array = array

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise TypeError(f"a wrapper subclass's backend has no {name}(): its __torch_dispatch__ computes its ops")

    def __repr__(self):
        return f"<lantern Python-key backend of wrapper subclasses on {self.device} ({self.layout.name})>"


class ModeBackend:
    """A backend seen through the dispatch modes: key Python (so the mode's handler runs), everything else the
    backend's own."""

    key = DispatchKey.Python

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __repr__(self):
        return f"<{self.inner!r} behind the dispatch modes>"


_WRAPPER_BACKENDS = {}
_MODE_BACKENDS = {}


def wrapper_backend(device, layout=strided):
    return _WRAPPER_BACKENDS.setdefault((device, layout), WrapperBackend(device, layout))


def mode_backend(backend):
    """`backend` behind the dispatch modes (the observed path's redispatch asks while a mode is on)."""
    proxy = _MODE_BACKENDS.get(backend)
    if proxy is None:
        proxy = _MODE_BACKENDS[backend] = ModeBackend(backend)
    return proxy


class _NoData:
    """A wrapper subclass's storage: no memory. data_ptr() is 0, as torch's; anything else fails."""

    _gen = 0

    def data_ptr(self):
        return 0

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError("The tensor has a non-zero number of elements, but its data is not allocated yet "
                           f"(asked for .{name} of a wrapper subclass's storage: it has none; its "
                           "__torch_dispatch__ computes on the tensors it wraps)")


def make_wrapper_subclass(cls, size, strides=None, storage_offset=None, memory_format=None, dtype=None,
                          layout=strided, device=None, pin_memory=False, requires_grad=False, dispatch_sizes_strides_policy=None,
                          dispatch_device=False, dispatch_layout=False, _extra_dispatch_keys=None,
                          storage_size=None):
    """Tensor._make_wrapper_subclass: an instance of `cls` with these sizes, strides, dtype and device and no
    data; every op on it reaches cls.__torch_dispatch__ (below autograd).

    >>> import lantern
    >>> class Shape(lantern.Tensor):
    ...     @classmethod
    ...     def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
    ...         return NotImplemented
    >>> s = lantern.Tensor._make_wrapper_subclass(Shape, (2, 3), dtype=lantern.float16)
    >>> type(s).__name__, s.shape, s.stride(), s.dtype, s.device
    ('Shape', lantern.Size([2, 3]), (3, 1), lantern.float16, device(type='cpu'))
    """
    tensor = tensor_impl.tensor_class  # lantern.Tensor (the tensor layer, above ops, registers it)
    if not (isinstance(cls, type) and issubclass(cls, tensor)):
        raise TypeError(f"_make_wrapper_subclass: cls must be a subclass of Tensor, got {cls!r}")
    if cls.__torch_dispatch__ is tensor.__torch_dispatch__:
        raise TypeError(f"{cls.__name__} must define __torch_dispatch__")
    size = tuple(int(n) for n in size)
    t = object.__new__(cls)
    t._storage = _NoData()
    t._size = size
    t._stride = contiguous_strides(size) if strides is None else tuple(int(s) for s in strides)
    t._offset = 0 if storage_offset is None else int(storage_offset)
    t.dtype = dt.get_default_dtype() if dtype is None else dtype
    t._backend = wrapper_backend(_device("cpu" if device is None else device), layout)
    t._nd, t._nd_gen, t._vc, t._base = None, 0, [0], None
    if requires_grad:
        t.requires_grad_(True)
    return t


_AUTOGRAD_SLOT = frozenset(("_requires_grad", "_grad_fn", "_is_inference", "_grad", "_output_nr", "_autograd"))


def alias(t):
    """A new object of t's wrapper subclass with t's metadata and attributes (what it wraps), without t's
    history: what autograd keeps of a saved output (a plain tensor's is lantern.core.tensor_impl.make_tensor's)."""
    a = object.__new__(type(t))
    a._storage, a._size, a._stride, a._offset, a.dtype = t._storage, t._size, t._stride, t._offset, t.dtype
    a._backend, a._nd, a._nd_gen, a._vc, a._base = t._backend, t._nd, t._nd_gen, t._vc, t._base
    a.__dict__.update((k, v) for k, v in t.__dict__.items() if k not in _AUTOGRAD_SLOT)
    return a


def is_wrapper(t):
    return isinstance(t, TensorImpl) and t._backend.key is DispatchKey.Python


def disabled_torch_dispatch_impl(func, types, args=(), kwargs=None):
    """Tensor.__torch_dispatch__: plain tensors have none (torch's _disabled_torch_dispatch_impl)."""
    raise RuntimeError(f"{func}: Tensor.__torch_dispatch__ is the disabled default; a subclass that wants ops "
                       "must define its own")


# ---- the kernel -----------------------------------------------------------------------------------------------
def python_key_kernel(op, args):
    """The Python key's kernel for every op: the innermost mode's handler, else the subclasses' handlers."""
    func = overload_of(op)
    positional, kwargs = _split(op, args)
    types = _handler_types(op, args)
    grad_was = tls.grad_enabled
    tls.grad_enabled = False
    try:
        modes = tls.dispatch_modes
        if modes:
            mode = modes[-1]
            with _popped_mode():
                result = _handler(op, mode)(func, types, positional, kwargs)
            if result is not NotImplemented:
                return result
        for cls in types:
            result = _handler(op, cls)(func, types, positional, kwargs)
            if result is not NotImplemented:
                return result
    finally:
        tls.grad_enabled = grad_was
    tried = "".join(f"\n  - tensor subclass {cls}" for cls in types)
    raise TypeError(f"Multiple dispatch failed for 'lantern.ops.{func}'; all __torch_dispatch__ handlers returned "
                    f"NotImplemented:\n{tried}\n\nFor more information, try re-running with "
                    "TORCH_LOGS=not_implemented")


# {op: {mode class or subclass: rule(mode or subclass, func, types, args, kwargs)}}, which answers the op for
# exactly that class in place of its __torch_dispatch__ (lantern.library.register_torch_dispatch adds them)
TORCH_DISPATCH_RULES = {}


def _handler(op, owner):
    """The handler of `op` for a mode or a subclass: its registered rule, else its __torch_dispatch__."""
    rules = TORCH_DISPATCH_RULES.get(op)
    rule = rules and rules.get(owner if isinstance(owner, type) else type(owner))
    return owner.__torch_dispatch__ if rule is None else functools.partial(rule, owner)


class _popped_mode:
    """The innermost mode off the stack while its handler runs, so that the ops it calls reach the modes below."""

    def __enter__(self):
        self.stack = tls.dispatch_modes
        set_mode_stack(self.stack[:-1])

    def __exit__(self, *exc):
        set_mode_stack(self.stack)


def set_mode_stack(modes):
    """Install `modes` (a tuple, innermost last) as this thread's dispatch modes."""
    tls.dispatch_modes = tuple(modes)
    tls.refresh()


def _tensor_arguments(op, args):
    for i in op.tensor_positions:
        yield args[i]
    for i in op.list_positions:
        yield from args[i]


def _handler_types(op, args):
    """The wrapper subclasses among the arguments, each once, a subclass before its parents (torch's order)."""
    types = []
    for a in _tensor_arguments(op, args):
        if is_wrapper(a) and type(a) not in types:
            cls = type(a)
            parent = next((i for i, t in enumerate(types) if issubclass(cls, t)), len(types))
            types.insert(parent, cls)
    return tuple(types)


def _split(op, args):
    """Schema-order args as torch hands them to a handler: (positional, kwargs), keyword-only arguments as
    kwargs, and defaulted arguments left out where they still hold their default."""
    params = op.schema.args
    positional = [a for p, a in zip(params, args) if not p.kwarg_only]
    while positional and _is_default(params[len(positional) - 1], positional[-1]):
        positional.pop()
    kwargs = {p.name: a for p, a in zip(params, args) if p.kwarg_only and not _is_default(p, a)}
    return tuple(positional), kwargs


def _is_default(param, value):
    if param.required or isinstance(value, TensorImpl):
        return False
    default = param.default
    return value is default or (type(value) is type(default) and value == default)


registry.on_register(lambda op: op.kernels.setdefault(DispatchKey.Python, python_key_kernel))
dispatcher.set_mode_backend(mode_backend)


# ---- ops lantern runs outside the registry for plain tensors -------------------------------------------------------
def _outside_registry(schema, run):
    """An op that plain tensors run as the Python function `run` (no dispatch), kept as an Operator so that a
    wrapper subclass's handler is asked for it by name and can call it on the tensors it wraps."""
    op = registry.Operator(parse_schema(schema), OpKind.CUSTOM)
    op.kernels = {key: lambda op, args: run(*args) for key in DispatchKey}
    op.kernels[DispatchKey.Python] = python_key_kernel
    return op


_DETACH = _outside_registry("detach(Tensor(a) self) -> Tensor(a)", lambda t: t.detach())
_ONES_LIKE = _outside_registry("ones_like(Tensor self) -> Tensor", lambda t: factory.ones_like(t))


_LOCAL_SCALAR_DENSE = _outside_registry("_local_scalar_dense(Tensor self) -> Scalar", lambda t: t.item())


def local_scalar_dense(t):
    """item() of a wrapper subclass (and float(), bool(), ...): what its handler returns for
    `lantern.ops.aten._local_scalar_dense.default`, as torch asks it."""
    return python_key_kernel(_LOCAL_SCALAR_DENSE, (t,))


def detach(t):
    """Tensor.detach of a wrapper subclass: what its handler returns for `lantern.ops.aten.detach.default`."""
    return python_key_kernel(_DETACH, (t,))


def ones_like(t):
    """The seed gradient of a wrapper subclass's backward(): its handler's `lantern.ops.aten.ones_like.default`
    (torch's engine seeds with ones_like too; lantern's ones_like is a composite that makes a plain tensor)."""
    return python_key_kernel(_ONES_LIKE, (t,))
