r"""Real programs timed whole: nanoGPT, makemore's transformer and word_language_model, each run as a process under
lantern (`python -m lantern.compat`) and under PyTorch (plain `python`), wall clock from start to exit.

    python bench/programs.py                          # the three programs, both libraries
    python bench/programs.py --lib lantern --program nanogpt --quick
    python bench/run.py --filter program_             # the same from the runner (--no-programs skips them)

The programs are the unmodified copies in tests/programs/, fed the synthetic data tests/test_real_programs.py
writes for them, with arguments chosen here so that a lantern run lasts 10-60 s on a 2-core machine. Each library
gets its own copy of a program's folder, made (with its data) before any clock starts. The runs take turns, library
by library (A B, B A, ...), with the same BLAS/OpenMP thread count; the table shows the median of the repeats and
each library's last printed loss: both draw the same random numbers for the same seed, so the losses agree but for
float rounding, which differs between the libraries' kernels and grows over the steps.

A process's time includes everything a user waits for: starting Python, importing the library, reading the data,
building the model, training, evaluating and writing checkpoints.

>>> rows = [Result("program_nanogpt_100_iters", {"lantern": 20.0, "torch": 10.0}, {"lantern": "2.71", "torch": "2.71"})]
>>> print(format_table(rows, ["lantern", "torch"]))
| program | lantern s | torch s | lantern ÷ torch | lantern last loss | torch last loss |
| --- | --: | --: | --: | --: | --: |
| program_nanogpt_100_iters | 20.0 | 10.0 | 2.00 | 2.71 | 2.71 |
"""
import argparse
import dataclasses
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from report import _markdown, _number
from worker import THREAD_VARIABLES

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
sys.path.insert(0, os.path.join(REPO_ROOT, "tests"))
from test_real_programs import PROGRAMS as PROGRAMS_DIR, RUNS, wikitext  # noqa: E402  (the programs and their data)

RUN_TIMEOUT_S = 900
WORD_LM_TEXT_REPEATS = 150


def wikitext_repeated(folder, times):
    """word_language_model's data (tests/test_real_programs.py's `wikitext`) with the training text `times` over, so
    that one epoch lasts long enough to time."""
    wikitext(folder)
    train = os.path.join(folder, "data", "wikitext-2", "train.txt")
    with open(train, encoding="utf-8") as f:
        text = f.read()
    with open(train, "w", encoding="utf-8") as f:
        f.write(text * times)


@dataclasses.dataclass(frozen=True)
class Program:
    """A row: which of tests/test_real_programs.py's runs (its folder, script, data and loss pattern), with the
    arguments given here in place of the test's (`quick_args` for --quick)."""

    name: str
    run: str
    args: tuple
    quick_args: tuple
    data: object = None     # callable(folder, quick) writing the data instead of the test's


_NANOGPT = ("config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--dropout=0.0",
            "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4", "--n_embd=128",
            "--eval_iters=5", "--log_interval=10", "--always_save_checkpoint=True")
_WORD_LM = ("--model", "LSTM", "--epochs", "1", "--emsize", "128", "--nhid", "128", "--nlayers", "2",
            "--bptt", "35", "--batch_size", "20", "--lr", "20", "--log-interval", "50")

PROGRAMS = [
    Program("program_nanogpt_100_iters", "nanogpt",
            (*_NANOGPT, "--max_iters=100", "--lr_decay_iters=100", "--warmup_iters=10", "--eval_interval=50"),
            (*_NANOGPT, "--max_iters=10", "--lr_decay_iters=10", "--warmup_iters=2", "--eval_interval=10")),
    Program("program_makemore_transformer", "makemore-transformer",
            ("-i", "names.txt", "-o", "out", "--type", "transformer", "--max-steps", "300", "-n", "0"),
            ("-i", "names.txt", "-o", "out", "--type", "transformer", "--max-steps", "20", "-n", "0")),
    Program("program_word_language_model_epoch", "examples-word_language_model-LSTM", _WORD_LM, _WORD_LM,
            data=lambda work, quick: wikitext_repeated(work, 1 if quick else WORD_LM_TEXT_REPEATS)),
]


@dataclasses.dataclass
class Result:
    """Median seconds per library (None: a run failed) and each library's last printed loss."""

    name: str
    seconds: dict
    losses: dict


def prepare(program, lib, base, quick=False):
    """A copy of the program's folder for `lib` under `base`, with its data written in the folder the program runs
    from (`working_folder`); returns the copy."""
    run = RUNS[program.run]
    copy = os.path.join(base, lib, run.folder)
    shutil.copytree(os.path.join(PROGRAMS_DIR, run.folder), copy)
    if program.data:
        program.data(working_folder(program, copy), quick)
    elif run.data:
        run.data(working_folder(program, copy))
    return copy


def working_folder(program, copy):
    """The folder of `copy` the program runs from (pytorch/examples' programs run from their own folder)."""
    return os.path.join(copy, RUNS[program.run].cwd)


def _env(copy, threads, extra):
    """The run's environment: `threads` for every BLAS/OpenMP pool, the copy (programs import their own modules)
    and lantern on the path, and the run's own variables (`extra`)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONHASHSEED="0", **extra)
    env.update(dict.fromkeys(THREAD_VARIABLES, str(threads)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [copy, REPO_ROOT, os.environ.get("PYTHONPATH")]))
    return env


def time_once(program, lib, copy, threads, quick):
    """Run the program in its `copy` once under `lib`: (wall seconds, its stdout), or (None, None) if it failed."""
    run = RUNS[program.run]
    prefix = ["-m", "lantern.compat"] if lib == "lantern" else []
    args = program.quick_args if quick else program.args
    command = [sys.executable, *prefix, os.path.join(copy, run.script), *args]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=working_folder(program, copy), env=_env(copy, threads, run.env),
                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"{program.name} on {lib}: no exit within {RUN_TIMEOUT_S} s", file=sys.stderr)
        return None, None
    seconds = time.perf_counter() - start
    if done.returncode:
        print(f"{program.name} on {lib} failed (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-4000:]}",
              file=sys.stderr)
        return None, None
    return seconds, done.stdout


def last_loss(program, output):
    """The last loss the program printed, as printed (None if it printed none)."""
    found = re.findall(RUNS[program.run].loss, output or "")
    return found[-1] if found else None


def measure(libs, programs, repeats, threads, quick=False):
    """Every program under every library, `repeats` times each, the libraries taking turns; one Result each."""
    results = []
    with tempfile.TemporaryDirectory(prefix="lantern-bench-programs-") as base:
        for program in programs:
            copies = {lib: prepare(program, lib, os.path.join(base, program.name), quick) for lib in libs}
            times, losses = {lib: [] for lib in libs}, {}
            for r in range(repeats):
                for lib in libs if r % 2 == 0 else libs[::-1]:
                    print(f"running {program.name} on {lib} (repeat {r + 1} of {repeats}) ...", file=sys.stderr,
                          flush=True)
                    seconds, output = time_once(program, lib, copies[lib], threads, quick)
                    times[lib].append(seconds)
                    losses[lib] = last_loss(program, output)
            results.append(Result(program.name, {lib: None if None in t else statistics.median(t)
                                                 for lib, t in times.items()}, losses))
    return results


def format_table(results, libs):
    """The markdown table: seconds per library, their ratio (with both libraries) and the last losses."""
    compared = "lantern" in libs and "torch" in libs
    header = ["program", *(f"{lib} s" for lib in libs), *(["lantern ÷ torch"] if compared else []),
              *(f"{lib} last loss" for lib in libs)]
    lines = [header, ["---", *["--:"] * (len(header) - 1)]]
    for r in results:
        ratio = []
        if compared:
            lantern, torch = r.seconds.get("lantern"), r.seconds.get("torch")
            ratio = [f"{lantern / torch:.2f}" if lantern and torch else "—"]
        losses = [r.losses.get(lib) or "—" for lib in libs]
        lines.append([r.name, *(_number(r.seconds.get(lib)) for lib in libs), *ratio, *losses])
    return _markdown(lines)


def run(libs, programs=PROGRAMS, threads=1, quick=False, repeats=None):
    """Measure and format: (the settings line and table, whether every run finished)."""
    repeats = repeats or (1 if quick else 3)
    results = measure(libs, programs, repeats, threads, quick)
    settings = (f"{repeats} run(s) per library, taking turns, median wall-clock seconds of the whole process; "
                f"{threads} BLAS/OpenMP thread(s){'; quick (shortened) arguments' if quick else ''}")
    ok = all(None not in r.seconds.values() for r in results)
    return f"{settings}.\n\n{format_table(results, libs)}", ok


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", action="append", choices=["lantern", "torch"], help="default: lantern torch")
    parser.add_argument("--program", action="append", default=[], metavar="NAME",
                        help="only programs whose name contains NAME (repeatable)")
    parser.add_argument("--quick", action="store_true", help="one run each, with shortened arguments")
    parser.add_argument("--repeats", type=int, help="runs per library (default 3, quick 1)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    args = parser.parse_args(argv)
    chosen = [p for p in PROGRAMS if not args.program or any(f in p.name for f in args.program)]
    table, ok = run(args.lib or ["lantern", "torch"], chosen, args.threads, args.quick, args.repeats)
    print(table)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
