"""Work: the handle of a collective in flight (torch.distributed.Work), over MPI's nonblocking requests.

Every lantern collective posts nonblocking MPI operations and returns a Work; with async_op=False it waits at
once. `wait()` drives MPI until the requests complete (testing them back to back for 5 ms, as MPI's own blocking
calls do, then with naps that grow to 1 ms), then runs the collective's finishing step (copy a staging
buffer back into non-contiguous outputs, divide an AVG, unpickle objects). It never hangs: if the requests have not
completed within the group's timeout (a peer died, or never joined the collective), it raises DistBackendError, and
the group is then unusable, as in PyTorch.

>>> import lantern, lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> work = dist.all_reduce(lantern.ones(2), async_op=True)
>>> work.wait(), work.is_completed(), work.is_success()
(True, True, True)
>>> dist.destroy_process_group()
"""
import datetime
import time

from . import progress
from ..futures import Future
from .errors import DistBackendError
from .mpi import MPI

_SPIN_S, _FIRST_NAP_S, _LONGEST_NAP_S = 5e-3, 2e-5, 1e-3


class Work:
    """A collective's completion: wait(), is_completed(), result(), exception()."""

    def __init__(self, group, name, requests, finish=None, result=(), statuses=None, source=None):
        self._group, self._name = group, name
        self._requests = list(requests)
        self._statuses = statuses
        self._finish = finish
        self._result = list(result)
        self._done = not self._requests and finish is None
        self._exception = None
        self._source = source  # () -> the sender's global rank, for a receive
        self._completion_callbacks = []
        self._driven = False
        self._failure_futures = []

    def __repr__(self):
        state = "completed" if self._done else "pending"
        return f"<Work {self._name} ({state})>"

    def is_completed(self):
        """Whether the operation finished; asking drives MPI's progress one step (it never blocks)."""
        if not self._done and self._exception is None and MPI().Request.Testall(self._requests, self._statuses):
            self._complete()
        return self._done

    def is_success(self):
        """Whether it finished without an error."""
        return self.is_completed() and self._exception is None

    def exception(self):
        """The error it ended with, or None."""
        return self._exception

    def wait(self, timeout=None):
        """Block until done (True), or raise DistBackendError after `timeout` (a timedelta; default: the group's)."""
        if self._exception is not None:
            raise self._exception
        limit = timeout if timeout is not None else self._group.timeout
        seconds = limit.total_seconds() if isinstance(limit, datetime.timedelta) else float(limit)
        start = time.monotonic()
        nap = 0.0
        while not self.is_completed():
            now = time.monotonic()
            if now - start > seconds:
                self._fail(DistBackendError(
                    f"{self._name} timed out after {seconds * 1000:.0f} ms on rank {self._group.rank()} of "
                    f"process group {self._group.group_name!r}: a peer never joined the collective (it died, hung "
                    "or took another code path). The group cannot be used any more."))
            if now - start > _SPIN_S:  # a slow peer: stop spinning, nap between tests (20 µs growing to 1 ms)
                time.sleep(nap)
                nap = min(max(nap * 2, _FIRST_NAP_S), _LONGEST_NAP_S)
        return True

    def _fail(self, error):
        self._exception = error
        self._group._broken = error
        self._stop_driving()
        for future in self._failure_futures:
            future.set_exception(error)
        raise error

    def result(self):
        """The output tensors (the in-place ones for most collectives); torch's error before it completes."""
        if not self.is_completed():
            raise RuntimeError("Work needs to be completed before calling result(). Should call wait() before "
                               "result().")
        return self._result

    def source_rank(self):
        """The sender's rank, for a receive from any source."""
        self.wait()
        return -1 if self._source is None else self._source()

    def get_future(self):
        """A torch.futures.Future of the output tensors, completed when this Work completes; waiting on it (or on
        a future chained from it with then()) waits on the Work."""
        future = WorkFuture(self)
        self.on_completion(lambda: future.set_result(self._result))
        self._failure_futures.append(future)
        return future

    def synchronize(self):
        """Wait; on the CPU there is no stream to synchronize with."""
        self.wait()

    def keep_moving(self):
        """Have the progress thread (lantern.distributed.progress) drive this Work's MPI operations until it
        completes: for Works the caller does not wait on at once. One that is complete already (a world of one,
        a small message MPI sent at once) needs no driving: waking the thread costs a GIL handoff."""
        if not self.is_completed() and progress.enabled():
            progress.begin(self._group)
            self._driven = True

    def _stop_driving(self):
        if self._driven:
            self._driven = False
            progress.end(self._group)

    def __del__(self):
        self._stop_driving()  # dropped before anyone waited: the progress thread need not drive it any more

    def on_completion(self, callback):
        """Call `callback()` when the operation completes (at once if it has)."""
        if self._done:
            callback()
        else:
            self._completion_callbacks.append(callback)

    def _complete(self):
        self._stop_driving()
        if self._finish is not None:
            self._finish()
        self._done = True
        for callback in self._completion_callbacks:
            callback()


class WorkFuture(Future):
    """A Future that a Work completes: wait() drives the Work (MPI moves only when asked), and so do the futures
    chained from it."""

    def __init__(self, work):
        super().__init__()
        self._work = work

    def wait(self):
        if not self.done():
            try:
                self._work.wait()
            except DistBackendError:
                pass  # the future holds the error now: the wait below raises it
        return super().wait()

    def _chained(self):
        return WorkFuture(self._work)
