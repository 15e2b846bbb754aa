"""Rank script: the last rank kills itself mid-run (SIGKILL) while the others wait in a collective; the MPI
launcher then ends the whole job with a non-zero status (tests/test_distributed_collectives.py)."""
import os
import signal

import lantern
import lantern.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == dist.get_world_size() - 1:
    os.kill(os.getpid(), signal.SIGKILL)
dist.all_reduce(lantern.ones(2))
dist.barrier()
