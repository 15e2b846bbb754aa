"""Switches kept as module attributes, the way torch.backends modules keep them: `set_flags(...)` returns the old
values and `flags(...)` is a context that restores them. lantern's kernels (NumPy) read none of them; they exist so
that a program sets them and reads them back as on PyTorch.

>>> settings = {"enabled": True, "deterministic": False}
>>> set_module_flags(settings, ("enabled", "deterministic"), (None, True)), settings["deterministic"]
((True, False), True)
"""
import contextlib


def set_module_flags(namespace, names, new):
    """Set namespace[name] for each value given (None keeps it); returns the old values in `names` order."""
    before = tuple(namespace[name] for name in names)
    for name, value in zip(names, new):
        if value is not None:
            namespace[name] = value
    return before


@contextlib.contextmanager
def flags_context(namespace, names, new):
    """A context with the flags set to `new`, restored to what they were after."""
    before = set_module_flags(namespace, names, new)
    try:
        yield
    finally:
        namespace.update(zip(names, before))  # every old value, None included
