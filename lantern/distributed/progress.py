"""A background thread that keeps MPI's nonblocking collectives moving while Python computes.

MPICH advances a nonblocking operation only inside MPI calls: an async all_reduce posted during backward would sit
still until `wait()`, and DistributedDataParallel's overlap of communication with backward would be on paper only.
While at least one async Work is in flight, this thread calls MPI (an Iprobe on the Work's communicator, which
runs MPICH's progress engine for it) every 200 µs; NumPy's kernels release the GIL, so it runs beside them. With no Work
in flight it sleeps on a condition and costs nothing. MPICH's own progress thread (MPIR_CVAR_ASYNC_PROGRESS=1)
spins on a core instead, which halves the speed of blocking collectives on a 2-core machine.
LANTERN_DIST_PROGRESS_THREAD=0 turns the thread off (to measure what it buys).

>>> import lantern, lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> before = in_flight()  # async Works of this process still in flight (none, unless some were never waited on)
>>> work = dist.all_reduce(lantern.ones(2), async_op=True)  # a world of one: complete at once, nothing to drive
>>> work.is_completed(), in_flight() - before
(True, 0)
>>> dist.destroy_process_group()
"""
import atexit
import os
import threading
import time

from .mpi import MPI

INTERVAL_S = 2e-4
_UNUSED_TAG = 32000


class _ProgressThread:
    def __init__(self):
        self.condition = threading.Condition()
        self.pending = {}  # ProcessGroup -> how many of its Works are in flight
        self.thread = None
        self.stopping = False

    def begin(self, group):
        with self.condition:
            self.pending[group] = self.pending.get(group, 0) + 1
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="lantern-mpi-progress", daemon=True)
                self.thread.start()
                atexit.register(self.stop)  # after mpi4py's own exit handler was registered, so it runs first
            self.condition.notify()

    def end(self, group):
        with self.condition:
            self.pending[group] -= 1
            if not self.pending[group]:
                del self.pending[group]

    def stop(self):
        """End the thread: at exit, before MPI is finalized (MPI_Finalize waits for a thread inside MPI)."""
        with self.condition:
            self.stopping = True
            self.condition.notify()
        self.thread.join()

    def _run(self):
        while True:
            with self.condition:  # held while probing, so no communicator is freed under the probe (quiet())
                self.condition.wait_for(lambda: self.pending or self.stopping)
                if self.stopping:
                    return
                for group in self.pending:  # MPICH's progress is per communicator's channel: probe each
                    if group.communicator is not None:
                        group.communicator.Iprobe(MPI().ANY_SOURCE, _UNUSED_TAG)
            time.sleep(INTERVAL_S)


_thread = _ProgressThread()


def enabled():
    """Whether async Works get the progress thread (LANTERN_DIST_PROGRESS_THREAD=0 says no)."""
    return os.environ.get("LANTERN_DIST_PROGRESS_THREAD", "1") != "0"


def begin(group):
    """An async Work is in flight on `group`: keep MPI moving until the matching end()."""
    _thread.begin(group)


def end(group):
    """An async Work on `group` completed (or failed)."""
    _thread.end(group)


def quiet():
    """A context in which the thread does not touch MPI (to free a communicator it may be probing)."""
    return _thread.condition


def in_flight():
    """How many async Works the thread is driving now."""
    return sum(_thread.pending.values())
