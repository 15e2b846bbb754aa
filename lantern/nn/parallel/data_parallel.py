"""DataParallel (torch.nn.parallel.data_parallel) as torch's CPU build has it: with no accelerator it wraps the module
and runs it unchanged; state_dict keys gain the `module.` prefix, as in torch.

>>> import lantern, lantern.nn as nn
>>> nn.parallel.data_parallel(nn.Linear(2, 3), lantern.ones(1, 2))
Traceback (most recent call last):
RuntimeError: device type could not be determined
"""
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Splits each batch across accelerators; lantern runs on the CPU alone, so the wrapped module runs whole."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []  # torch keeps no dim or output_device when there is no accelerator

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional DataParallel; it needs an accelerator, so on the CPU alone it fails as torch's does."""
    raise RuntimeError("device type could not be determined")
