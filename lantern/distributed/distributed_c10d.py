"""torch.distributed.distributed_c10d, where PyTorch defines its process-group API: the same objects as
lantern.distributed, at the path programs sometimes import them from, with the default group's accessor.

>>> import lantern.distributed as dist
>>> from lantern.distributed import distributed_c10d as c10d
>>> c10d.all_reduce is dist.all_reduce
True
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> c10d._get_default_group() is dist.group.WORLD
True
>>> dist.destroy_process_group()
"""
from . import *  # noqa: F401,F403  (the names PyTorch's distributed_c10d defines)
from .process_group import default_group as _get_default_group  # noqa: F401
