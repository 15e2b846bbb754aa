"""A program for tests/test_distributed_launcher.py to launch: `launched_rank.py MODE OUT_DIR`.

Every rank writes what it saw (torchrun's variables, its argv, the torch it got, a sum over the process group) to
OUT_DIR/rank<RANK>.json. MODE says how rank 1 misbehaves, to test how a job ends:
  ok                 every rank finishes;
  kill               rank 1 SIGKILLs itself while the others wait in an all_reduce;
  raise              rank 1 raises inside the process group, the others wait in an all_reduce;
  raise_before_init  rank 1 raises before MPI starts, the others go on to init_process_group and an all_reduce;
  exit               rank 1 calls sys.exit(3) inside the process group;
  fail_first_attempt rank 1 raises on attempt 0 (TORCHELASTIC_RESTART_COUNT), all succeed on the next;
  wait               every rank writes its record, then waits in a barrier that rank 0 never reaches (to signal);
  record_caught      rank 1's @record-decorated step raises, and the program catches it and goes on.
"""
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

mode, out_dir = sys.argv[1], sys.argv[2]
rank = int(os.environ["RANK"])
restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])

if rank == 1 and (mode == "raise_before_init" or (mode == "fail_first_attempt" and restart == 0)):
    raise RuntimeError(f"rank 1 gives up before init (attempt {restart})")
dist.init_process_group("gloo")
if rank == 1 and mode == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if rank == 1 and mode == "raise":
    raise ValueError("rank 1 gives up inside the process group")
if rank == 1 and mode == "exit":
    sys.exit(3)


@record
def failing_step():
    raise ValueError("a step that the program retries")


if rank == 1 and mode == "record_caught":
    try:
        failing_step()
    except ValueError:
        time.sleep(2)  # the launcher has looked at the record by now
total = torch.tensor([float(rank)])
dist.all_reduce(total)
record = {
    "environ": dict(os.environ), "argv": sys.argv, "torch": torch.__name__,
    "tensor_library": type(torch.ones(1)).__module__.split(".")[0],
    "main": __name__, "sum": total.item(), "torchelastic_launched": dist.is_torchelastic_launched(), "pid": os.getpid(),
}
with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as file:
    json.dump(record, file)
if mode == "wait":
    if rank != 0:
        dist.barrier()
    time.sleep(120)
dist.destroy_process_group()
