"""Warnings that name the user's line: `warnings.warn`, with the `__torch_function__` checks of lantern's public
functions (lantern.core.overridable) not counted as frames, so `stacklevel` means what it would without them.

>>> import warnings
>>> from lantern.core.overridable import overridable
>>> @overridable
... def public():
...     warn("careful", UserWarning, stacklevel=2)
>>> def caller():
...     public()
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     caller()
>>> caught[0].filename == caller.__code__.co_filename, caught[0].lineno
(True, 2)
"""
import sys
import warnings

_SKIPPED = set()  # code objects of the checking wrappers (lantern.core.overridable adds its one)


def skip_frames_of(code):
    """Frames running `code` are not counted by stacklevel."""
    _SKIPPED.add(code)


def warn(message, category=None, stacklevel=1, source=None):
    """warnings.warn(message, category, stacklevel), counting only frames that are no checking wrapper's."""
    frame = sys._getframe(1)
    remaining = stacklevel - 1
    while frame.f_back is not None and (remaining > 0 or frame.f_code in _SKIPPED):
        if frame.f_code not in _SKIPPED:
            remaining -= 1
        frame = frame.f_back
    if isinstance(message, Warning):
        category = message.__class__
    category = category or UserWarning
    module_globals = frame.f_globals
    registry = module_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module_globals.get("__name__", "<string>"), registry, source=source)
