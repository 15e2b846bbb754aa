"""Rank script: every collective of lantern.distributed against its definition, computed locally from what each
rank contributes (rank r's data is `data(r, ...)`, known to every rank). Run by tests/test_distributed_collectives.py
under mpiexec with 2 and 4 ranks."""
import numpy as np

import lantern
from distributed_harness import Checks

checks = Checks()


def data(rank, shape=(3, 4), dtype=np.float32):
    """Rank `rank`'s contribution: small integers (exact in every dtype), different on every rank."""
    values = np.random.default_rng(rank).integers(1, 5, size=shape)
    return values.astype(dtype)


def everyone(size, shape=(3, 4), dtype=np.float32):
    return [data(r, shape, dtype) for r in range(size)]


@checks.check
def ranks_and_sizes(dist, rank, size):
    assert dist.is_initialized() and dist.is_available()
    assert 0 <= rank < size and size == dist.get_world_size(dist.group.WORLD)
    assert dist.get_backend() == "gloo"
    assert dist.get_process_group_ranks(dist.group.WORLD) == list(range(size))


@checks.check
def barrier_waits_for_everyone(dist, rank, size):
    dist.barrier()
    work = dist.barrier(async_op=True)
    assert work.wait() is True and work.is_completed()


@checks.check
def broadcast_copies_the_source(dist, rank, size):
    for src in range(size):
        t = lantern.from_numpy(data(rank))
        assert dist.broadcast(t, src=src) is None
        np.testing.assert_array_equal(t.numpy(), data(src))


@checks.check
def broadcast_into_a_non_contiguous_tensor(dist, rank, size):
    t = lantern.from_numpy(data(rank, (4, 3))).t()
    dist.broadcast(t, src=size - 1)
    np.testing.assert_array_equal(t.numpy(), data(size - 1, (4, 3)).T)


@checks.check
def all_reduce_sum_is_the_sum(dist, rank, size):
    t = lantern.from_numpy(data(rank))
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.numpy(), np.sum(everyone(size), axis=0))


@checks.check
def all_reduce_async_returns_a_work(dist, rank, size):
    t = lantern.from_numpy(data(rank))
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed() and work.is_success() and work.exception() is None
    assert work.result()[0] is t
    np.testing.assert_array_equal(t.numpy(), np.sum(everyone(size), axis=0))


@checks.check
def all_reduce_moves_no_copy_of_a_contiguous_tensor(dist, rank, size):
    t = lantern.from_numpy(data(rank))
    before = t.data_ptr()
    dist.all_reduce(t)
    assert t.data_ptr() == before
    np.testing.assert_array_equal(t.numpy(), np.sum(everyone(size), axis=0))


if __name__ == "__main__":
    checks.run()
