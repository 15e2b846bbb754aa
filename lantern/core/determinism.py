"""Deterministic-algorithm mode (torch.use_deterministic_algorithms and its readers).

lantern's CPU kernels are NumPy calls and give the same answer on every run; the mode still does on lantern what it
does on PyTorch's CPU build: the operations torch has no deterministic kernel for raise (or, with warn_only, warn),
and uninitialised memory (empty, empty_like, empty_strided, new_empty, resize_ growth) is filled with NaN or the
dtype's largest integer while `torch.utils.deterministic.fill_uninitialized_memory` is on, so that reading it
shows.

>>> import lantern as torch
>>> torch.use_deterministic_algorithms(True)
>>> torch.empty(2).tolist(), torch.get_deterministic_debug_mode()
([nan, nan], 2)
>>> torch.use_deterministic_algorithms(False)
"""
import math
import threading

import numpy as np

from . import dtype as dt
from . import user_warnings


class _State:
    """Process-wide, as torch's global context (not per thread)."""
    enabled = False
    warn_only = False
    fill_uninitialized_memory = True


_state = _State()
_lock = threading.Lock()
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Turn deterministic-algorithm mode on (`mode=True`) or off; with warn_only, nondeterministic operations warn
    instead of raising."""
    if type(mode) is not bool:
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if type(warn_only) is not bool:
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    with _lock:
        _state.enabled, _state.warn_only = mode, warn_only


def are_deterministic_algorithms_enabled():
    return _state.enabled


def is_deterministic_algorithms_warn_only_enabled():
    return _state.warn_only


def set_deterministic_debug_mode(debug_mode):
    """The same switch by level: "default" (0) off, "warn" (1) on with warn_only, "error" (2) on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif type(debug_mode) is not int:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """0 when the mode is off, 1 when it warns, 2 when it raises."""
    if not _state.enabled:
        return 0
    return 1 if _state.warn_only else 2


def fills_uninitialized_memory():
    """Whether new uninitialised memory is filled now (the mode on, and the fill switch on)."""
    return _state.enabled and _state.fill_uninitialized_memory


def set_fill_uninitialized_memory(value):
    if type(value) is not bool:
        raise RuntimeError(f"expected a bool, but got {type(value).__name__}")
    _state.fill_uninitialized_memory = value


def get_fill_uninitialized_memory():
    return _state.fill_uninitialized_memory


def uninitialized_fill_value(dtype):
    """What deterministic mode writes into uninitialised memory of `dtype`: NaN, or the largest integer."""
    if dtype is dt.bool:
        return True
    if dtype.is_floating_point or dtype.is_complex:
        return math.nan
    return int(np.iinfo(dtype.np).max)


def alert_not_deterministic(caller):
    """Called by an operation torch has no deterministic kernel for: raises (or warns, with warn_only) while the
    mode is on."""
    if not _state.enabled:
        return
    if _state.warn_only:
        user_warnings.warn(f"{caller} does not have a deterministic implementation, but you set "
                      "'torch.use_deterministic_algorithms(True, warn_only=True)'.", UserWarning, stacklevel=3)
        return
    raise RuntimeError(f"{caller} does not have a deterministic implementation, but you set "
                       "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for this "
                       "operation, or you can use the 'warn_only=True' option, if that's acceptable for your "
                       "application.")
