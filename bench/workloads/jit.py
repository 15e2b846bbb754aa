"""lantern.jit (issue 6): an elementwise chain in eager mode and compiled into fused kernels.

    python bench/run.py --filter gelu_chain    # among all workloads, both libraries
    python bench/workloads/jit.py --lib torch  # this file's workloads, one library

The chain is GELU's tanh approximation on 1M float32 values, forward and backward. `gelu_chain_eager` runs the
plain ops in both libraries. `gelu_chain_compiled` runs the function scripted by lantern.jit (the fuser turns the
chain into one prim::FusionGroup: one generated loop forward, one backward) against PyTorch *eager*, so its ratio
reads compiled lantern ÷ eager torch.
"""
import os
import sys

if __name__ == "__main__":  # run as a script: the code it shares with the runner is one folder up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workload import Workload, at_most  # noqa: E402

STEP = "x.grad = None; f(x).sum().backward()"


def gelu_chain(x):
    return x * 0.5 * (1 + (0.79788456 * (x + 0.044715 * x ** 3)).tanh())


def _eager(lib):
    lib.manual_seed(0)
    return {"f": gelu_chain, "x": lib.randn(1 << 20, requires_grad=True)}


def _compiled(lib):
    namespace = _eager(lib)
    if lib.__name__ == "lantern":
        namespace["f"] = lib.jit.script(gelu_chain)
    return namespace


WORKLOADS = [
    Workload("gelu_chain_eager", STEP, _eager, at_most(1.5)),
    Workload("gelu_chain_compiled", STEP, _compiled, at_most(0.5)),
]

if __name__ == "__main__":
    import run
    sys.exit(run.main(workloads=WORKLOADS))
