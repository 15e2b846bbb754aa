"""One rank of spawn's MPI job: `python -m lantern.multiprocessing.rank <job folder> [--line-buffered]`, started
by mpiexec.

The rank forks the child that runs the function, and stays to record, in the job folder, the child's pid
(`<index>.pid`) and how it ended (`<index>.exit`: the pid again, and the exit code, negative for a signal, as
multiprocessing.Process.exitcode has it), which the parent (lantern.multiprocessing.mpi_job) reads. The child
inherits the rank's connection to MPI's process manager, so it is this MPI rank: its index is the MPI rank, and
init_process_group in it joins the others. It rebuilds the call as the standard spawn start method does: the
preparation data first (which imports the parent's main module as `__mp_main__`, and under `python -m
lantern.compat` aliases torch to lantern before that), then fn, args and its error file, and runs
fn(index, *args) (lantern.multiprocessing.spawn.call_with_index). Like torch's children, it receives SIGINT when
its parent (here the rank) dies. A child that fails after joining MPI leaves at once, without MPI_Finalize (which
would wait for the other ranks): the parent then ends the others, as torch's does.
"""
import ctypes
import json
import os
import signal
import sys
import time
from multiprocessing import process, spawn as standard_spawn

from ..distributed.launcher import failures
from ..distributed.launcher.worker import rank_environment
from . import mpi_job
from .spawn import call_with_index

PR_SET_PDEATHSIG = 1  # prctl's option number (linux/prctl.h)


def main(job_dir, line_buffered=False):
    if line_buffered:
        sys.stdout.reconfigure(line_buffering=True)
    index = int(rank_environment(os.environ)["RANK"])
    child = os.fork()
    if child == 0:
        run_child(job_dir, index)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the child; the rank waits to record its end
    write_record(job_dir, index, "pid", {"pid": child})
    _, status = os.waitpid(child, 0)
    write_record(job_dir, index, "exit", {"pid": child, "exitcode": os.waitstatus_to_exitcode(status),
                                             "time": time.time()})


def run_child(job_dir, index):
    """Rebuild the parent's call and run it; never returns."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGINT)
    current = process.current_process()
    current._inheriting = True  # as multiprocessing's spawned children unpickle their arguments
    try:
        with open(mpi_job.payload_path(job_dir, index), "rb") as file:
            standard_spawn.prepare(standard_spawn.reduction.pickle.load(file))
            fn, args, error_file = standard_spawn.reduction.pickle.load(file)
    finally:
        del current._inheriting
    current.name = f"SpawnProcess-{index + 1}"
    try:
        call_with_index(fn, index, args, error_file)
    except SystemExit as done:
        code = failures.exit_code(done)
        if not code or not mpi_running():
            raise
        if isinstance(done.code, str):
            print(done.code, file=sys.stderr)  # what Python prints for sys.exit("message")
        leave_without_finalizing(code)
    sys.exit(0)


def mpi_running():
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized()


def leave_without_finalizing(code):
    """Exit now with `code`: a failing child must not run mpi4py's MPI_Finalize at exit, which waits for the
    other ranks (they may be waiting for this one in a collective); the parent ends them."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def write_record(job_dir, index, kind, record):
    """Write `<index>.<kind>` whole or not at all (the parent may read it at any moment)."""
    path = os.path.join(job_dir, f"{index}.{kind}")
    with open(path + ".partial", "w") as file:
        json.dump(record, file)
    os.replace(path + ".partial", path)


if __name__ == "__main__":
    main(sys.argv[1], line_buffered="--line-buffered" in sys.argv[2:])
