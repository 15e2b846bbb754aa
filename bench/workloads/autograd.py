"""Autograd's per-call costs: recording a node for a small add, and a whole tiny forward + backward.

    python bench/run.py --filter backward
"""
from workload import Workload, at_most


def _two_leaves(lib):
    return {"a": lib.ones(16, requires_grad=True), "b": lib.ones(16, requires_grad=True)}


WORKLOADS = [
    Workload("add_16_requires_grad", "a + b", _two_leaves, at_most(3.0)),
    # grads are reset each time so the step measures a fresh backward, as in training (zero_grad -> None)
    Workload("tiny_backward_16", "a.grad = None; b.grad = None; (a * b).sum().backward()", _two_leaves,
             at_most(0.7)),
]
