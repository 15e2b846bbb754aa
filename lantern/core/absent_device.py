"""How PyTorch's CPU build answers calls that need a device it does not have, so that lantern answers alike.

torch.cuda, torch.xpu and torch.mps keep their names in a CPU build; most of their functions fail, each with the
error the CPU build raises (a program's `try`/`except` and its `if torch.cuda.is_available()` checks see the same):

- `needs(...)`: AssertionError 'Torch not compiled with CUDA enabled' (torch's `_lazy_init` check);
- `unbound(...)`: AttributeError, where the CPU build lacks the C binding (torch.cuda.set_device,
  reset_peak_memory_stats);
- `dummy_class_error(...)`: RuntimeError 'Tried to instantiate dummy base class Event' (classes whose C base is a
  placeholder in a CPU build).

>>> current_device = needs("CUDA", "current_device", "The index of the selected CUDA device.", __name__)
>>> current_device()
Traceback (most recent call last):
AssertionError: Torch not compiled with CUDA enabled
"""
from .device import not_compiled_error


def _named(fn, name, doc, module):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = module
    return fn


def needs(backend, name, doc, module):
    """A function called `name` that, whatever its arguments, raises the CPU build's 'not compiled' error."""
    def fn(*args, **kwargs):
        raise not_compiled_error(backend)
    return _named(fn, name, f"{doc}\n\nPyTorch's CPU build has no {backend}: AssertionError('Torch not compiled with "
                            f"{backend} enabled').", module)


def unbound_error(backend, binding, doc):
    """The AttributeError of a CPU build whose C binding `binding` (for what `doc` says) is missing."""
    return AttributeError(f"module 'torch._C' has no attribute '{binding}' (this build has no {backend}; lantern, "
                          f"like PyTorch's CPU build, cannot {doc[0].lower()}{doc[1:].rstrip('.')})")


def unbound(backend, name, binding, doc, module):
    """A function that raises AttributeError, as the CPU build's does where its C binding `binding` is missing."""
    def fn(*args, **kwargs):
        raise unbound_error(backend, binding, doc)
    return _named(fn, name, f"{doc}\n\nPyTorch's CPU build lacks the binding: AttributeError.", module)


def needs_nvml(name, doc, module):
    """A GPU sensor reading (temperature, utilization, ...): PyTorch reads it through nvidia-ml-py, absent here."""
    def fn(*args, **kwargs):
        raise ModuleNotFoundError("nvidia-ml-py does not seem to be installed or it can't be imported (and lantern "
                                  "has no CUDA GPU to read it from).")
    return _named(fn, name, f"{doc}\n\nModuleNotFoundError, as in PyTorch's CPU build without nvidia-ml-py.", module)


def dummy_class_error(name):
    """The RuntimeError of a class whose C base is a placeholder in the CPU build (Event, CUDAGraph, MemPool)."""
    return RuntimeError(f"Tried to instantiate dummy base class {name}")
