"""torch.set_warn_always: whether the warnings torch gives once per process (ATen's TORCH_WARN_ONCE) are given on
every call instead.

>>> import lantern as torch
>>> torch.is_warn_always_enabled()
False
"""
from . import user_warnings

_warned = set()
_always = [False]


def set_warn_always(b):
    """Give once-per-process warnings every time (True) or only the first time (False, the default)."""
    if type(b) is not bool:
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _always[0] = b


def is_warn_always_enabled():
    return _always[0]


def warn_once(message, category=UserWarning, stacklevel=3):
    """Warn the first time `message` comes up in the process, or every time while set_warn_always(True) holds (the
    warnings given then do not count as the one: turned off again, it warns once more, as torch's)."""
    if _always[0]:
        user_warnings.warn(message, category, stacklevel=stacklevel)
    elif message not in _warned:
        _warned.add(message)
        user_warnings.warn(message, category, stacklevel=stacklevel)
