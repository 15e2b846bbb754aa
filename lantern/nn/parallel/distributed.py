"""DistributedDataParallel's name (torch.nn.parallel.distributed): lantern has no process groups yet, so building one
raises NotImplementedError naming it (see lantern.distributed).

>>> import lantern.nn as nn
>>> nn.parallel.DistributedDataParallel(nn.Linear(2, 3))
Traceback (most recent call last):
NotImplementedError: torch.nn.parallel.DistributedDataParallel: lantern does not implement distributed training yet (no process-group backend); run the program as a single process, without torchrun
"""
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Data-parallel training across processes; needs lantern.distributed's process groups, which do not exist yet."""

    def __init__(self, module, *args, **kwargs):
        raise NotImplementedError("torch.nn.parallel.DistributedDataParallel: lantern does not implement distributed "
                                  "training yet (no process-group backend); run the program as a single process, "
                                  "without torchrun")
