"""Run a program with the default generator seeded first, as `python program.py [args...]` would run it:

    python tests/seeded_program.py SEED program.py [args...]

For the real-program tests of unseeded programs (tests/test_real_programs.py's `seed`): each library then draws
the same initial weights and batches, so their results are compared instead of two random draws. `torch` is
whichever library the process has under that name (lantern under `python -m lantern.compat`).
"""
import os
import runpy
import sys

import torch

if __name__ == "__main__":
    torch.manual_seed(int(sys.argv[1]))
    sys.argv = sys.argv[2:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    runpy.run_path(sys.argv[0], run_name="__main__")
