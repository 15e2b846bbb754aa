"""Rank script: collectives that a peer never joins raise DistBackendError after the group's timeout instead of
hanging, and leave the group unusable, while the world group goes on. Run by tests/test_distributed_collectives.py.
"""
import datetime

import lantern
from distributed_harness import Checks

checks = Checks()
SHORT = datetime.timedelta(seconds=1)


def expect_timeout(run):
    try:
        run()
    except lantern.distributed.DistBackendError as error:
        assert "timed out after 1000 ms" in str(error) and "a peer never joined" in str(error), str(error)
        return error
    raise AssertionError("the collective did not time out")


@checks.check
def a_collective_nobody_joins_times_out(dist, rank, size):
    group = dist.new_group(timeout=SHORT)
    if rank == 0:
        error = expect_timeout(lambda: dist.all_reduce(lantern.ones(3), group=group))
        try:
            dist.broadcast(lantern.ones(3), src=0, group=group)
            raise AssertionError("a broken group ran another collective")
        except lantern.distributed.DistBackendError as again:
            assert again is error
    dist.barrier()


@checks.check
def an_async_work_times_out_in_wait(dist, rank, size):
    group = dist.new_group(timeout=SHORT)
    if rank == 0:
        work = dist.irecv(lantern.zeros(2), src=size - 1, group=group)
        assert not work.is_completed()
        expect_timeout(work.wait)
        assert isinstance(work.exception(), dist.DistBackendError) and not work.is_success()
    dist.barrier()


@checks.check
def wait_takes_its_own_timeout(dist, rank, size):
    group = dist.new_group()  # the default 30 minutes: the wait's own timeout applies
    if rank == 0:
        work = dist.all_reduce(lantern.ones(1), group=group, async_op=True)
        expect_timeout(lambda: work.wait(timeout=SHORT))
    dist.barrier()


@checks.check
def a_barrier_with_a_missing_rank_times_out(dist, rank, size):
    group = dist.new_group()
    if rank == size - 1:
        expect_timeout(lambda: dist.barrier(group=group, timeout=SHORT))
    dist.barrier()


@checks.check
def a_timed_out_works_future_raises(dist, rank, size):
    group = dist.new_group(timeout=SHORT)
    if rank == 0:
        future = dist.all_reduce(lantern.ones(1), group=group, async_op=True).get_future()
        chained = future.then(lambda f: f.value())
        expect_timeout(future.wait)
        try:
            chained.wait()
            raise AssertionError("the chained future did not fail")
        except RuntimeError as error:
            assert "timed out" in str(error), str(error)
    dist.barrier()


@checks.check
def a_monitored_barrier_names_the_missing_ranks(dist, rank, size):
    group = dist.new_group()
    dist.monitored_barrier(group)  # everyone arrives
    if rank == 0:
        try:
            dist.monitored_barrier(group, timeout=SHORT, wait_all_ranks=True)
            raise AssertionError("the monitored barrier passed without its other ranks")
        except dist.DistBackendError as error:
            missing = ", ".join(str(r) for r in range(1, size))
            assert str(error) == f"Ranks {missing} failed to pass monitoredBarrier in 1000 ms", str(error)
    dist.barrier()


if __name__ == "__main__":
    checks.run()
