"""One DDP training step on every rank, profiled; rank 0 prints the step's timeline and the overlap of each bucket's
all-reduce with backward (docs/internals/ddp.md runs this under mpiexec with 2 ranks).

    mpiexec -n 2 python tests/distributed_scripts/ddp_timeline.py [--hidden 256] [--bucket-cap-mb 0.25]
"""
import argparse

import lantern
import lantern.distributed as dist
import lantern.nn as nn
from lantern.nn.parallel.timeline import bucket_overlap, format_overlap, format_timeline, step_timeline


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--bucket-cap-mb", type=float, default=0.25)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    lantern.manual_seed(0)
    h = args.hidden
    model = nn.Sequential(nn.Linear(64, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                          nn.Linear(h, 10))
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    x, y = lantern.randn(32, 64), lantern.randint(0, 10, (32,))
    for _ in range(2):   # the first backward records the gradient order; the second forward rebuilds the buckets
        nn.functional.cross_entropy(ddp(x), y).backward()
    dist.barrier()   # the ranks start the profiled step together, so a wait measures communication, not skew
    with lantern.profiler.profile() as prof:
        nn.functional.cross_entropy(ddp(x), y).backward()
    if rank == 0:
        print(format_timeline(step_timeline(prof.events())))
        print(format_overlap(bucket_overlap(prof.events())))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
