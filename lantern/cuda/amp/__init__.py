"""torch.cuda.amp: the deprecated CUDA spellings of torch.amp, kept as PyTorch keeps them. Each is lantern.amp's
with device_type 'cuda' (and PyTorch's FutureWarning); with no CUDA here, the scaler and the autocast region
disable themselves with lantern.amp's warning, as in PyTorch's CPU build, so `GradScaler(enabled=False)` and
`with torch.cuda.amp.autocast(enabled=False):` run unchanged.

>>> scaler = lantern.cuda.amp.GradScaler(enabled=False)
>>> scaler.is_enabled(), lantern.cuda.amp.amp_definitely_not_available()
(False, True)
"""
import functools
import warnings

from ... import amp as _amp
from ...core import dtype as _dt

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"]


def amp_definitely_not_available():
    """True when neither CUDA nor XLA can run autocast: always, here."""
    return True


def _deprecated(old, new):
    warnings.warn(f"`torch.cuda.amp.{old}` is deprecated. Please use `torch.amp.{new}` instead.", FutureWarning,
                  stacklevel=3)


class autocast(_amp.autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True): torch.amp.autocast('cuda', ...)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        _deprecated("autocast(args...)", "autocast('cuda', args...)")
        super().__init__("cuda", dtype=_dt.float16 if dtype is None else dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """torch.cuda.amp.GradScaler(...): torch.amp.GradScaler('cuda', ...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        _deprecated("GradScaler(args...)", "GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.amp.custom_fwd(device_type='cuda')."""
    _deprecated("custom_fwd(args...)", "custom_fwd(args..., device_type='cuda')")
    if fwd is None:
        return functools.partial(_amp.custom_fwd, device_type="cuda", cast_inputs=cast_inputs)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """torch.amp.custom_bwd(device_type='cuda')."""
    _deprecated("custom_bwd(args...)", "custom_bwd(args..., device_type='cuda')")
    if bwd is None:
        return functools.partial(_amp.custom_bwd, device_type="cuda")
    return _amp.custom_bwd(bwd, device_type="cuda")
