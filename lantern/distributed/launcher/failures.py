"""What became of a failed rank: the error record it leaves, and the launcher's report of a failed job.

A rank whose program raises (or exits with a non-zero code) writes a JSON record to TORCHELASTIC_ERROR_FILE, in
the layout torchrun's workers use ({"message": {"message", "extraInfo": {"py_callstack", "timestamp"}}}), plus
where it ran (rank, local_rank, host, pid, exitcode), which torchrun's agent knows from its own child processes
but lantern's launcher, whose children belong to mpiexec, does not. The launcher reads the records of an attempt
and raises ChildFailedError, whose message has the layout of torchrun's report.

>>> failure = ProcessFailure(rank=1, local_rank=1, exitcode=1, pid=4242, host="node0",
...                          message="ValueError: learning rate -0.1 is negative; give --lr a positive value")
>>> error = ChildFailedError("train.py", [failure])
>>> print(error.format_msg())  # doctest: +ELLIPSIS
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : ...
  host      : node0
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 4242)
  error_file: <N/A>
  traceback : ValueError: learning rate -0.1 is negative; give --lr a positive value
============================================================
"""
import dataclasses
import json
import os
import socket
import time

NOT_AVAILABLE = "<N/A>"


@dataclasses.dataclass
class ProcessFailure:
    """One rank's failure as the launcher learned it: from the rank's error record, or (rank None) from mpiexec's
    exit code alone when a rank died without leaving one (a signal such as SIGKILL, or os._exit)."""
    rank: int | None
    local_rank: int | None
    exitcode: int
    message: str
    pid: int | None = None
    host: str = dataclasses.field(default_factory=socket.getfqdn)
    timestamp: float = dataclasses.field(default_factory=time.time)
    error_file: str = NOT_AVAILABLE
    rank_ends: bool = True


class ChildFailedError(Exception):
    """The job failed: raised by the launcher after its last attempt, with each failed rank's record."""

    def __init__(self, name, failures):
        self.name = name
        self.failures = sorted(failures, key=lambda failure: failure.timestamp)
        super().__init__(self.format_msg())

    def format_msg(self):
        root, *others = self.failures
        entries = [_format_failure(0, root)] + [_format_failure(i, f) for i, f in enumerate(others, start=1)]
        title = f"{self.name} FAILED"
        width = min(60, max(len(line) for line in [title, *"\n".join(entries).splitlines()]))
        return "\n".join([
            "=" * width, title, "-" * width, "Failures:", "\n".join(entries[1:]) or "  <NO_OTHER_FAILURES>",
            "-" * width, "Root Cause (first observed failure):", entries[0], "=" * width])


def _format_failure(index, failure):
    when = time.strftime("%Y-%m-%d_%H:%M:%S", time.localtime(failure.timestamp))
    rank = "unknown (no rank left an error record)" if failure.rank is None else \
        f"{failure.rank} (local_rank: {failure.local_rank})"
    pid = NOT_AVAILABLE if failure.pid is None else failure.pid
    return "\n".join([
        f"[{index}]:", f"  time      : {when}", f"  host      : {failure.host}", f"  rank      : {rank}",
        f"  exitcode  : {failure.exitcode} (pid: {pid})", f"  error_file: {failure.error_file}",
        "  traceback : " + failure.message.rstrip("\n").replace("\n", "\n  ")])


def exit_code(system_exit):
    """The status a process ends with after `raise SystemExit(code)`: None is 0, an int itself, anything else 1."""
    if system_exit.code is None:
        return 0
    return system_exit.code if isinstance(system_exit.code, int) else 1


def write_record(callstack, exitcode, message=None, rank_ends=True):
    """Write this rank's error record to TORCHELASTIC_ERROR_FILE (nothing when the variable is unset). rank_ends:
    the rank is ending with this failure (the launcher then ends the job); @record's records, written while the
    exception may still be caught, say False."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    record = {
        "message": {"message": message or callstack, "extraInfo": {
            "py_callstack": callstack, "timestamp": str(int(time.time()))}},
        "rank": int(os.environ.get("RANK", -1)), "local_rank": int(os.environ.get("LOCAL_RANK", -1)),
        "exitcode": exitcode, "host": socket.getfqdn(), "pid": os.getpid(), "time": time.time(),
        "rank_ends": rank_ends,
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    with open(partial, "w") as file:
        json.dump(record, file)
    os.replace(partial, path)  # the launcher, polling, sees the whole record or none


def read_records(attempt_dir):
    """The failures recorded under one attempt's directory (`<attempt_dir>/<rank>/error.json`), by rank."""
    found = []
    if not os.path.isdir(attempt_dir):
        return found
    for entry in sorted(os.listdir(attempt_dir)):
        path = os.path.join(attempt_dir, entry, "error.json")
        if os.path.exists(path):
            with open(path) as file:
                record = json.load(file)
            found.append(ProcessFailure(
                rank=record["rank"], local_rank=record["local_rank"], exitcode=record["exitcode"],
                message=record["message"]["extraInfo"]["py_callstack"], pid=record["pid"], host=record["host"],
                timestamp=record["time"], error_file=path, rank_ends=record["rank_ends"]))
    return found
