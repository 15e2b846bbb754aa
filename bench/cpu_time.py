"""Wall time and CPU time (user + sys, all threads) per call of workloads, in one library: idle threads that spin
show up as CPU time that does no work, whatever else loads the machine (docs/internals/intra-op-threads.md).

    python bench/cpu_time.py --lib lantern --threads 2 --filter train_step
    python bench/cpu_time.py --lib torch --threads 2 --filter transformer

Each line: wall ms, CPU ms and CPU ÷ wall per call. On a quiet machine a step that uses both cores well has
CPU ÷ wall near 2 and CPU time near its one-thread CPU time; CPU time well above the one-thread CPU time is
spinning (or work repeated per thread). The library is imported with its thread variables set, as
bench/worker.py does, so its BLAS and OpenMP pools start with `--threads` threads.
"""
import argparse
import resource
import time

from worker import import_library
from workload import all_workloads


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def per_call(stmt, namespace, seconds):
    """(wall, CPU) seconds per call of `stmt`, over calls that together last about `seconds`."""
    code = compile(stmt, "workload", "exec")
    for _ in range(3):
        exec(code, namespace)
    calls, wall0, cpu0 = 0, time.perf_counter(), cpu_seconds()
    while time.perf_counter() - wall0 < seconds:
        exec(code, namespace)
        calls += 1
    return (time.perf_counter() - wall0) / calls, (cpu_seconds() - cpu0) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default="lantern", help="lantern or torch")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--filter", action="append", default=[], metavar="NAME",
                        help="workloads whose name contains NAME (repeatable; default all)")
    parser.add_argument("--seconds", type=float, default=2.0, help="how long to time each workload")
    args = parser.parse_args()
    lib = import_library(args.lib, args.threads)
    for w in all_workloads():
        if args.filter and not any(f in w.name for f in args.filter):
            continue
        wall, cpu = per_call(w.stmt, w.setup(lib), args.seconds)
        print(f"{args.lib} threads={args.threads} {w.name:34} wall {wall * 1e3:9.3f} ms  cpu {cpu * 1e3:9.3f} ms  "
              f"cpu/wall {cpu / wall:4.2f}", flush=True)


if __name__ == "__main__":
    main()
