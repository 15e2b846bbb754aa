"""How the profiler and the dispatch trace see collectives, named as PyTorch's profiler names gloo's.

A collective shows as two ranges, as in PyTorch: the operator (`c10d::allreduce_`) around the call that posts it
(and, when not async, waits for it), and the backend's work (`gloo:all_reduce`), from posting to completion. An
async collective completes later, while other work runs (backward, in DistributedDataParallel), so its work range
is added to the profiler's records when the Work completes, at the top level (PyTorch records gloo's work on
gloo's thread): the profile then shows how long the communication was in flight, overlapping whatever ran
meanwhile. The dispatch
trace (lantern.debug.trace_dispatch) prints the operator range as a `record_function:` header.

>>> import lantern, lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> with lantern.profiler.profile() as prof:
...     work = dist.all_reduce(lantern.ones(4), async_op=True)
...     _ = lantern.ones(2) * 3
...     _ = work.wait()
>>> [e.name for e in prof.events() if "all" in e.name]
['c10d::allreduce_', 'gloo:all_reduce']
>>> dist.destroy_process_group()
"""
import contextlib
from time import perf_counter_ns

from ..core.state import tls
from ..profiler.profile import record_function
from ..profiler.recorder import RANGE, Recorder

NAMES = {  # lantern's name of a collective: (PyTorch's c10d operator, the name of gloo's work)
    "allreduce": ("allreduce_", "all_reduce"), "broadcast": ("broadcast_", "broadcast"),
    "reduce": ("reduce_", "reduce"), "allgather": ("allgather_", "all_gather"),
    "_allgather_base": ("_allgather_base_", "all_gather"), "reduce_scatter": ("reduce_scatter_", "reduce_scatter"),
    "_reduce_scatter_base": ("_reduce_scatter_base_", "reduce_scatter"), "gather": ("gather_", "gather"),
    "scatter": ("scatter_", "scatter"), "alltoall": ("alltoall_", "all_to_all"),
    "alltoall_base": ("alltoall_base_", "all_to_all"), "barrier": ("barrier", "barrier"), "send": ("send", "send"),
    "recv": ("recv_", "recv"), "recv_any_source": ("recv_any_source_", "recvAnySource"),
}


def _recorders():
    watcher = tls.dispatch_trace
    while watcher is not None:
        if isinstance(watcher, Recorder):
            yield watcher
        watcher = watcher.inner


@contextlib.contextmanager
def collective(name, group):
    """Show the collective `name` to whatever watches this thread; `follow(work)` (called by the block with the
    Work it posts) arranges for the work range to be recorded when that Work completes."""
    if tls.dispatch_trace is None:
        yield _ignore
        return
    operator, work_name = NAMES[name]
    with record_function(f"c10d::{operator}"):
        started = [(recorder, recorder.open[-1] if recorder.open else -1) for recorder in _recorders()]
        start_ns = perf_counter_ns()

        def follow(work):
            work.on_completion(lambda: _record_work(started, f"{group.backend}:{work_name}", start_ns))
        yield follow


def _record_work(started, name, start_ns):
    """Add the work's range: under the operator range while that is still open (a blocking collective), else at
    the top level, as PyTorch's profiler shows gloo's work from its own thread (it overlaps what ran meanwhile)."""
    end_ns = perf_counter_ns()
    for recorder, parent in started:
        recorder.records.append([RANGE, name, parent if parent in recorder.open else -1, start_ns, end_ns, 0, 0,
                                 [] if recorder.record_shapes else None, None])


def _ignore(work):
    pass
