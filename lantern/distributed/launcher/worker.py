"""One rank of a launched job: torchrun's environment from MPI's, then the program, then what became of it.

`lantern.distributed.run` starts `nproc` copies of this module per node through mpiexec. Each copy reads where MPI
placed it (the process manager's variables: MPICH's PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS, or Open
MPI's OMPI_COMM_WORLD_*), sets the variables torchrun gives its workers (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, ...; the launcher already put the job-wide ones such as MASTER_ADDR and
TORCHELASTIC_RUN_ID in the environment mpiexec passes on), and runs the program in this process with `torch`
aliased to lantern. A program that fails leaves an error record for the launcher's report (failures.py) and, when
it had joined MPI, aborts the whole job at once: MPI would otherwise keep the other ranks waiting in their next
collective.

>>> rank_environment({"PMI_RANK": "3", "PMI_SIZE": "4", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"})["GROUP_RANK"]
'1'
"""
import argparse
import os
import runpy
import string
import sys
import traceback

from ... import compat
from . import failures

# Where each MPI implementation's process manager tells a process its place: (rank, size, local rank, local size).
PLACEMENT_VARIABLES = (
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),  # MPICH's Hydra
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
)


def rank_environment(environ):
    """torchrun's per-worker variables, computed from the MPI process manager's variables in `environ`.

    Nodes hold LOCAL_WORLD_SIZE consecutive ranks each (the launcher passes mpiexec `-ppn`), so a rank's node,
    torchrun's GROUP_RANK, is RANK // LOCAL_WORLD_SIZE. One role per job: ROLE_RANK is RANK.
    """
    for names in PLACEMENT_VARIABLES:
        if all(name in environ for name in names):
            rank, size, local_rank, local_size = (int(environ[name]) for name in names)
            break
    else:
        raise RuntimeError("lantern.distributed.launcher.worker runs under mpiexec, which tells each process its "
                           f"rank; none of {[names[0] for names in PLACEMENT_VARIABLES]} is set. Start programs "
                           "with `python -m lantern.distributed.run`")
    return {
        "RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(local_rank),
        "LOCAL_WORLD_SIZE": str(local_size), "GROUP_RANK": str(rank // local_size),
        "GROUP_WORLD_SIZE": str(size // local_size), "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(size),
    }


def run_program(target, args, module=False):
    """Run a script file (or, with module=True, a module as `python -m` would) with torch aliased to lantern."""
    if not module:
        compat.run_script(target, args)
        return
    compat.install()
    sys.argv = [target, *args]
    runpy.run_module(target, run_name="__main__", alter_sys=True)


def discard_output():
    """Send this process's stdout and stderr (the file descriptors, so an exec'd program's too) to /dev/null."""
    sys.stdout.flush()
    sys.stderr.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def end_job(exit_code):
    """Leave with exit_code; once MPI is running, abort every rank with it, since MPI's process manager waits for
    the others (stuck in a collective with this rank) rather than ending the job when one process exits."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        sys.stdout.flush()
        sys.stderr.flush()
        mpi.COMM_WORLD.Abort(exit_code)
    sys.exit(exit_code)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m lantern.distributed.launcher.worker")
    parser.add_argument("--module", action="store_true", help="run the target as a module (python -m)")
    parser.add_argument("--no-python", action="store_true", help="execute the target as a program")
    parser.add_argument("--error-dir", help="where ranks leave error records: <error-dir>/<rank>/error.json")
    parser.add_argument("--local-ranks-filter", help="comma-separated local ranks whose output shows; others' is "
                        "discarded")
    parser.add_argument("target")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    args = enter_rank(options)
    if options.no_python:
        os.execvp(options.target, [options.target, *args])
    run_to_the_end(options.target, args, options.module)


def enter_rank(options):
    """Set this rank's variables (and its error file), discard its output if filtered out; returns the program's
    arguments with ${local_rank} (launcher.api.LOCAL_RANK_MACRO) filled in, as torchrun's agent does."""
    os.environ.update(rank_environment(os.environ))
    if options.error_dir:
        os.environ["TORCHELASTIC_ERROR_FILE"] = os.path.join(options.error_dir, os.environ["RANK"], "error.json")
    if options.local_ranks_filter is not None and \
            os.environ["LOCAL_RANK"] not in options.local_ranks_filter.split(","):
        discard_output()
    return [string.Template(arg).safe_substitute(local_rank=os.environ["LOCAL_RANK"]) for arg in options.args]


def run_to_the_end(target, args, module):
    """Run the program; if it fails, print and record why and end the job (end_job)."""
    try:
        run_program(target, args, module)
    except SystemExit as done:
        code = failures.exit_code(done)
        if code:
            if isinstance(done.code, str):
                print(done.code, file=sys.stderr)  # what Python prints for sys.exit("message")
            failures.write_record(f"SystemExit: {done.code}", code)
            end_job(code)
        raise
    except BaseException as error:  # KeyboardInterrupt too: whatever ends the program ends this rank
        callstack = program_traceback(error)
        print(callstack, end="", file=sys.stderr)
        failures.write_record(callstack, 1, message=f"{type(error).__name__}: {error}")
        end_job(1)


def program_traceback(error):
    """The traceback as `python program.py` would print it: from the program's first frame, without the frames
    of this worker, lantern.compat and runpy that led there."""
    launching = {os.path.abspath(__file__), os.path.abspath(compat.__file__), os.path.abspath(runpy.__file__)}
    frames = error.__traceback__
    while frames is not None and (frames.tb_frame.f_code.co_filename in launching
                                  or frames.tb_frame.f_code.co_filename.startswith("<frozen runpy")):
        frames = frames.tb_next
    return "".join(traceback.format_exception(type(error), error, frames or error.__traceback__))


if __name__ == "__main__":
    main()
