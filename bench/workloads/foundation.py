"""The foundation's costs: per-call overhead of tiny ops and views, tensor construction, and a big matmul.

    python bench/run.py --filter view                 # among all workloads, both libraries
    python bench/workloads/foundation.py --lib torch  # this file's workloads, one library
"""
import os
import sys

if __name__ == "__main__":  # run as a script: the code it shares with the runner is one folder up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workload import Workload, at_least, at_most  # noqa: E402

_MATMUL_N = 1024


def _two_small(lib):
    return {"a": lib.arange(16, dtype=lib.float32), "b": lib.ones(16, dtype=lib.float32)}


def _small_square(lib):
    return {"x": lib.arange(16, dtype=lib.float32)}


def _small_matrix(lib):
    return {"x": lib.arange(16, dtype=lib.float32).view(4, 4)}


def _float_list(lib):
    return {"lib": lib, "values": [float(i) / 3 for i in range(16)]}


def _square_matrices(lib):
    n = _MATMUL_N
    lib.manual_seed(0)
    return {"a": lib.randn(n, n), "b": lib.randn(n, n)}


WORKLOADS = [
    Workload("add_16", "a + b", _two_small, at_most(1.5)),
    Workload("slice_4x4", "x[1:3]", _small_matrix),
    Workload("view_16_as_4x4", "x.view(4, 4)", _small_square),
    Workload("tensor_from_16_floats", "lib.tensor(values)", _float_list),
    Workload("matmul_1024", "a @ b", _square_matrices, at_least(0.9), flops=2 * _MATMUL_N ** 3),
]

if __name__ == "__main__":
    import run
    sys.exit(run.main(workloads=WORKLOADS))
