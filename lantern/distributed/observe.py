"""How the profiler and the dispatch trace see collectives: each one is a named range, as PyTorch's profiler
shows gloo's (`gloo:all_reduce`), around the posting of the MPI operation and, when not async, the wait.

>>> import lantern, lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> with lantern.profiler.profile() as prof:
...     dist.all_reduce(lantern.ones(4))
>>> [e.name for e in prof.events() if e.name.startswith("gloo:")]
['gloo:all_reduce']
>>> dist.destroy_process_group()
"""
import contextlib

from ..core.state import tls
from ..profiler.profile import record_function

_PROFILER_NAMES = {"allreduce": "all_reduce", "_allgather_base": "all_gather_into_tensor",
                   "_reduce_scatter_base": "reduce_scatter_tensor", "allgather": "all_gather",
                   "alltoall": "all_to_all", "alltoall_base": "all_to_all_single"}


def collective(name, group, tensors):
    """A context that shows the collective `name` to whatever watches this thread (nothing when nobody does)."""
    if tls.dispatch_trace is None:
        return contextlib.nullcontext()
    return record_function(f"{group.backend}:{_PROFILER_NAMES.get(name, name)}")
