"""DistributedSampler (torch.utils.data.distributed): the share of a dataset's indices one process visits.

Each of `num_replicas` processes takes every num_replicas-th index of one common order (shuffled by seed + epoch),
after the order is padded by repeating its start (or cut, with drop_last) to a multiple of num_replicas. Without
num_replicas and rank it asks the default process group (lantern.distributed.get_world_size() and get_rank()), so
under `python -m lantern.distributed.run` each rank gets its own share; with no process group, torch's error.

>>> from lantern.utils.data.distributed import DistributedSampler
>>> [list(DistributedSampler(range(5), num_replicas=2, rank=r, shuffle=False)) for r in (0, 1)]
[[0, 2, 4], [1, 3, 0]]
>>> len(DistributedSampler(range(5), num_replicas=2, rank=1, drop_last=True))
2
"""
import math

from ... import distributed, randperm
from ...random import Generator
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices for process `rank` of `num_replicas`; call set_epoch(n) each epoch to reshuffle."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = _from_process_group("get_world_size")
        if rank is None:
            rank = _from_process_group("get_rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.shuffle, self.seed, self.drop_last = 0, shuffle, seed, drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            order = randperm(n, generator=Generator().manual_seed(self.seed + self.epoch)).tolist()
        else:
            order = list(range(n))
        if self.drop_last:
            order = order[:self.total_size]
        else:
            missing = self.total_size - n
            order += (order * math.ceil(missing / n))[:missing] if missing > 0 else []
        return iter(order[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


def _from_process_group(query):
    if not distributed.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return getattr(distributed, query)()
