"""The operator set's heavy hitters (issue 4): convolution, pooling, softmax, layer_norm, a 1000-class
cross_entropy and embedding backward, forward + backward where training needs it. Goal: each within 2× torch.

    python bench/run.py --filter conv2d              # among all workloads, both libraries
    python bench/workloads/operators.py --lib torch  # this file's workloads, one library
"""
import os
import sys

if __name__ == "__main__":  # run as a script: the code it shares with the runner is one folder up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workload import Workload, at_most  # noqa: E402


def _conv(lib):
    lib.manual_seed(0)
    return {"F": lib.nn.functional, "x": lib.randn(64, 3, 32, 32, requires_grad=True),
            "w": lib.randn(16, 3, 3, 3, requires_grad=True)}


def _images(lib):
    lib.manual_seed(0)
    return {"F": lib.nn.functional, "x": lib.randn(64, 16, 32, 32, requires_grad=True)}


def _logits(lib):
    lib.manual_seed(0)
    return {"F": lib.nn.functional, "x": lib.randn(64, 1000, requires_grad=True),
            "y": lib.randint(0, 1000, (64,))}


def _activations(lib):
    lib.manual_seed(0)
    return {"F": lib.nn.functional, "x": lib.randn(64, 128, 256, requires_grad=True),
            "w": lib.ones(256), "b": lib.zeros(256)}


def _embedding(lib):
    lib.manual_seed(0)
    return {"F": lib.nn.functional, "w": lib.randn(10000, 64, requires_grad=True),
            "idx": lib.randint(0, 10000, (32, 64))}


WORKLOADS = [
    Workload("conv2d_fwd_bwd", "w.grad = x.grad = None; F.conv2d(x, w, padding=1).sum().backward()", _conv,
             at_most(2.0)),
    Workload("max_pool2d_fwd_bwd", "x.grad = None; F.max_pool2d(x, 2).sum().backward()", _images, at_most(2.0)),
    Workload("cross_entropy_1000_fwd_bwd", "x.grad = None; F.cross_entropy(x, y).backward()", _logits,
             at_most(2.0)),
    Workload("layer_norm_fwd_bwd", "x.grad = None; F.layer_norm(x, (256,), w, b).sum().backward()", _activations,
             at_most(2.0)),
    Workload("softmax_64x1000", "F.softmax(x, dim=1)", _logits, at_most(2.0)),
    Workload("embedding_fwd_bwd", "w.grad = None; F.embedding(idx, w).sum().backward()", _embedding, at_most(2.0)),
]

if __name__ == "__main__":
    import run
    sys.exit(run.main(workloads=WORKLOADS))
