"""torch.autocast: regions (and decorated functions) where ops run in the precision their autocast policy names.

Inside `autocast("cpu")` matrix products and convolutions run in bfloat16 (or float16 with dtype=), losses and
other precision-sensitive ops in float32, cat/stack in the widest input type, everything else as given
(lantern.ops.autocast_policy lists them). Regions nest; each restores the settings it found. The casts are
recorded by autograd, so gradients reach float32 leaves in float32.

>>> layer = lantern.nn.Linear(4, 3)
>>> with lantern.autocast("cpu"):
...     y = layer(lantern.ones(2, 4))
...     loss = lantern.nn.functional.mse_loss(y, lantern.zeros(2, 3))
>>> y.dtype, loss.dtype
(lantern.bfloat16, lantern.float32)
>>> loss.backward(); layer.weight.grad.dtype
lantern.float32
"""
import functools

from ..core import dtype as _dtypes
from ..core.tensor_impl import TensorImpl
from . import state as _state
from .state import is_autocast_available
from ..core import user_warnings

__all__ = ["autocast_decorator", "autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_SUPPORTED_DTYPES = (_dtypes.bfloat16, _dtypes.float16)


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast


class autocast:
    """autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context manager or decorator.

    dtype: the lower precision (default: get_autocast_dtype(device_type), bfloat16 on the CPU); the CPU takes
    bfloat16 or float16 and disables autocast with a warning otherwise. A CUDA region on a machine without CUDA is
    disabled with a warning, as in PyTorch's CPU build. cache_enabled: cast each float32 weight once per region
    (default: is_autocast_cache_enabled())."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = _state.get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = _state.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if device_type == "cuda":
                user_warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in _SUPPORTED_DTYPES:
                name = device_type.upper()
                supported = ", ".join(map(str, _SUPPORTED_DTYPES))
                user_warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of {supported} currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = _state.is_autocast_cache_enabled()
        self.prev = _state.is_autocast_enabled(self.device)
        self.prev_fastdtype = _state.get_autocast_dtype(self.device)
        _state.set_autocast_enabled(self.device, self._enabled)
        _state.set_autocast_dtype(self.device, self.fast_dtype)
        _state.autocast_increment_nesting()
        _state.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if _state.autocast_decrement_nesting() == 0:   # the outermost region ends: its cached casts go
            _state.clear_autocast_cache()
        _state.set_autocast_enabled(self.device, self.prev)
        _state.set_autocast_dtype(self.device, self.prev_fastdtype)
        _state.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to use autocast "
                f"as a context manager? For example:\n    with torch.autocast(device_type=...):\n"
                f"        output = model(input)")
        return autocast_decorator(self, func)


def _cast_inputs(value, device_type, dtype):
    """Floating tensors on device_type (not float64) in value, which may be nested lists, tuples and dicts, cast
    to dtype."""
    if isinstance(value, TensorImpl):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not \
            _dtypes.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, dict):
        return {k: _cast_inputs(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate a custom autograd Function's forward: with cast_inputs, inside an autocast region its floating
    inputs are cast to cast_inputs and forward runs with autocast off; without, forward runs under the current
    autocast state (and custom_bwd runs backward under the same)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = _state.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = _state.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not _state.is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast_inputs(args, device_type, cast_inputs),
                       **_cast_inputs(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate a custom autograd Function's backward: it runs under the autocast state its forward saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd

