"""The rest of torch.library: fake-kernel context, kernels by key, autocast and __torch_dispatch__ rules.

- `get_ctx()`: the context a fake function asks for data-dependent output sizes. lantern's meta device is
  PyTorch's meta device (no FakeTensors, no shape environment), so there, as in PyTorch, asking for it is an error
  that says so; outside a fake function it is None.
- `get_kernel(op, key)`: the kernel an op runs at one dispatch key, callable with `call_boxed`.
- `autocast_rule`: the Autocast-key kernel `register_autocast` installs: floating inputs on the device type cast to
  the registered dtype while that device's autocast is on, then the op below the key.
- `TORCH_DISPATCH_RULES` (in lantern/ops/python_key.py): the rules `register_torch_dispatch` adds, which the
  Python key runs in place of one mode class's or subclass's `__torch_dispatch__` for one op.

>>> import lantern
>>> lantern.library.get_ctx() is None
True
>>> lantern.library.get_kernel("aten::sin", "CPU").call_boxed(None, lantern.zeros(2))
tensor([0., 0.])
"""
import contextlib

from .amp.autocast_mode import _cast_inputs
from .amp.state import _autocast_type, is_autocast_available
from .core.dispatch_keys import DispatchKey
from .ops import autocast
from .ops.dispatcher import redispatch
from .ops.op_namespaces import OpOverload, overload_of, registered_name
from .ops.python_key import TORCH_DISPATCH_RULES
from .ops.registry import REGISTRY

# ---- get_ctx --------------------------------------------------------------------------------------------------

_ctx_getter = [lambda: None]


@contextlib.contextmanager
def _ctx_getter_set(getter):
    previous = _ctx_getter[0]
    _ctx_getter[0] = getter
    try:
        yield
    finally:
        _ctx_getter[0] = previous


def get_ctx():
    """The fake-function context (PyTorch's FakeImplCtx, whose new_dynamic_size makes a data-dependent size).

    Outside a fake function it is None; inside one that runs on the meta device it raises, as in PyTorch: meta
    tensors cannot stand for outputs whose size depends on data (PyTorch's FakeTensors can; lantern has none)."""
    return _ctx_getter[0]()


def meta_kernel(qualname, fn):
    """fn as the op's meta-device kernel: get_ctx() inside it refuses, naming the op."""
    def refuse():
        raise RuntimeError(
            f"{qualname} ({fn.__module__}.{fn.__qualname__}): You're trying to run this operator with meta Tensors "
            "(as opposed to FakeTensors), but this operator may return an output Tensor with data-dependent shape. "
            "Meta Tensors don't support operators with outputs that have data-dependent shapes but FakeTensors do. "
            "If your operator does not return an output with data-dependent shape, make sure the FakeTensor and/or "
            "meta kernel does not call torch.library.get_ctx(). lantern has no FakeTensors: such an operator "
            "cannot run on the meta device.")

    def kernel(*args):
        with _ctx_getter_set(refuse):
            return fn(*args)
    return kernel


# ---- get_kernel -----------------------------------------------------------------------------------------------

class SafeKernelFunction:
    """One op's kernel at one dispatch key. `call_boxed(keyset, *args, **kwargs)` runs it on the arguments as the
    op takes them; lantern's kernels take no dispatch key set, so `keyset` is only there for PyTorch's signature."""

    def __init__(self, op, key):
        self._op, self._key = op, key

    def call_boxed(self, keyset, *args, **kwargs):
        kernel = self._op.kernels.get(self._key)
        if kernel is None:
            raise NotImplementedError(f"Could not run '{self._op.name}' with arguments from the '{self._key.name}' "
                                      f"backend: it has no {self._key.name} kernel")
        return kernel(self._op, overload_of(self._op).bind(args, kwargs))

    def __repr__(self):
        return f"SafeKernelFunction(debug='the {self._key.name} kernel of {self._op.name} in lantern')"


_NOT_BOXED = (DispatchKey.Autograd, DispatchKey.Tracer, DispatchKey.Autocast)


def get_kernel(op, dispatch_key):
    """The kernel `op` ("aten::sin", "mylib::foo" or an OpOverload) runs at `dispatch_key` (a DispatchKey or its
    name: "CPU", "Meta", "Python", ...)."""
    if isinstance(op, OpOverload):
        operator = op._op
    elif isinstance(op, str):
        operator = _lookup(op)
    else:
        raise ValueError(f"get_kernel({op}): got unexpected type for op: {type(op)}")
    if isinstance(dispatch_key, str):
        try:
            dispatch_key = DispatchKey[dispatch_key]
        except KeyError:
            raise ValueError(f"Invalid dispatch key: {dispatch_key}") from None
    if dispatch_key in _NOT_BOXED:
        raise NotImplementedError(f"get_kernel(..., {dispatch_key.name}): lantern's {dispatch_key.name} key runs "
                                  "one kernel for every op, not a kernel per op; ask for a backend key (CPU, Meta, ...)")
    return SafeKernelFunction(operator, dispatch_key)


def _lookup(qualname):
    namespace, sep, rest = qualname.partition("::")
    if not sep:
        raise ValueError(f"Expected a qualified name 'namespace::name', got {qualname!r}")
    name, _, overload = rest.partition(".")
    operator = REGISTRY.get(registered_name(namespace, name, overload))
    if operator is None:
        raise RuntimeError(f"operator {qualname} does not exist")
    return operator


# ---- register_autocast ----------------------------------------------------------------------------------------

def check_autocast_device(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if not is_autocast_available(device_type):
        raise ValueError(f"Device type '{device_type}' does not support autocast.")


def autocast_rule(casts):
    """The Autocast-key kernel of an op with registered casts ({device type: dtype}): the inputs on each device
    type whose autocast is on cast to its dtype, then the op below the key (the kernel runs only while CPU
    autocast is on: lantern's only autocast that computes)."""
    def kernel(op, args):
        for device_type, dtype in casts.items():
            if autocast.state.enabled[device_type]:
                args = _cast_inputs(args, device_type, dtype)
        return redispatch(op, args, DispatchKey.Autocast)
    return kernel


def register_autocast(op, device_type, cast_inputs):
    """Add the cast to the op's Autocast-key rule (the first registration for a device type stays, as in PyTorch's
    CustomOpDef)."""
    check_autocast_device(device_type)
    casts = getattr(op.kernels.get(DispatchKey.Autocast), "casts", None)
    if casts is None:
        casts = {}
        kernel = autocast_rule(casts)
        kernel.casts = casts
        op.kernels[DispatchKey.Autocast] = kernel
    casts.setdefault(_autocast_type(device_type), cast_inputs)


# ---- register_torch_dispatch ----------------------------------------------------------------------------------

def register_torch_dispatch(op, torch_dispatch_class, fn):
    """fn(mode or subclass, func, types, args, kwargs) answers `op` for this one TorchDispatchMode class or tensor
    subclass (exactly that class, not its subclasses) in place of its __torch_dispatch__."""
    TORCH_DISPATCH_RULES.setdefault(op, {})[torch_dispatch_class] = fn
    return fn


def forget(op):
    """Drop the rules of an op that is gone (its Library was destroyed)."""
    TORCH_DISPATCH_RULES.pop(op, None)


def resolve(op):
    """The registered Operator of a qualified name or an OpOverload."""
    return op._op if isinstance(op, OpOverload) else _lookup(op)


__all__ = ["get_ctx", "get_kernel", "SafeKernelFunction"]
