"""The slow tier: every deliberate break in tests/mutation/mutation_check.py is caught by some test.

Not part of `make test`: conftest.py deselects slow tests unless they are asked for (`pytest -m slow`, or
LANTERN_SLOW=1). Run it with `.venv/bin/python -m pytest tests/test_mutation_check.py -m slow`.
"""
import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).parent / "mutation" / "mutation_check.py"


@pytest.mark.slow
def test_every_break_is_caught():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "MISSED" not in done.stdout
