"""The training steps of training.py with `model = torch.compile(model)`, in both libraries (issue 19).

    python bench/run.py --filter compiled           # among all workloads, both libraries
    python bench/workloads/training_compiled.py --lib torch  # this file's workloads, one library

Each row is lantern's compiled step against PyTorch's *eager* step (the goal: faster than eager, < 1), with
PyTorch's compiled step (inductor) beside it for reference. The setup compiles the model and runs a few steps
before anything is timed, so that the first compilation (seconds for torch's inductor, which generates and
builds C++) and any recompilation after the first step are not in the timings. PyTorch's dynamo does not trace
nn.LSTM and captures nothing of the LSTM tagger's forward (torch._dynamo.explain finds no graph), so torch's
compiled LSTM step is its eager one.
"""
import os
import sys

if __name__ == "__main__":  # run as a script: the code it shares with the runner is one folder up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from workload import Workload, below  # noqa: E402
from workloads import training  # noqa: E402

WARMUP_STEPS = 3


def compiled(setup, stmt):
    """A setup that builds the step with `setup`, compiles its model and runs `stmt` WARMUP_STEPS times."""
    def build(lib):
        namespace = setup(lib)
        namespace["model"] = lib.compile(namespace["model"])
        code = compile(stmt, "warm-up", "exec")
        for _ in range(WARMUP_STEPS):
            exec(code, namespace)
        return namespace
    build.__name__ = f"compiled_{setup.__name__.lstrip('_')}"
    return build


WORKLOADS = [Workload(f"{step.name}_compiled", step.stmt, compiled(step.setup, step.stmt), below(1.0),
                      baseline=step.setup)
             for step in training.WORKLOADS]

if __name__ == "__main__":
    import run
    sys.exit(run.main(workloads=WORKLOADS))
