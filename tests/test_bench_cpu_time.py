"""bench/cpu_time.py: wall and CPU time per call of a workload in one library (spinning threads show as CPU)."""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_prints_wall_and_cpu_time_per_call_of_the_chosen_workloads():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "bench/cpu_time.py", "--lib", "lantern", "--threads", "2",
                           "--filter", "add_16_requires_grad", "--seconds", "0.05"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    number = r"\d+\.\d+"
    assert re.fullmatch(rf"lantern threads=2 add_16_requires_grad +wall +{number} ms  cpu +{number} ms  "
                        rf"cpu/wall {number}\n", done.stdout), done.stdout
