"""replicate (torch.nn.parallel.replicate): copies of a module for each accelerator DataParallel runs on.

On a machine without accelerators there is nothing to copy tensors to: no devices give no copies, a CPU device is
refused, and a module with parameters or buffers fails where torch's CPU build fails, in the broadcast of its
tensors. A module without tensors (activations, containers of them) is copied as DataParallel copies it: a shallow
replica of each submodule, marked `_is_replica`.

>>> import lantern.nn as nn
>>> copies = replicate(nn.Sequential(nn.ReLU(), nn.Tanh()), [0, 1])
>>> len(copies), copies[0]._is_replica, type(copies[1][1]).__name__
(2, True, 'Tanh')
>>> replicate(nn.Linear(2, 2), [0])
Traceback (most recent call last):
AssertionError: Broadcast function not implemented for CPU tensors
"""
from ._devices import non_cpu_index

__all__ = ["replicate"]


def _replica(module):
    copy = module._replicate_for_data_parallel()
    for name, child in module._modules.items():
        if child is not None:
            copy._modules[name] = _replica(child)
    return copy


def replicate(network, devices, detach=False):
    """One copy of `network` per device in `devices` (see the module docstring for the CPU's answer)."""
    if not devices:
        return []
    for device in devices:
        non_cpu_index(device)
    if any(True for _ in network.parameters()):
        raise AssertionError("Broadcast function not implemented for CPU tensors")
    if any(True for _ in network.buffers()):
        raise AttributeError("module 'torch._C' has no attribute '_broadcast_coalesced'")
    return [_replica(network) for _ in devices]
