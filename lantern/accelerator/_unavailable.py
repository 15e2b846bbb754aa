"""What every device question answers in a build without an accelerator: PyTorch's RuntimeError.

>>> _no_accelerator()
RuntimeError('Cannot access accelerator device when none is available.')
"""


def _no_accelerator():
    return RuntimeError("Cannot access accelerator device when none is available.")


def _needs_accelerator(name, doc):
    def fn(*args, **kwargs):
        raise _no_accelerator()
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{doc}\n\nWithout an accelerator: RuntimeError, as in PyTorch's CPU build."
    return fn
