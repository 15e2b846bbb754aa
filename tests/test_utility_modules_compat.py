"""tests/compat_scripts/utility_modules.py, an unmodified torch program over the smaller modules (types, prune,
quasirandom, hub, model_zoo, dlpack, collect_env), prints the same lines under torch and `python -m lantern.compat`."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "compat_scripts", "utility_modules.py")


def _output(args, cwd):
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if not line.startswith("Downloading: ")]


def test_same_output_as_torch(tmp_path):
    theirs = _output([SCRIPT], tmp_path)
    ours = _output(["-m", "lantern.compat", SCRIPT], tmp_path)
    assert ours == theirs
    assert len(ours) == 8
