"""What a benchmark is: a `Workload` record (setup + timed statement + goal), and how the runner finds them.

Every module in `bench/workloads/` holds a `WORKLOADS` list; a new benchmark is one more entry there, or one
more file. A workload only touches the PyTorch API of the module it is given, so the same record measures
lantern and torch:

    Workload("add_16", "a + b", lambda lib: {"a": lib.ones(16), "b": lib.ones(16)}, at_most(3.0))

>>> at_most(3.0).met(2.5), at_least(0.9).met(0.8), str(at_least(0.9)), below(1.0).met(1.0)
(True, False, '≥ 0.9', False)
"""
import dataclasses
import importlib
import pkgutil
from typing import Callable


@dataclasses.dataclass(frozen=True)
class Goal:
    """A bound on the ratio lantern ÷ torch of the reported number (µs per call, or GFLOP/s)."""

    op: str        # "≤", "≥" or "<"
    bound: float

    def met(self, ratio):
        return {"≤": ratio <= self.bound, "≥": ratio >= self.bound, "<": ratio < self.bound}[self.op]

    def __str__(self):
        return f"{self.op} {self.bound:g}"


def at_most(bound):
    return Goal("≤", bound)


def at_least(bound):
    return Goal("≥", bound)


def below(bound):
    return Goal("<", bound)


@dataclasses.dataclass(frozen=True)
class Workload:
    """`stmt` is timed timeit-style (inlined in a loop, no call overhead) in the namespace `setup(lib)` returns.

    With `flops` set the result is reported as throughput (GFLOP/s) instead of µs per call. With `memory_goal`
    set the runner also measures the peak memory of running `stmt` (bench/memory.py) and bounds lantern ÷ torch.
    With `baseline` set (another setup), the goal is on lantern running `setup` ÷ torch running `baseline`, and
    torch running `setup` is measured too, for reference: the compiled steps, judged against torch eager.
    """

    name: str
    stmt: str
    setup: Callable
    goal: Goal | None = None
    flops: int = 0
    memory_goal: Goal | None = None
    baseline: Callable | None = None

    @property
    def unit(self):
        return "GFLOP/s" if self.flops else "µs"

    def value(self, seconds_per_call):
        """The number the table shows for a time per call."""
        return self.flops / seconds_per_call / 1e9 if self.flops else seconds_per_call * 1e6


def all_workloads():
    """Every workload of every module in bench/workloads/, in file then table order."""
    import workloads
    found = []
    for info in sorted(pkgutil.iter_modules(workloads.__path__), key=lambda m: m.name):
        found += importlib.import_module(f"{workloads.__name__}.{info.name}").WORKLOADS
    return found
