"""`make demo` and `make bench` keep working: the demo runs clean, the bench runner prints its table."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_demo_trains_to_97_percent_and_shows_the_internals():
    result = run("examples/demo.py")
    assert result.returncode == 0, result.stderr
    accuracies = [float(line.rsplit("test accuracy", 1)[1].split("%")[0].strip(": "))
                  for line in result.stdout.splitlines() if "test accuracy" in line]
    assert len(accuracies) == 2 and accuracies[0] == accuracies[1] >= 97.0, result.stdout
    for line in ["== strided views: no data moves ==",
                 "y.size(): (2, 3)  y.stride(): (16, 1)  y.storage_offset(): 9",
                 "y.data_ptr() - x.data_ptr(): 72 bytes",
                 "shared storage: True",
                 "x._version 0 -> 1, y._version 1",
                 "Use .reshape(...) instead",
                 "stride (0, 1) same memory: True",
                 "(no memory behind it)",
                 "view of input 0",
                 "autograd graph from the loss back: NllLossBackward0 -> AddmmBackward0 -> ViewBackward0",
                 "covers           6 of the storage's 12 elements: 1, 3, 5, 7, 9, 11",
                 "Self CPU time total:",
                 "pictures drawn:"]:
        assert line in result.stdout, line


def test_bench_quick_prints_the_table():
    result = run("bench/run.py", "--quick", "--filter", "add_16")
    assert result.returncode == 0, result.stderr
    assert ("| benchmark | unit | 1 thread: lantern | torch | lantern ÷ torch | 2 threads: lantern | torch "
            "| lantern ÷ torch | goal | met |") in result.stdout, result.stdout
    assert "| add_16 | µs |" in result.stdout
