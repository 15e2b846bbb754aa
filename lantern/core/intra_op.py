"""Intra-op parallelism: one large array operation split into chunks that run on several threads at once
(PyTorch's at::parallel_for).

NumPy's ufuncs, copies and BLAS calls release the GIL while they work, so the chunks of one operation (slices of a
convolution's batch, flat ranges of an elementwise kernel) truly run concurrently on several cores; only the Python
between the NumPy calls takes turns. `parallel_chunks(n, fn, grain)` calls `fn(start, stop)` over contiguous ranges
that cover [0, n) and returns when all are done:

- the readable path is one call, `fn(0, n)`: so it runs in reference mode, with one thread (torch.set_num_threads(1)),
  for fewer than two grains of work (a handoff to another thread costs tens of microseconds), and inside a chunk
  (no nesting);
- `run_on_pool` (the named specialisation) splits [0, n) into one range per thread and runs the first on the calling
  thread and the others on a pool of persistent worker threads, started on first use. The thread count is
  lantern.get_num_threads().

`parallel_items(items, fn)` shares the items instead: each thread takes the next one when it is free, so a thread
that starts late or runs slower does fewer (a convolution's batch slices).

This pool is the only one that works at more than one thread: with fast paths on and a count above one, BLAS is
held to one thread for the whole process (from the first time lantern reads the count, or set_num_threads), and
large GEMMs are split on this pool instead (core/parallel_gemm.py), as are numba's fused kernels
(jit/fusion_numba.py). OpenBLAS's own threads keep spinning for ~0.1 s after every threaded call, so a second pool
beside this one takes the cores this one needs. Reference mode, or one thread, gives BLAS the count back.

A caller whose result must not depend on the thread count keeps every chunk's work independent (each chunk writes
its own part of the output) and reduces across chunks itself in a fixed order.

>>> import numpy as np
>>> x, out = np.arange(6.0), np.empty(6)
>>> parallel_chunks(6, lambda start, stop: np.multiply(x[start:stop], 2, out=out[start:stop]), grain=1)
>>> out.tolist()
[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
"""
import contextlib
import os
import queue
import threading

from threadpoolctl import ThreadpoolController

from .reference import mode, on_switch, specialisation


class _Threads:
    """The intra-op thread count: lantern.get_num_threads() read once, then kept by set_num_threads."""
    count = None


def set_num_threads(count):
    """Use `count` threads (the caller included) from now on; lantern.set_num_threads calls this."""
    _Blas.controllers = None      # also reach BLAS libraries loaded since the last call (SciPy's)
    _Threads.count = count
    _hold_blas()


def num_threads():
    """How many threads a parallel_chunks call may use."""
    if _Threads.count is None:
        _Threads.count = max(_blas_threads(), 1)
        _hold_blas()
    return _Threads.count


def blas_thread_limit():
    """The thread count BLAS gets: one while this pool does the parallel work (fast paths on, more than one
    thread), else lantern's count."""
    count = num_threads()
    return 1 if mode.fast and count > 1 else count


def _hold_blas():
    _limit_blas(blas_thread_limit())


def _hold_blas_again_after_mode_switch():
    if _Threads.count is not None:
        _hold_blas()


on_switch(_hold_blas_again_after_mode_switch)


# The least work worth handing to another thread, in array elements: a handoff costs tens of microseconds, about
# what an elementwise pass over this many float32 takes.
ELEMENTS_PER_CHUNK = 1 << 16


def grain(elements_per_item):
    """The fewest items a chunk should hold when each item is this many array elements (at least one)."""
    return max(1, -(-ELEMENTS_PER_CHUNK // max(elements_per_item, 1)))


def chunk_count(n, grain):
    """How many chunks parallel_chunks splits n items into: one per thread, each at least `grain` items; 1 means
    one serial call."""
    if not mode.fast or n < 2 * grain or _pool.busy.locked():
        return 1
    return min(num_threads(), n // grain)


def parallel_chunks(n, fn, grain):
    """Call fn(start, stop) over contiguous ranges covering [0, n), concurrently where chunk_count allows."""
    chunks = chunk_count(n, grain)
    if chunks <= 1:
        fn(0, n)
    else:
        run_on_pool([(n * i // chunks, n * (i + 1) // chunks) for i in range(chunks)], fn)


def parallel_items(items, fn):
    """Call fn(taken) on each thread, `taken` one iterator over `items` that all threads share: each thread takes
    the next item when it has finished the last, so one that starts late (waking a worker takes tens of µs) or runs
    slower takes fewer, where parallel_chunks' fixed ranges wait for the slowest. fn must compute an item the same
    whichever thread takes it. Serial (fn(iter(items))) where parallel_chunks' one call would be, for fewer than
    two items.

    >>> done = []
    >>> parallel_items(["a", "b", "c"], lambda taken: done.extend(item.upper() for item in taken))
    >>> sorted(done)
    ['A', 'B', 'C']
    """
    chunks = chunk_count(len(items), 1)
    if chunks <= 1:
        fn(iter(items))
    else:
        share_on_pool(items, fn, chunks)


@specialisation(replaces="intra_op.parallel_items's serial call fn(iter(items))",
                when="fast paths on, lantern.get_num_threads() > 1, two or more items, not already inside a chunk",
                parity_test="tests/test_intra_op.py::test_shared_items_match_serial_call")
def share_on_pool(items, fn, threads):
    """fn(taken) on `threads` threads (the caller's one of them), taken one iterator over items for all: a list's
    or range's iterator hands out each item once whichever thread asks (its next() runs under the GIL)."""
    taken = iter(items)
    run_on_pool([(taken,)] * threads, fn)


@specialisation(replaces="intra_op.parallel_chunks's serial call fn(0, n)",
                when="fast paths on, lantern.get_num_threads() > 1, n ≥ 2 grains, not already inside a chunk",
                parity_test="tests/test_intra_op.py::test_run_on_pool_matches_serial_call")
def run_on_pool(ranges, fn):
    """fn(start, stop) for each range (fn(*arguments) for each tuple of arguments): the first on the calling
    thread, the rest on the pool's workers (BLAS runs one thread, see blas_thread_limit). An exception in any chunk
    is raised here once all have finished. Should another thread hold the pool, the ranges run here one after
    another."""
    if not _pool.busy.acquire(blocking=False):
        for bounds in ranges:
            fn(*bounds)
        return
    try:
        workers = _pool.workers(len(ranges) - 1)
        for worker, bounds in zip(workers, ranges[1:]):
            worker.put((fn, bounds))
        errors = []
        try:
            fn(*ranges[0])
        except BaseException as error:  # noqa: B036 (re-raised below, after the workers are done)
            errors.append(error)
        for _ in workers:
            error = _pool.done.get()
            if error is not None:
                errors.append(error)
    finally:
        _pool.busy.release()
    if errors:
        raise errors[0]


class _Pool:
    """Worker threads, each waiting on its own queue for (fn, (start, stop)) and answering on `done` (None, or the
    exception fn raised). `busy` is held while a parallel_chunks call uses them: a second call meanwhile (from a
    chunk, or another thread) runs serially."""

    def __init__(self):
        self.busy = threading.Lock()
        self.done = queue.SimpleQueue()
        self.queues = []

    def workers(self, count):
        while len(self.queues) < count:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name=f"lantern-intra-op-{len(self.queues) + 1}",
                             daemon=True).start()
            self.queues.append(inbox)
        return self.queues[:count]

    def _serve(self, inbox):
        while True:
            fn, bounds = inbox.get()
            try:
                fn(*bounds)
            except BaseException as error:  # noqa: B036 (handed to the caller, which raises it)
                outcome = error
            else:
                outcome = None
            # drop the chunk (and the arrays its closure holds) before answering: lantern's allocator caches a
            # tensor's block only when no array still looks at it, else the next step faults in fresh pages
            del fn, bounds
            self.done.put(outcome)
            del outcome


_pool = _Pool()


def _forget_pool_in_child():
    """A forked child has none of its parent's threads: it starts its own pool when it needs one."""
    global _pool
    _pool = _Pool()


os.register_at_fork(after_in_child=_forget_pool_in_child)


# ---- BLAS's own threads --------------------------------------------------------------------------------------

class _Blas:
    """threadpoolctl's controllers of the BLAS libraries loaded at first use (reading or setting one is a C call)."""
    controllers = None


def _blas_controllers():
    if _Blas.controllers is None:
        _Blas.controllers = ThreadpoolController().select(user_api="blas").lib_controllers
    return _Blas.controllers


def _blas_threads():
    return max((c.get_num_threads() for c in _blas_controllers()), default=1)


def _limit_blas(count):
    """Hold every BLAS library to `count` threads; returns what to restore."""
    previous = [(c, c.get_num_threads()) for c in _blas_controllers()]
    for c, threads in previous:
        if threads != count:
            c.set_num_threads(count)
    return previous


def _restore_blas(previous):
    for c, threads in previous:
        if threads != c.get_num_threads():
            c.set_num_threads(threads)


@contextlib.contextmanager
def one_blas_thread():
    """Hold every BLAS library to one thread inside the block, then give back the counts it had."""
    previous = _limit_blas(1)
    try:
        yield
    finally:
        _restore_blas(previous)
