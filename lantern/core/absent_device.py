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


# ---- what torch.cuda and torch.xpu both answer when their device is absent ---------------------------------------

def is_available():
    """Whether the device can be used: never, in this build."""
    return False


def device_count():
    """How many such devices there are: 0."""
    return 0


def is_initialized():
    """Whether the device's runtime was initialised: never."""
    return False


def is_bf16_supported(including_emulation=True):
    """Whether the current device supports bfloat16: there is none."""
    return False


def is_tf32_supported():
    """Whether the current device supports TF32 matmuls: there is none."""
    return False


def get_arch_list():
    """The architectures this build was compiled for: none."""
    return []


def get_gencode_flags():
    """The compiler's gencode flags for this build: none."""
    return ""


def manual_seed(seed):
    """Seed the device's current generator: accepted, nothing to seed (PyTorch queues it until the device starts,
    which never happens; lantern.manual_seed seeds the CPU generator)."""
    int(seed)


def manual_seed_all(seed):
    """Seed every device generator: accepted, nothing to seed."""
    int(seed)


def seed():
    """Seed the device's generator from a random number: nothing to seed."""


def seed_all():
    """Seed every device generator from a random number: nothing to seed."""


def get_rng_state_all():
    """The state of every device generator: there are none."""
    return []


def set_rng_state(new_state, device=None):
    """Set the device generator's state: accepted, none to set (PyTorch queues it and never runs it)."""


def set_rng_state_all(new_states):
    """Set every device generator's state: accepted, none to set."""


class StreamContext:
    """`with torch.cuda.stream(s):`, the context making stream `s` current for its block. Without the device only
    None can be given (no stream can be made), and then the context does nothing, as in PyTorch. Subclasses name
    their backend."""

    backend = None

    def __init__(self, stream):
        self.stream = stream
        if stream is not None:
            raise RuntimeError(f"torch.{self.backend.lower()}.StreamContext needs a {self.backend} stream; this build "
                               f"has no {self.backend}")

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
