"""lantern.nn.parallel: DataParallel on a machine without accelerators, DistributedDataParallel's name (torch.nn.parallel).

>>> import lantern, lantern.nn as nn
>>> model = nn.DataParallel(nn.Linear(2, 3))
>>> model.device_ids, model(lantern.ones(1, 2)).shape, list(model.state_dict())
([], lantern.Size([1, 3]), ['module.weight', 'module.bias'])
"""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel"]
