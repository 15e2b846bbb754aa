"""The parent's side of spawn's MPI job: write what the children need, start them through mpiexec, watch them.

`start(fn, args, nprocs, daemon, error_files)` pickles, for each child, two things into a job folder, as the
standard spawn start method sends them down a pipe: the preparation data (the parent's sys.path, cwd, main
module, authkey ...; under `python -m lantern.compat` also the hook that aliases torch to lantern) and
(fn, args, the child's error file). It then starts
`mpiexec -n nprocs python -m lantern.multiprocessing.rank <job folder>`: nprocs processes that MPI connects as
one world, so the process group they make with init_process_group spans them all. Each rank forks the child that
runs fn and stays beside it to record the child's pid and how it ended (lantern.multiprocessing.rank): files in the
job folder, which RankProcess reads, since the children belong to mpiexec and cannot be waited on from here.

Objects that multiprocessing shares only with the processes it starts (queues, pipes, locks, tensors in shared
memory) are pickled as for such a process, their file descriptors handed over by multiprocessing's resource
sharer (a socket that the children, holding the parent's authkey, connect to).

The children's output goes to the parent's stdout and stderr (mpiexec forwards it through pipes; when the parent's
stdout is a terminal, the children's is line-buffered, as a terminal would make it); their stdin is empty.
"""
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from multiprocessing import context, reduction, resource_sharer
from multiprocessing import spawn as standard_spawn

from ..distributed.launcher.api import end_with_the_launcher, mpiexec_path


def payload_path(job_dir, index):
    """Where the parent leaves what child `index` unpickles."""
    return os.path.join(job_dir, f"{index}.payload.pickle")


def start(fn, args, nprocs, daemon, error_files):
    """Start the job; returns one RankProcess per index (none for nprocs 0: mpiexec refuses an empty job)."""
    if nprocs == 0:
        return []
    job_dir = tempfile.mkdtemp(prefix="lantern-spawn-")
    for index in range(nprocs):  # one each: a descriptor handed over by the resource sharer can be fetched once
        write_payload(payload_path(job_dir, index), (fn, args, error_files[index]))
    command = [mpiexec_path(), "-n", str(nprocs), standard_spawn.get_executable(), "-m",
               "lantern.multiprocessing.rank", job_dir]
    if sys.stdout is not None and sys.stdout.isatty():
        command.append("--line-buffered")
    mpiexec = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=end_with_the_launcher)
    job = Job(mpiexec, job_dir, nprocs)
    atexit.register(job.terminate if daemon else job.wait)
    return job.ranks


def write_payload(path, call):
    """The preparation data, then the call, pickled with multiprocessing's pickler as for a spawned process."""
    data = standard_spawn.get_preparation_data("SpawnProcess")
    with open(path, "wb") as file:
        context.set_spawning_popen(SharingThroughResourceSharer())
        try:
            reduction.dump(data, file)
            reduction.dump(call, file)
        finally:
            context.set_spawning_popen(None)


class SharingThroughResourceSharer:
    """Stands for the process being started while its arguments are pickled, which lets queues, locks and pipes
    (they refuse to be pickled otherwise) travel; their file descriptors go through the resource sharer."""

    def duplicate_for_child(self, fd):
        return fd

    def DupFd(self, fd):  # noqa: N802  (multiprocessing's name)
        return resource_sharer.DupFd(fd)


class Job:
    """mpiexec and the job folder its ranks write to; ended when mpiexec has ended (then the folder goes)."""

    def __init__(self, mpiexec, job_dir, nprocs):
        self.mpiexec, self.job_dir = mpiexec, job_dir
        self.ranks = [RankProcess(self, index) for index in range(nprocs)]

    def record(self, index, kind):
        """What rank `index` wrote about its child (kind "pid" or "exit"), or None while it has not."""
        try:
            with open(os.path.join(self.job_dir, f"{index}.{kind}")) as file:
                return json.load(file)
        except FileNotFoundError:
            return None

    def ended(self):
        return self.mpiexec.poll() is not None

    def wait(self):
        """Wait for every rank (the last one's join ends the job)."""
        for rank in self.ranks:
            rank.join()

    def end_if_done(self):
        """Once every rank has ended: wait for mpiexec and remove the job folder."""
        if all(rank.exitcode is not None for rank in self.ranks) and os.path.isdir(self.job_dir):
            self.mpiexec.wait()
            shutil.rmtree(self.job_dir, ignore_errors=True)
            atexit.unregister(self.wait)
            atexit.unregister(self.terminate)

    def terminate(self):
        for rank in self.ranks:
            if rank.is_alive():
                rank.terminate()
        self.wait()


class RankProcess:
    """One child of the job, as ProcessContext sees a process: pid, exitcode (negative: the signal that ended it),
    ended_at, is_alive(), join(timeout), terminate(), kill().

    A child that ended without its rank recording it (mpiexec stopped the rank itself, e.g. when another rank's
    MPI program aborted the job) takes mpiexec's exit code, or 1 if that is 0."""

    def __init__(self, job, index):
        self.job, self.index = job, index
        self._pid = None
        self._exitcode = None
        self.ended_at = None

    @property
    def pid(self):
        """The child's process id; waits for the child to start (None if the job ended before it did)."""
        while self._pid is None:
            job_ended = self.job.ended()
            record = self.job.record(self.index, "pid")
            if record is not None:
                self._pid = record["pid"]
            elif job_ended:
                return None
            else:
                time.sleep(0.01)
        return self._pid

    @property
    def exitcode(self):
        """How the child ended (as multiprocessing.Process.exitcode), None while it runs."""
        if self._exitcode is None:
            job_ended = self.job.ended()
            record = self.job.record(self.index, "exit")
            if record is not None:
                self._pid, self._exitcode, self.ended_at = record["pid"], record["exitcode"], record["time"]
            elif job_ended:
                self._exitcode, self.ended_at = self.job.mpiexec.returncode or 1, float("inf")
        return self._exitcode

    def is_alive(self):
        return self.exitcode is None

    def join(self, timeout=None):
        """Wait up to timeout seconds (None: without limit) for the child to end; the last rank to end also waits
        for mpiexec and removes the job folder."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.exitcode is None and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.01)
        if self.exitcode is not None:
            self.job.end_if_done()

    def terminate(self):
        self._signal(signal.SIGTERM)

    def kill(self):
        self._signal(signal.SIGKILL)

    def _signal(self, number):
        if self.is_alive() and self.pid is not None:
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:  # ended meanwhile; its rank records that
                pass

    def __repr__(self):
        state = "started" if self.exitcode is None else f"stopped exitcode={self.exitcode}"
        return f"<RankProcess index={self.index} pid={self._pid} {state}>"
