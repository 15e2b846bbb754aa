"""torch.mps (Apple GPUs) as PyTorch's CPU build has it: present and unavailable; what needs the Metal device raises
the CPU build's RuntimeError ('Cannot execute ... without MPS backend').

>>> lantern.mps.is_available(), lantern.mps.device_count(), lantern.mps.manual_seed(0)
(False, 0, None)
>>> lantern.mps.synchronize()
Traceback (most recent call last):
RuntimeError: Cannot execute deviceSynchronize() without MPS backend.
"""


def _without_mps(name, call, doc):
    def fn(*args, **kwargs):
        raise RuntimeError(f"Cannot execute {call}() without MPS backend.")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def is_available():
    return False


def device_count():
    return 0


def manual_seed(seed):
    """Seed the MPS generator: a no-op without MPS, so that lantern.manual_seed may call it, as torch's does."""


def compile_shader(source):
    """Compile Metal shader source into a library of kernels."""
    raise RuntimeError("MPS is not available")


def load_metallib(source):
    """Load a compiled Metal library."""
    raise RuntimeError("MPS is not available")


class Event:
    """A Metal event, for synchronisation and timing."""

    def __init__(self, enable_timing=False):
        raise RuntimeError("Cannot execute acquireEvent() without MPS backend.")


seed = _without_mps("seed", "getDefaultGenerator", "Seed the MPS generator from a random number.")
get_rng_state = _without_mps("get_rng_state", "getDefaultGenerator", "The MPS generator's state.")
set_rng_state = _without_mps("set_rng_state", "getDefaultGenerator", "Set the MPS generator's state.")
synchronize = _without_mps("synchronize", "deviceSynchronize", "Wait for the Metal device's work to finish.")
empty_cache = _without_mps("empty_cache", "emptyCache", "Release cached Metal memory.")
set_per_process_memory_fraction = _without_mps("set_per_process_memory_fraction", "setMemoryFraction",
                                               "Limit this process's Metal memory.")
current_allocated_memory = _without_mps("current_allocated_memory", "getCurrentAllocatedMemory",
                                        "Bytes held by live MPS tensors.")
driver_allocated_memory = _without_mps("driver_allocated_memory", "getDriverAllocatedMemory",
                                       "Bytes the Metal driver has allocated.")
recommended_max_memory = _without_mps("recommended_max_memory", "getRecommendedMaxMemory",
                                      "The Metal device's recommended working-set size.")
