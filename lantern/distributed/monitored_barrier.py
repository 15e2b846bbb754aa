"""monitored_barrier: a barrier that names the ranks that did not reach it (gloo's debugging barrier).

Rank 0 of the group waits for a message from every other rank, up to the timeout, then releases them; a rank
that has not arrived in time is named in the error (the first one, or all of them with wait_all_ranks=True). The
messages use a tag lantern keeps for itself (MPI's largest), so they never match the program's own sends. As
after any timeout, the group is unusable once the barrier has failed.

>>> import lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> dist.monitored_barrier()
>>> dist.destroy_process_group()
"""
import datetime
import warnings

import numpy as np

from .collectives import group_or_warn
from .errors import DistBackendError
from .mpi import MPI
from .work import Work


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """Wait for every rank of the group; rank 0 raises naming the ranks that did not arrive within `timeout`."""
    made = group_or_warn(group, "monitored_barrier")
    if made is None:
        return None
    if made.backend != "gloo":
        raise ValueError("monitored_barrier is only implemented for GLOO backend.")
    if isinstance(timeout, float):
        warnings.warn("Please specify timeout arg as a timedelta. Converting current value of "
                      f"{timeout} assuming it represents seconds", stacklevel=2)
        timeout = datetime.timedelta(seconds=timeout)
    timeout = timeout or made.timeout
    tag = MPI().COMM_WORLD.Get_attr(MPI().TAG_UB)
    token = np.zeros(1, np.uint8)
    if made.rank() != 0:
        Work(made, "monitored_barrier", [made.communicator.Isend(token, 0, tag)]).wait(timeout)
        Work(made, "monitored_barrier", [made.communicator.Irecv(token, 0, tag)]).wait(timeout)
        return None
    _wait_for_the_others(made, timeout, wait_all_ranks, tag)
    for rank in range(1, made.size()):
        Work(made, "monitored_barrier", [made.communicator.Isend(token, rank, tag)]).wait(timeout)
    return None


def _wait_for_the_others(made, timeout, wait_all_ranks, tag):
    arrivals = {rank: Work(made, "monitored_barrier", [made.communicator.Irecv(np.zeros(1, np.uint8), rank, tag)])
                for rank in range(1, made.size())}
    missing = []
    for rank, work in arrivals.items():
        if missing and not wait_all_ranks:
            break
        try:
            work.wait(timeout if not missing else datetime.timedelta(0))
        except DistBackendError:
            missing.append(rank)
    if missing:
        milliseconds = int(timeout.total_seconds() * 1000)
        if wait_all_ranks:
            raise DistBackendError(f"Ranks {', '.join(map(str, missing))} failed to pass monitoredBarrier in "
                                   f"{milliseconds} ms")
        raise DistBackendError(f"Rank {missing[0]} failed to pass monitoredBarrier in {milliseconds} ms")
