"""One rank of the DDP benchmark: a PyTorch program that bench/distributed.py starts through a launcher.

    python -m lantern.distributed.run --nproc-per-node 2 bench/ddp_step.py --model mlp    # torch is lantern
    python -m torch.distributed.run --standalone --nproc-per-node 2 bench/ddp_step.py --model mlp

It trains the single-process rows' model (bench/workloads/training.py: same layers, batch and optimizer, now the
batch of each rank) wrapped in DistributedDataParallel and times four things per step, in turns, each after a
barrier so that the ranks start together:

- `ddp`: zero_grad, forward, backward (DDP all-reduces the gradient buckets as backward produces them, and waits
  for them at its end), optimizer step;
- `local`: the same step inside `model.no_sync()`: no communication at all;
- `plain`: rank 0 alone trains the unwrapped module one step while the others wait: the one-process baseline,
  taken in the same launch as the rest, so that a change in the machine's load falls on both;
- `allreduce`: one all_reduce of as many floats as the model has parameters, alone.

A step takes as long as its slowest rank, so each time is the maximum over the ranks; rank 0 prints the medians
over the timed steps as one JSON line after `DDP-BENCH `. What DDP's communication adds to a step is the median
of `ddp - local` over the steps (`added`; the two run back to back), with half the interquartile range of those
differences (`added_spread`) to say how well it is known; had none of it overlapped backward, it would be about
`allreduce`.

lantern's reducer also shows the overlap directly, as profiler ranges: each bucket's all-reduce from posting to
completion (`gloo:all_reduce`), the call that posts it (`c10d::allreduce_`) and the wait for it at the end of
backward (`reducer::wait[<bucket>]`). A few more DDP steps run under the profiler; the share of the all-reduces'
time in flight that the rank spent neither posting nor waiting, so computing backward, is `hidden_by_profiler`
(None for torch, whose reducer is C++ and records no such ranges).

The no_sync and lone steps update only their own rank's replica, so the replicas drift apart: these are timings,
not training.
"""
import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from workloads import training  # bench/ is first on the path, the script's folder

MODELS = {"mlp": training._mlp, "transformer": training._transformer}
PHASES = ("ddp", "local", "plain", "allreduce")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--steps", type=int, default=20, help="timed steps (each phase once per step)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    return parser.parse_args(argv)


def timed(call):
    """Seconds `call()` takes on this rank, started together with the other ranks."""
    dist.barrier()
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def hidden_by_profiler(ddp_step, steps):
    """(in flight − posting − waiting) ÷ in flight for the buckets' all-reduces, summed over `steps` DDP steps and
    over the ranks; None where the profiler records no reducer waits."""
    with torch.profiler.profile() as prof:
        for _ in range(steps):
            ddp_step()

    def total(match):
        return sum(e.cpu_time_total for e in prof.events() if match(e.name))
    mine = (total(lambda name: name == "gloo:all_reduce"), total(lambda name: name == "c10d::allreduce_"),
            total(lambda name: name.startswith("reducer::wait[")))
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    in_flight, posting, waiting = map(sum, zip(*everyone))
    return max(0.0, in_flight - posting - waiting) / in_flight if waiting and in_flight else None


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    parts = MODELS[args.model](torch)
    model = DistributedDataParallel(parts["model"])
    opt, loss_fn, x, y = parts["opt"], parts["loss_fn"], parts["x"], parts["y"]
    gradients = torch.zeros(sum(p.numel() for p in model.parameters()))

    def ddp_step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    def local_step():
        opt.zero_grad()
        with model.no_sync():
            loss_fn(model(x), y).backward()
        opt.step()

    def plain_step():
        if dist.get_rank() == 0:
            opt.zero_grad()
            loss_fn(model.module(x), y).backward()
            opt.step()

    def allreduce():
        dist.all_reduce(gradients)

    calls = dict(zip(PHASES, (ddp_step, local_step, plain_step, allreduce)))
    times = {phase: [] for phase in PHASES}
    for step in range(args.warmup + args.steps):
        turn = step % len(PHASES)
        order = PHASES[turn:] + PHASES[:turn]  # each phase takes each place in the order in turn
        for phase in order:
            seconds = timed(calls[phase])
            if step >= args.warmup:
                times[phase].append(seconds)

    hidden = hidden_by_profiler(ddp_step, args.steps)
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, times)
    if dist.get_rank() == 0:
        slowest = {phase: [max(rank[phase][i] for rank in everyone) for i in range(args.steps)] for phase in PHASES}
        result = {f"{phase}_ms": statistics.median(slowest[phase]) * 1e3 for phase in PHASES}
        added = [(d - n) * 1e3 for d, n in zip(slowest["ddp"], slowest["local"])]
        quartiles = statistics.quantiles(added, n=4)
        result.update(added_ms=statistics.median(added), added_spread_ms=(quartiles[2] - quartiles[0]) / 2)
        result.update(world_size=dist.get_world_size(), parameters=gradients.numel(), steps=args.steps,
                      hidden_by_profiler=hidden)
        print("DDP-BENCH " + json.dumps(result), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
