"""Rank script: the last rank kills itself (SIGKILL) before a collective; run with mpiexec's -disable-auto-cleanup,
which leaves the other ranks running, their wait() raises DistBackendError within the group's timeout instead of
hanging (tests/test_distributed_collectives.py)."""
import datetime
import os
import signal

import lantern
from distributed_harness import Checks

checks = Checks()


@checks.check
def the_survivors_wait_raises_within_the_timeout(dist, rank, size):
    if rank == size - 1:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        dist.all_reduce(lantern.ones(2))
    except dist.DistBackendError as error:
        assert "timed out after 2000 ms" in str(error), str(error)
        return
    raise AssertionError("all_reduce with a dead peer did not raise")


if __name__ == "__main__":
    lantern.distributed.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
    checks.run(init=False)
    os._exit(1)  # as a program that met the error would: MPI_Finalize would wait for the dead rank
