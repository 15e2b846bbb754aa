"""Benchmark runner (`make bench`): lantern against torch, interleaved in one run, medians and ratios.

    python bench/run.py                      # every workload in bench/workloads/, both libraries
    python bench/run.py --filter matmul      # workloads whose name contains "matmul"
    python bench/run.py --lib torch          # one library alone
    python bench/run.py --lib lantern --lib lantern-reference   # what reference mode costs (LANTERN_REFERENCE=1)
    python bench/run.py --quick              # a fast smoke run
    python bench/run.py --write              # also write the tables into docs/performance.md
    python bench/run.py --filter ddp         # the DDP rows alone (bench/distributed.py: 1 and 2 processes)
    python bench/run.py --no-ddp             # every workload but the DDP rows
    python bench/run.py --filter program_    # the real programs timed whole alone (bench/programs.py)
    python bench/run.py --no-programs        # every workload but the real programs
    python bench/run.py --threads 1          # one thread count only (repeatable; default 1 and 2)
    python bench/workloads/training.py --lib lantern    # one workload file alone: the same runner, its workloads

Each library runs in its own long-lived worker process (bench/worker.py), so lantern never shares a process
with torch. For every workload the runner asks the workers for one repeat at a time, alternating which goes
first (A B, B A, A B, ...), so that load from other tenants of a shared machine falls on both alike; the table
shows medians over the repeats. Both workers use the same number of threads for BLAS and OpenMP; every workload
is measured at 1 and at 2 threads by default (a fresh pair of workers per count), and the table puts the counts
side by side. Workloads with a memory goal (the training steps) then have their peak memory measured in each
worker of the first count (bench/memory.py). A workload with a baseline (the compiled steps) is also run by
torch's worker with the baseline's setup: the goal is on lantern ÷ that. The DDP rows (bench/distributed.py) and
the real programs timed whole (bench/programs.py, at the first thread count) follow. Without torch installed the
tables show lantern alone.
"""
import argparse
import datetime
import importlib.util
import json
import os
import statistics
import subprocess
import sys

import distributed
import programs
from machine import describe
from report import Row, format_compiled_table, format_goals, format_memory_table, format_table, splice
from workload import all_workloads

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
DOCS = os.path.join(REPO_ROOT, "docs", "performance.md")
DEFAULT_THREADS = (1, 2)


class Worker:
    """The runner's handle on one library's worker process."""

    def __init__(self, lib, threads):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")])))
        module = lib
        if lib == "lantern-reference":  # lantern with every named fast path off (docs/internals/reference-mode.md)
            module, env["LANTERN_REFERENCE"] = "lantern", "1"
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(BENCH_DIR, "worker.py"), "--lib", module, "--threads", str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.lib = lib
        self.hello = self._receive()

    def _receive(self):
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.lib} worker exited (code {self.process.wait()}); see its error above")
        return json.loads(line)

    def ask(self, request):
        """Send one request; the reply's value, or raise RuntimeError with the worker's traceback."""
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply = self._receive()
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return next(iter(reply.values()))

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def measure(workload, workers, repeats, min_time):
    """Median seconds per call for each (library, baseline?) pair (None where it failed), taking turns per repeat.

    Every worker runs the workload's setup; with a baseline, torch's worker runs the baseline setup too."""
    contestants = [(w, False) for w in workers]
    if workload.baseline is not None:
        contestants += [(w, True) for w in workers if w.lib == "torch"]
    times, failed = {}, []
    for w, baseline in contestants:
        try:
            w.ask({"setup": workload.name, "min_time": min_time, "baseline": baseline})
            times[w.lib, baseline] = []
        except RuntimeError as error:
            failed.append((w.lib, baseline))
            print(f"{workload.name}{' (baseline)' if baseline else ''} on {w.lib} failed:\n{error}", file=sys.stderr)
    active = [(w, baseline) for w, baseline in contestants if (w.lib, baseline) in times]
    for r in range(repeats):
        for w, baseline in active if r % 2 == 0 else active[::-1]:
            times[w.lib, baseline].append(w.ask({"time": workload.name, "baseline": baseline}))
    return {key: statistics.median(t) for key, t in times.items()} | dict.fromkeys(failed)


def speed_row(workload, seconds, threads):
    """The Row of one workload's medians at one thread count: with a baseline, medians["torch"] is torch's
    baseline and `reference` torch running what lantern ran."""
    values = {key: None if s is None else workload.value(s) for key, s in seconds.items()}
    medians = {lib: value for (lib, baseline), value in values.items() if not baseline}
    reference = None
    if workload.baseline is not None and "torch" in medians:
        reference, medians["torch"] = medians["torch"], values.get(("torch", True))
    return Row(workload.name, workload.unit, medians, workload.goal, threads=threads,
               compiled=workload.baseline is not None, reference=reference)


def measure_memory(workload, workers, steps, repeats):
    """A memory Row: each library's median peak MiB (None where it failed) and lantern's allocator peak."""
    results, failed = {w.lib: [] for w in workers}, set()
    for r in range(repeats):
        for w in workers if r % 2 == 0 else workers[::-1]:
            if w.lib in failed:
                continue
            try:
                results[w.lib].append(w.ask({"memory": workload.name, "steps": steps}))
            except RuntimeError as error:
                failed.add(w.lib)
                print(f"{workload.name} memory on {w.lib} failed:\n{error}", file=sys.stderr)
    peaks = {lib: None if lib in failed else statistics.median(r["peak_mib"] for r in rs)
             for lib, rs in results.items()}
    lantern = results.get("lantern")
    allocator = statistics.median(r["allocator_peak_mib"] for r in lantern) if lantern else None
    return Row(workload.name, "MiB", peaks, workload.memory_goal, allocator=allocator)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", action="append",
                        help="library to measure (repeatable; default: lantern torch; lantern-reference is lantern "
                             "in reference mode)")
    parser.add_argument("--filter", action="append", default=[], metavar="NAME",
                        help="run only workloads whose name contains NAME (repeatable)")
    parser.add_argument("--quick", action="store_true", help="smoke mode: 3 short repeats, 2 memory steps")
    parser.add_argument("--repeats", type=int, help="repeats per library (default 9, quick 3)")
    parser.add_argument("--threads", type=int, action="append",
                        help="BLAS/OpenMP threads per library (repeatable; default 1 and 2, side by side)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurements")
    parser.add_argument("--no-ddp", action="store_true", help="skip the DDP rows (bench/distributed.py)")
    parser.add_argument("--no-programs", action="store_true",
                        help="skip the real programs timed whole (bench/programs.py)")
    parser.add_argument("--write", nargs="?", const=DOCS, metavar="PATH",
                        help="also write the tables between the bench markers of PATH (default docs/performance.md)")
    return parser.parse_args(argv)


def choose_libs(requested):
    """The libraries to run: torch is dropped, with a note, when it is not installed."""
    libs = list(requested or ["lantern", "torch"])
    if "torch" in libs and importlib.util.find_spec("torch") is None:
        print("torch is not installed: measuring lantern alone", file=sys.stderr)
        libs.remove("torch")
    return libs


def measure_workloads(workloads, libs, thread_counts, repeats, min_time, memory, steps, memory_repeats):
    """Speed rows at every thread count (a fresh pair of workers per count) and memory rows at the first."""
    rows, memory_rows = [], []
    for threads in thread_counts:
        workers = [Worker(lib, threads) for lib in libs]
        for workload in workloads:
            print(f"running {workload.name} at {threads} thread(s) ...", file=sys.stderr, flush=True)
            rows.append(speed_row(workload, measure(workload, workers, repeats, min_time), threads))
            if memory and threads == thread_counts[0] and workload.memory_goal is not None:
                memory_rows.append(measure_memory(workload, workers, steps, memory_repeats))
        hello = {w.lib: w.hello for w in workers}
        for w in workers:
            w.close()
    return rows, memory_rows, hello


def greetings(libs, threads):
    """Each library's hello (its version and BLAS), from a worker started for just that."""
    found = {}
    for lib in libs:
        worker = Worker(lib, threads)
        found[lib] = worker.hello
        worker.close()
    return found


def format_tables(rows, memory_rows, libs):
    """The speed table, the compiled steps' table, the memory table and the goals line, as markdown."""
    plain = [row for row in rows if not row.compiled]
    compiled = [row for row in rows if row.compiled]
    tables = [format_table(plain, libs)] if plain else []
    if compiled:
        tables.append("Compiled training steps (`model = torch.compile(model)` in both libraries; "
                      "bench/workloads/training_compiled.py), against torch eager:\n\n"
                      + format_compiled_table(compiled, libs))
    if memory_rows:
        tables.append("Peak memory (MiB the resident set rose while building the model and training; "
                      "bench/memory.py):\n\n" + format_memory_table(memory_rows, libs))
    if rows and "torch" in libs and "lantern" in libs:
        tables.append(format_goals(rows + memory_rows))
    return "\n\n".join(tables)


def main(argv=None, workloads=None):
    """Run the benchmarks (`workloads`, default every one in bench/workloads/, then the DDP rows and the programs);
    exit status 1 if any failed."""
    args = parse_args(argv)
    libs = choose_libs(args.lib)
    thread_counts = sorted(set(args.threads or DEFAULT_THREADS))
    repeats = args.repeats or (3 if args.quick else 9)
    min_time = 0.01 if args.quick else 0.2
    steps, memory_repeats = (2, 1) if args.quick else (5, 3)
    def selected(name):
        return not args.filter or any(f in name for f in args.filter)

    ddp_models = [] if workloads or args.no_ddp else [
        model for model in distributed.MODELS if selected(distributed.row_name(model))]
    program_list = [] if workloads or args.no_programs else [p for p in programs.PROGRAMS if selected(p.name)]
    workloads = [w for w in workloads or all_workloads() if selected(w.name)]
    if not workloads and not ddp_models and not program_list:
        raise SystemExit(f"no workload matches {args.filter}")

    rows, memory_rows, hello = [], [], {}
    if workloads:
        rows, memory_rows, hello = measure_workloads(workloads, libs, thread_counts, repeats, min_time,
                                                     not args.no_memory, steps, memory_repeats)
    else:
        hello = greetings(libs, thread_counts[0])
    first = next(iter(hello.values()))
    versions = {"numpy": first["numpy"]} | {lib: f"{h['version']} (BLAS: {h['blas']})" for lib, h in hello.items()}
    machine = describe(versions)
    counts = " and ".join(map(str, thread_counts))
    settings = (f"{repeats} {'interleaved ' if len(libs) > 1 else ''}repeats of ≥ {min_time:g} s each, "
                f"at {counts} BLAS/OpenMP thread(s) per library")
    if memory_rows:
        settings += f"; peak memory at {thread_counts[0]} thread(s): median of {memory_repeats} run(s) of {steps} steps"
    tables = format_tables(rows, memory_rows, libs)
    ddp_ok = programs_ok = True
    if ddp_models:
        ddp_table, ddp_ok = distributed.run(libs, ddp_models, quick=args.quick)
    if program_list:
        programs_table, programs_ok = programs.run([lib for lib in libs if lib in ("lantern", "torch")],
                                                   program_list, threads=thread_counts[0], quick=args.quick)
    print(f"{machine}\n{settings}\n\n{tables}" if rows else machine)
    if ddp_models:
        print(f"\nDistributedDataParallel training steps (bench/distributed.py): {ddp_table}")
    if program_list:
        print(f"\nReal programs timed whole (bench/programs.py): {programs_table}")
    if args.write:
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        with open(args.write) as f:
            document = f.read()
        if rows:
            document = splice(document, f"Measured {when} ({settings}).\n\nMachine: {machine}.\n\n{tables}")
        if ddp_models:
            document = splice(document, f"Measured {when}: {ddp_table}\n\nMachine: {machine}.", "bench-ddp")
        if program_list:
            document = splice(document, f"Measured {when}: {programs_table}\n\nMachine: {machine}.",
                              "bench-programs")
        with open(args.write, "w") as f:
            f.write(document)
    failed = any(None in row.medians.values() for row in rows + memory_rows) or any(
        row.compiled and "torch" in libs and row.reference is None for row in rows)
    return 1 if failed or not ddp_ok or not programs_ok else 0


if __name__ == "__main__":
    sys.exit(main())
