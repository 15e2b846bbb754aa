"""parallel_apply (torch.nn.parallel.parallel_apply): run each module on its input, one thread per accelerator.

It checks its arguments as torch does, then needs the accelerators themselves, which a CPU-only machine has not:
torch's CPU build fails there, and so does lantern.

>>> import lantern, lantern.nn as nn
>>> parallel_apply([nn.ReLU()], [lantern.ones(1)])
Traceback (most recent call last):
RuntimeError: Cannot access accelerator device when none is available.
"""
from ...accelerator._unavailable import _no_accelerator
from ._devices import non_cpu_index

__all__ = ["parallel_apply"]


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """modules[i](inputs[i], **kwargs_tup[i]) on devices[i], in parallel; see the module docstring."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    if kwargs_tup is not None and len(modules) != len(kwargs_tup):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of kwargs_tup "
                             f"{len(kwargs_tup)}")
    if devices is not None and len(modules) != len(devices):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of devices "
                             f"{len(devices)}")
    for device in devices if devices is not None else [None] * len(modules):
        if device is None:
            raise _no_accelerator()
        non_cpu_index(device, "Expected a cuda device, but got: {}")
        raise _no_accelerator()
    raise AssertionError("No available accelerator found.")
