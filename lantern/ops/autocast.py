"""The Autocast dispatch key: cast an op's inputs as its autocast policy says, then run the op with autocast off.

While `lantern.autocast("cpu")` is on, `tls.autocast` holds the region's lower-precision dtype and the
dispatcher's one hot-path flag (`tls.observed`) sends calls down the slow path, where this key sits above the JIT
tracer and autograd (as PyTorch's AutocastCPU key does). An op with a policy (lantern.ops.autocast_policy) gets its
floating CPU inputs cast, with autocast excluded for the cast and for the op itself, so that the ops it calls
inside run on what they are given; every other op falls through unchanged. Composites and nn.functional forms with
a policy (matmul, linear, conv2d, cross_entropy, ...) get the same stage in front of their Python function.

A float32 leaf that requires grad (a weight) is cast once per autocast region: the copy is cached until the
outermost region ends, and gradients flow back through the cast to the float32 leaf.

>>> a = lantern.ones(2, 2)
>>> set_enabled("cpu", True)
>>> lantern.mm(a, a).dtype, lantern.nn.functional.mse_loss(a.bfloat16(), a).dtype, (a + a).dtype
(lantern.bfloat16, lantern.float32, lantern.float32)
>>> set_enabled("cpu", False)
"""
import contextlib
import functools
import threading

from ..core import dtype as _dtypes
from ..core.dispatch_keys import DispatchKey
from ..core.overridable import overridable
from ..core.state import tls
from ..core.tensor_impl import TensorImpl
from . import registry
from .autocast_policy import call_policy, policy_of
from .dispatcher import call, redispatch, set_autocast_kernel
from .op_kinds import AliasKind


# each device type's default autocast dtype, as PyTorch 2.13 has them (only CPU regions change what lantern computes)
DEFAULT_DTYPES = {
    "cpu": _dtypes.bfloat16, "cuda": _dtypes.float16, "mps": _dtypes.float16, "xpu": _dtypes.float16,
    "hpu": _dtypes.bfloat16, "xla": _dtypes.bfloat16, "mtia": _dtypes.float16, "ipu": _dtypes.float16,
    "maia": _dtypes.bfloat16, "privateuseone": _dtypes.float16,
}


class _AutocastState(threading.local):
    """Autocast's settings, per thread as PyTorch keeps them: enabled and dtype per device type, whether casts of
    weights are cached, how deep autocast regions nest, and the cache (id(leaf) -> (leaf, its cast copy); the leaf
    is held so that its id is not reused while the entry lives)."""

    def __init__(self):
        self.enabled = dict.fromkeys(DEFAULT_DTYPES, False)
        self.dtypes = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}
        self.counted = False   # this thread is counted in registry.count_watching("autocast")


state = _AutocastState()


def set_enabled(device_type, enabled):
    state.enabled[device_type] = enabled
    _sync_dispatch_state()


def set_dtype(device_type, dtype):
    state.dtypes[device_type] = dtype
    _sync_dispatch_state()


def _sync_dispatch_state():
    """Turn the Autocast key on or off for this thread to match the CPU settings."""
    tls.autocast = state.dtypes["cpu"] if state.enabled["cpu"] else None
    tls.refresh()
    on = tls.autocast is not None
    if on != state.counted:
        state.counted = on
        registry.count_watching("autocast", 1 if on else -1)


def _eligible(t):
    """Autocast casts floating CPU tensors, never float64 ones (PyTorch leaves doubles alone)."""
    return (isinstance(t, TensorImpl) and t.dtype.is_floating_point and t.dtype is not _dtypes.float64
            and t._backend.device.type == "cpu")


def _cast(t, dtype):
    if not _eligible(t) or t.dtype is dtype:
        return t
    cacheable = (state.cache_enabled and dtype is not _dtypes.float32 and t.dtype is _dtypes.float32
                 and t._requires_grad and t._grad_fn is None and t._base is None)
    if not cacheable:
        return call(registry.get("_to_copy"), (t, dtype, None, None))
    hit = state.cache.get(id(t))
    if hit is None:
        hit = state.cache[id(t)] = (t, call(registry.get("_to_copy"), (t, dtype, None, None)))
    return hit[1]


def to_region_dtype(t):
    """t cast to the autocast region's dtype when autocast is on and t is eligible (None stays None): for kernels
    that PyTorch runs wholly in low precision, state included (its CPU recurrent layers)."""
    region = tls.autocast
    return t if region is None or t is None else _cast(t, region)


@contextlib.contextmanager
def _autocast_excluded():
    """The Autocast key off in this thread inside the block (PyTorch's ExcludeDispatchKeyGuard); yields the
    region's dtype."""
    region = tls.autocast
    tls.autocast = None
    tls.refresh()
    try:
        yield region
    finally:
        tls.autocast = region
        tls.refresh()


def excluded(fn, *args):
    """fn(*args) with the Autocast key excluded: for kernels autocast does not reach in PyTorch (its CPU GRU)."""
    with _autocast_excluded():
        return fn(*args)


def _cast_value(x, dtype):
    """A tensor, or a list or tuple of tensors, cast to dtype; anything else unchanged."""
    if isinstance(x, TensorImpl):
        return _cast(x, dtype)
    if isinstance(x, (list, tuple)) and any(isinstance(t, TensorImpl) for t in x):
        return type(x)(_cast(t, dtype) if isinstance(t, TensorImpl) else t for t in x)
    return x


def _tensors_of(values):
    for x in values:
        if isinstance(x, TensorImpl):
            yield x
        elif isinstance(x, (list, tuple)):
            yield from (t for t in x if isinstance(t, TensorImpl))


def widest_type(name, region, values):
    """The promote policy's dtype: float32 if any eligible input is float32, else the region's dtype; mixing
    bfloat16 with float16 is an error, as in PyTorch."""
    current = region
    for t in _tensors_of(values):
        if not _eligible(t):
            continue
        if current is _dtypes.float32 or t.dtype is _dtypes.float32:
            current = _dtypes.float32
        elif t.dtype is not region:
            raise RuntimeError(f"Unexpected floating ScalarType in at::autocast::prioritize ({name} under "
                               f"autocast({region.name}) got a {t.dtype.name} input: cast it to "
                               f"{region.name} or float32 first)")
    return current


def target_dtype(policy, name, region, values):
    """The dtype the policy casts floating inputs to."""
    if policy == "lower_precision":
        return region
    if policy == "float32":
        return _dtypes.float32
    return widest_type(name, region, values)


def _policy_of_op(op):
    """An op's policy: its functional form's, by name without the overload; in-place and out= forms have none."""
    return policy_of(op.schema.name) if op.schema.alias in (AliasKind.NEW, AliasKind.VIEW) else None


def autocast_kernel(op, args):
    """The Autocast key's kernel for a registered op: cast per the op's policy, then redispatch below the key (an
    op with its own Autocast kernel, from lantern.library.register_autocast, runs that instead)."""
    own = op.kernels.get(DispatchKey.Autocast)
    if own is not None:
        return own(op, args)
    policy = _policy_of_op(op)
    if policy is None:
        return redispatch(op, args, DispatchKey.Autocast)
    with _autocast_excluded() as region:
        dtype = target_dtype(policy, op.name, region, args)
        positions = op.tensor_positions + op.list_positions
        cast_args = tuple(_cast_value(a, dtype) if i in positions else a for i, a in enumerate(args))
        return redispatch(op, cast_args, DispatchKey.Autocast)


def explain(op):
    """Why the Autocast key is in a call's key set (None when it is not): for the dispatch trace."""
    region = tls.autocast
    policy = _policy_of_op(op)
    if region is None or policy is None:
        return None
    runs_in = {"lower_precision": region.name, "float32": "float32", "promote": "the widest input type"}[policy]
    return f"autocast(cpu, {region.name}) is on: {op.schema.name} runs in {runs_in}"


def run_with_policy(name, fn, args, kwargs):
    """One call of the Python function `fn` (the composite or nn.functional form `name`) under autocast."""
    policy = call_policy(name, args, kwargs)
    if policy is None:
        return fn(*args, **kwargs)
    with _autocast_excluded() as region:
        dtype = target_dtype(policy, name, region, list(args) + list(kwargs.values()))
        args = tuple(_cast_value(a, dtype) for a in args)
        kwargs = {k: _cast_value(v, dtype) for k, v in kwargs.items()}
        return fn(*args, **kwargs)


def stage(name, fn):
    """`fn` (a composite or a Python function named `name`) with the Autocast key in front: off, one flag test.

    nn.functional's and linalg's plain functions with a policy are wrapped by this; registry.observed calls it
    only on its watched path (which autocast turns on), so composites pay nothing for it when autocast is off.
    A function carrying the `__torch_function__` check keeps it in front (lantern.core.overridable)."""
    if hasattr(fn, "unchecked"):
        return overridable(stage(name, fn.unchecked))

    @functools.wraps(fn)
    def autocast_stage(*args, **kwargs):
        if tls.autocast is None:
            return fn(*args, **kwargs)
        return run_with_policy(name, fn, args, kwargs)
    return autocast_stage


set_autocast_kernel(autocast_kernel, explain)
