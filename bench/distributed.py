r"""The DDP benchmark: a training step of the MLP and the transformer under DistributedDataParallel at 1 and 2
processes, each library's ranks started by its own launcher (`make bench` runs it after the other tables).

    python bench/distributed.py                  # both models, both libraries, 1 and 2 processes
    python bench/distributed.py --lib lantern --model mlp --quick

lantern's ranks start through `python -m lantern.distributed.run` (MPI underneath, `torch` aliased to lantern),
torch's through `python -m torch.distributed.run --standalone` (gloo); both run bench/ddp_step.py, which times, in
turns within one launch: a DDP step, the same step without communication (`no_sync`), one rank training the
unwrapped model alone (the one-process baseline) and an all-reduce of the gradients' size alone. Each launch reports
medians over its steps; the table shows the median over the rounds (the launches take turns, library by library).
The model and the batch are those of the single-process `*_train_step` rows, per rank: two processes do twice the
work of one (weak scaling).

- scaling efficiency: plain one-process step ÷ DDP step at N processes (1.0: N processes train N batches in the
  time one process trains one; at 1 process it is what DDP's machinery costs);
- comm added: the median over steps of DDP step − no-sync step, what communication costs a step;
  The ± is half the interquartile range of the per-step differences;
- hidden: 1 − comm added ÷ all-reduce alone, the share of the all-reduce time that overlapped backward (0 when
  communication added at least an all-reduce's time, which it can exceed: waiting for a slower rank counts).
  Its ± is comm added's spread over the all-reduce: where that is tens of points, noise decides the share;
- hidden (profiler), lantern only: the same share read from the reducer's profiler ranges (bench/ddp_step.py's
  hidden_by_profiler: the time each bucket's all-reduce was in flight while its rank was neither posting it nor
  waiting for it), which step-to-step noise does not blur.

>>> rows = [Result("ddp_mlp_train_step", "lantern", 1, 10.0, 10.2, 9.5, 0.1, -0.2, 0.3, None),
...         Result("ddp_mlp_train_step", "lantern", 2, 12.0, 10.5, 9.6, 3.0, 1.5, 0.4, 0.02),
...         Result("ddp_transformer_train_step", "torch", 2, 150.0, 148.0, 110.0, 6.0, 0.8, 7.0, None)]
>>> print(format_table(rows))
| benchmark | library | processes | step ms | no-sync step ms | one-process step ms | all-reduce alone ms
  | comm added ms | hidden | hidden (profiler) | scaling efficiency |
| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |
| ddp_mlp_train_step | lantern | 1 | 10.0 | 10.2 | 9.50 | 0.100 | — | — | — | 0.95 |
| ddp_mlp_train_step | lantern | 2 | 12.0 | 10.5 | 9.60 | 3.00 | 1.50 ± 0.400 | 50% ± 13 | 2% | 0.80 |
| ddp_transformer_train_step | torch | 2 | 150 | 148 | 110 | 6.00 | 0.800 ± 7.00 | 87% ± 117 | — | 0.73 |
"""
import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys

from report import _markdown, _number

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
RANK_PROGRAM = os.path.join(BENCH_DIR, "ddp_step.py")
MODELS = ("mlp", "transformer")
LAUNCHERS = {
    "lantern": ["-m", "lantern.distributed.run"],
    "torch": ["-m", "torch.distributed.run", "--standalone"],
}
LAUNCH_TIMEOUT_S = 600


def row_name(model):
    """The table's name for a model's DDP row: ddp_mlp_train_step beside the single-process mlp_train_step."""
    return f"ddp_{model}_train_step"


@dataclasses.dataclass
class Result:
    """One configuration's medians (milliseconds; None where its launch failed)."""

    name: str
    lib: str
    processes: int
    step_ms: float | None
    local_ms: float | None
    plain_ms: float | None
    allreduce_ms: float | None
    added_ms: float | None
    added_spread_ms: float | None
    hidden_by_profiler: float | None  # lantern's reducer ranges only

    def complete(self):
        """Whether every timing came back (the profiler's share exists for lantern alone)."""
        return None not in dataclasses.astuple(self)[3:-1]


def launch(lib, processes, model, steps, warmup):
    """Run bench/ddp_step.py on `processes` ranks through `lib`'s launcher; rank 0's JSON result, or None."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore",
               PYTHONPATH=os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")])))
    command = [sys.executable, *LAUNCHERS[lib], "--nproc-per-node", str(processes), RANK_PROGRAM,
               "--model", model, "--steps", str(steps), "--warmup", str(warmup)]
    try:
        done = subprocess.run(command, cwd=BENCH_DIR, env=env, capture_output=True, text=True,
                              timeout=LAUNCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"ddp {model} on {lib} x{processes}: no result within {LAUNCH_TIMEOUT_S} s", file=sys.stderr)
        return None
    for line in done.stdout.splitlines():
        if line.startswith("DDP-BENCH "):
            return json.loads(line[len("DDP-BENCH "):])
    print(f"ddp {model} on {lib} x{processes} failed (exit {done.returncode}):\n{done.stdout[-2000:]}"
          f"{done.stderr[-4000:]}", file=sys.stderr)
    return None


def measure(libs, models=MODELS, process_counts=(1, 2), rounds=3, steps=20, warmup=3):
    """Every (model, library, processes) launched `rounds` times, taking turns; one Result per configuration."""
    runs = {}
    for r in range(rounds):
        for model in models:
            for processes in process_counts:
                for lib in libs if r % 2 == 0 else libs[::-1]:
                    print(f"running ddp {model} on {lib} x{processes} (round {r + 1} of {rounds}) ...",
                          file=sys.stderr, flush=True)
                    runs.setdefault((model, lib, processes), []).append(launch(lib, processes, model, steps, warmup))
    results = []
    for (model, lib, processes), outcomes in runs.items():
        medians = [None if None in outcomes else statistics.median(o[f"{phase}_ms"] for o in outcomes)
                   for phase in ("ddp", "local", "plain", "allreduce", "added", "added_spread")]
        shares = [o["hidden_by_profiler"] for o in outcomes if o and o["hidden_by_profiler"] is not None]
        results.append(Result(row_name(model), lib, processes, *medians,
                              statistics.median(shares) if shares else None))
    return results


def format_table(results):
    """The markdown table (a launch that failed shows `error` in its row)."""
    lines = [["benchmark", "library", "processes", "step ms", "no-sync step ms", "one-process step ms",
              "all-reduce alone ms", "comm added ms", "hidden", "hidden (profiler)", "scaling efficiency"],
             ["---", "---", *["--:"] * 9]]
    for r in results:
        added = hidden = efficiency = "—"
        by_profiler = "—"
        if r.hidden_by_profiler is not None and r.processes > 1:
            by_profiler = f"{100 * r.hidden_by_profiler:.0f}%"
        if r.complete():
            efficiency = f"{r.plain_ms / r.step_ms:.2f}"
            if r.processes > 1:
                added = f"{_number(r.added_ms)} ± {_number(r.added_spread_ms)}"
                share = min(1.0, max(0.0, 1 - r.added_ms / r.allreduce_ms))
                hidden = f"{100 * share:.0f}% ± {100 * r.added_spread_ms / r.allreduce_ms:.0f}"
        lines.append([r.name, r.lib, str(r.processes), _number(r.step_ms), _number(r.local_ms), _number(r.plain_ms),
                      _number(r.allreduce_ms), added, hidden, by_profiler, efficiency])
    return _markdown(lines)


def run(libs, models=MODELS, quick=False):
    """Measure and format: (table, whether every launch gave a result)."""
    libs = [lib for lib in libs if lib in LAUNCHERS]
    rounds, steps, warmup = (1, 4, 1) if quick else (3, 20, 3)
    results = measure(libs, models, rounds=rounds, steps=steps, warmup=warmup)
    settings = (f"{rounds} round(s) of launches; each reports the median of {steps} steps after {warmup} untimed, "
                "a step taking as long as its slowest rank; 1 BLAS/OpenMP thread per rank")
    ok = all(r.complete() for r in results)
    return f"{settings}.\n\n{format_table(results)}", ok


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", action="append", choices=sorted(LAUNCHERS), help="default: lantern torch")
    parser.add_argument("--model", action="append", choices=MODELS, help="default: both")
    parser.add_argument("--quick", action="store_true", help="smoke mode: one round of 4 steps")
    args = parser.parse_args(argv)
    table, ok = run(args.lib or ["lantern", "torch"], tuple(args.model or MODELS), quick=args.quick)
    print(table)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
