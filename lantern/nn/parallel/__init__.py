"""lantern.nn.parallel (torch.nn.parallel): DistributedDataParallel over lantern.distributed's process groups, and
DataParallel as torch's CPU build has it.

- `distributed`: DistributedDataParallel, the module wrapper (construction broadcast, forward, no_sync);
- `reducer`: the buckets, the hooks on the gradient accumulators and the asynchronous all-reduce schedule;
- `bucketing`: which gradients share a bucket (torch's `_compute_bucket_assignment_by_size`);
- `timeline`: one DDP step read back from the profiler, and how much of the all-reduce backward hid;
- `data_parallel`: DataParallel, which on a machine without accelerators runs the module whole; `replicate`,
  `scatter_gather` and `parallel_apply`, its steps, which fail where they would need an accelerator, as in torch's
  CPU build.

docs/internals/ddp.md walks through it with live output.

>>> import lantern, lantern.nn as nn
>>> model = nn.DataParallel(nn.Linear(2, 3))
>>> model.device_ids, model(lantern.ones(1, 2)).shape, list(model.state_dict())
([], lantern.Size([1, 3]), ['module.weight', 'module.bias'])
"""
import warnings

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel",
           "DistributedDataParallel"]


class DistributedDataParallelCPU(DistributedDataParallel):
    """torch's old name for DistributedDataParallel on the CPU, deprecated."""

    def __init__(self, *args, **kwargs):
        warnings.warn("`torch.nn.parallel.DistributedDataParallelCPU` is deprecated, please use "
                      "`torch.nn.parallel.DistributedDataParallel` instead.", FutureWarning, stacklevel=2)
        super().__init__(*args, **kwargs)
