"""lantern.utils.benchmark, torch.utils.benchmark over lantern: Timer (wall-clock measurements and callgrind
instruction counts of a statement), Measurement, Compare (tables of measurements) and the Fuzzer (random inputs
from a seed). docs/benchmark-utils.md shows them at work.

>>> from lantern.utils.benchmark import Timer
>>> m = Timer("x + x", setup="x = torch.ones(16)").blocked_autorange(min_run_time=0.01)
>>> m.number_per_run >= 1 and m.median > 0
True
"""
from .utils.common import *  # noqa: F401,F403
from .utils.timer import *  # noqa: F401,F403
from .utils.compare import *  # noqa: F401,F403
from .utils.fuzzer import *  # noqa: F401,F403
from .utils.valgrind_wrapper.timer_interface import *  # noqa: F401,F403
from .utils.sparse_fuzzer import *  # noqa: F401,F403
