"""Autograd's per-call costs: recording a node for a small add, and a whole tiny forward + backward.

    python bench/run.py --filter backward           # among all workloads, both libraries
    python bench/workloads/autograd.py --lib torch  # this file's workloads, one library
"""
import os
import sys

if __name__ == "__main__":  # run as a script: the code it shares with the runner is one folder up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workload import Workload, at_most  # noqa: E402


def _two_leaves(lib):
    return {"a": lib.ones(16, requires_grad=True), "b": lib.ones(16, requires_grad=True)}


WORKLOADS = [
    Workload("add_16_requires_grad", "a + b", _two_leaves, at_most(2.0)),
    # grads are reset each time so the step measures a fresh backward, as in training (zero_grad -> None)
    Workload("tiny_backward_16", "a.grad = None; b.grad = None; (a * b).sum().backward()", _two_leaves,
             at_most(1.0)),
]

if __name__ == "__main__":
    import run
    sys.exit(run.main(workloads=WORKLOADS))
