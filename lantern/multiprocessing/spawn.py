"""torch.multiprocessing.spawn: start `nprocs` processes running `fn(i, *args)`, wait for them, report failures.

The API is torch's: `spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method='spawn')`,
`start_processes(...)`, the ProcessContext that `join=False` returns, and the exceptions `join` raises: a child
that raised gives ProcessRaisedException carrying its traceback ("-- Process N terminated with the following
error:"), one that exited with a non-zero code or by a signal gives ProcessExitedException (exit_code,
signal_name); either way the other children are ended first (SIGTERM, then SIGKILL after a grace period).

How the processes start differs from torch, because lantern's process groups run on MPI and MPICH cannot connect
processes started one by one: with start_method 'spawn' (and 'forkserver'), the nprocs children are ONE MPI job,
started through the venv's mpiexec (lantern.multiprocessing.mpi_job). Each child rebuilds the call as the standard
spawn start method does (the parent's main module imported as `__mp_main__`, fn and args unpickled) and calls
`fn(i, *args)` with i its MPI rank, so `init_process_group("gloo", rank=i, world_size=nprocs)` in the children forms
a process group over MPI's COMM_WORLD. start_method='fork' keeps torch's semantics (forked copies of the parent,
fn need not be picklable) through the standard module; forked processes are not an MPI job, so they cannot form a
process group of more than one rank (init_process_group says so).

>>> import lantern.multiprocessing as mp
>>> error = mp.ProcessExitedException("process 1 terminated with exit code 3", error_index=1, error_pid=42,
...                                   exit_code=3)
>>> error.error_index, error.exit_code, error.signal_name, str(error)
(1, 3, None, 'process 1 terminated with exit code 3')
"""
import logging
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings

from . import mpi_job

ENV_VAR_PARALLEL_START = "TORCH_MP_PARALLEL_START"  # torch's opt-in for a parallel forkserver start; mpiexec
# starts every child at once anyway, so lantern reads it nowhere.

# How often join() looks at the children: an MPI job's ranks are not this process's children, so there is no
# sentinel to wait on (lantern.multiprocessing.mpi_job).
POLL_INTERVAL_S = 0.02

# How long join() lets the other children end after SIGTERM, when a failed child ends the job and the caller gave
# no grace period (torch's value).
TERMINATE_TIMEOUT_S = 30

log = logging.getLogger(__name__)

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "spawn",
           "SpawnContext", "start_processes"]


class ProcessException(Exception):
    """A spawned process failed: which one (error_index) and its pid (error_pid)."""
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A spawned process failed because its function raised; the message holds the child's traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code, or was ended by a signal (signal_name)."""
    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def call_with_index(fn, index, args, error_file):
    """What each child runs: fn(index, *args). An exception's traceback goes to error_file (pickled text) for the
    parent's ProcessRaisedException, and the child exits with code 1; a KeyboardInterrupt (the parent ending it)
    ends it quietly; SystemExit keeps its code."""
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        with open(error_file, "wb") as file:
            pickle.dump(traceback.format_exc(), file)
        sys.exit(1)


class ProcessContext:
    """The started children: `processes` (one per index), `error_files` (where a child that raised leaves its
    traceback), `pids()`, and `join()`.

    For an MPI job the processes are lantern.multiprocessing.mpi_job.RankProcess objects, not
    multiprocessing.Process: they have pid, exitcode, is_alive(), join(timeout), terminate() and kill(), but no
    sentinel (the children belong to mpiexec). pid is the child's own process id, known once it has started."""

    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.running = set(range(len(processes)))

    def pids(self):
        """The children's process ids, in index order."""
        return [int(process.pid) for process in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None):
        """Wait up to `timeout` seconds (None: without limit) for a child to end. True when all have ended, False
        while some run. When one failed, end the others (SIGTERM after `grace_period`, SIGKILL after another) and
        raise ProcessRaisedException or ProcessExitedException for it."""
        if not self.running:
            return True
        error_index = None
        for index in self._wait_for_an_end(timeout):
            self.running.discard(index)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.running
        self._end_the_others(grace_period)
        raise self._failure(error_index)

    def _wait_for_an_end(self, timeout):
        """The indices of the running children that have ended, in the order they ended where that is known (an
        MPI job's ranks record when), else by index; waits until there is one, or the timeout passes (then the
        list may be empty)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            ended = [index for index in sorted(self.running) if self.processes[index].exitcode is not None]
            if ended or (deadline is not None and time.monotonic() >= deadline):
                return sorted(ended, key=lambda index: getattr(self.processes[index], "ended_at", 0.0))
            time.sleep(POLL_INTERVAL_S)

    def _join_all(self, timeout):
        deadline = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))

    def _end_the_others(self, grace_period):
        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", process.pid)
                process.terminate()
        self._join_all(TERMINATE_TIMEOUT_S if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM , forcefully exiting via SIGKILL", process.pid)
                process.kill()
            process.join()

    def _failure(self, index):
        process = self.processes[index]
        if not os.access(self.error_files[index], os.R_OK):
            code = process.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                return ProcessExitedException(f"process {index:d} terminated with signal {name}", error_index=index,
                                              error_pid=process.pid, exit_code=code, signal_name=name)
            return ProcessExitedException(f"process {index:d} terminated with exit code {code:d}", error_index=index,
                                          error_pid=process.pid, exit_code=code)
        with open(self.error_files[index], "rb") as file:
            child_traceback = pickle.load(file)
        message = f"\n\n-- Process {index:d} terminated with the following error:\n{child_traceback}"
        return ProcessRaisedException(message, index, process.pid)


class SpawnContext(ProcessContext):
    """ProcessContext's name before PyTorch 1.4 (deprecated)."""

    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start nprocs processes running fn(i, *args); with join, wait for all (raising for a failed one), else
    return their ProcessContext. 'spawn' and 'forkserver' start one MPI job through mpiexec; 'fork' forks."""
    multiprocessing.get_context(start_method)  # torch's error for an unknown method: ValueError
    error_files = [_error_file_path() for _ in range(nprocs)]
    if start_method == "fork":
        processes = _fork(fn, args, nprocs, daemon, error_files)
    else:
        processes = mpi_job.start(fn, args, nprocs, daemon, error_files)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start nprocs processes running fn(i, *args) as one MPI job (see the module's docstring); with join=True
    wait for them and return None, else return the ProcessContext. start_method is deprecated: always 'spawn'."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")


def _error_file_path():
    """A path no file has yet: the child writes its traceback there only when it raises."""
    with tempfile.NamedTemporaryFile(prefix="pytorch-errorfile-", suffix=".pickle", delete=False) as file:
        path = file.name
    os.unlink(path)
    return path


def _fork(fn, args, nprocs, daemon, error_files):
    context = multiprocessing.get_context("fork")
    processes = []
    for index in range(nprocs):
        process = context.Process(target=call_with_index, args=(fn, index, args, error_files[index]), daemon=daemon)
        process.start()
        processes.append(process)
    return processes
