"""torch.distributed.launcher.api over MPI: start a job's processes through mpiexec, watch them, restart or report.

`launch_agent(config, entrypoint, args)` and `elastic_launch(config, entrypoint)(*args)` take torch's arguments:
torchrun passes the Python interpreter with `-u [-m] script args` (or, with --no-python, the program itself), and
Program.from_entrypoint reads that back. torchrun's agent forks its workers itself and meets the other nodes' agents
at a rendezvous. Here MPI's launcher (`mpiexec`, from the mpich wheel in the venv's bin/) does both: it starts
`nproc_per_node` processes on each node of the host file and connects them, and each process, a copy of
lantern.distributed.launcher.worker, turns MPI's placement into torchrun's environment before it runs the program.
This module builds that mpiexec command and the job-wide part of the environment, supervises one attempt (a rank's
error record ends the job at once: the others may be waiting for it in a collective), restarts up to `max_restarts`
times, and raises ChildFailedError with the failed ranks' records when the last attempt fails.

>>> config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=2, run_id="demo", role="default",
...                       rdzv_endpoint="localhost:29500", max_restarts=0)
>>> command = mpiexec_command(config, Program("train.py", ["--lr", "0.1"]), "/tmp/run/attempt_0")
>>> command[1:5], command[-7:]  # doctest: +NORMALIZE_WHITESPACE
(['-n', '2', '-ppn', '2'],
 ['lantern.distributed.launcher.worker', '--error-dir', '/tmp/run/attempt_0', '--', 'train.py', '--lr', '0.1'])
>>> sorted(job_environment(config).items())  # doctest: +NORMALIZE_WHITESPACE
[('MASTER_ADDR', 'localhost'), ('MASTER_PORT', '29500'), ('ROLE_NAME', 'default'),
 ('TORCHELASTIC_MAX_RESTARTS', '0'), ('TORCHELASTIC_RUN_ID', 'demo'),
 ('TORCHELASTIC_SIGNALS_TO_HANDLE', 'SIGTERM,SIGINT,SIGHUP,SIGQUIT'), ('TORCHELASTIC_USE_AGENT_STORE', 'False')]
"""
import ctypes
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

from .failures import ChildFailedError, ProcessFailure, read_records

# Each rank's local rank, in a program argument (torch.distributed.launch passes --local-rank=${local_rank}); the
# worker fills it in, as torchrun's agent does.
LOCAL_RANK_MACRO = "${local_rank}"

# How long the launcher lets a job end by itself after a rank recorded its failure (a rank that had joined MPI
# aborts the job at once) before it stops mpiexec, which then stops every rank.
ABORT_GRACE_S = 1.0


@dataclasses.dataclass
class LaunchConfig:
    """torch.distributed.launcher.api.LaunchConfig: its fields and defaults, plus `hostfile`, mpiexec's host file
    for a job on several machines, and `local_ranks_filter`, the local ranks whose output shows (torch keeps it in
    logs_specs, which holds log-file settings lantern does not have). Over MPI the nodes are a fixed set started
    together, so min_nodes must equal max_nodes; the fields about log files, NUMA and GPUs must keep their defaults
    (MPI_REFUSED says why)."""
    min_nodes: int
    max_nodes: int
    nproc_per_node: int
    logs_specs: object = None
    run_id: str = ""
    role: str = "default_role"
    rdzv_endpoint: str = ""
    rdzv_backend: str = "etcd"
    rdzv_configs: dict = dataclasses.field(default_factory=dict)
    rdzv_timeout: int = -1
    max_restarts: int = 3
    monitor_interval: float = 0.1
    start_method: str = "spawn"
    log_line_prefix_template: str | None = None
    metrics_cfg: dict = dataclasses.field(default_factory=dict)
    local_addr: str | None = None
    event_log_handler: str = "null"
    numa_options: object = None
    signals_to_handle: str = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
    duplicate_stdout_filters: list | None = None
    duplicate_stderr_filters: list | None = None
    virtual_local_rank: bool = False
    shutdown_timeout: float | None = None
    hostfile: str | None = None
    local_ranks_filter: set | None = None

    def __post_init__(self):
        if self.rdzv_timeout != -1:  # torch's legacy field moves into rdzv_configs, 900 s by default
            self.rdzv_configs["timeout"] = self.rdzv_timeout
        self.rdzv_configs.setdefault("timeout", 900)
        if self.shutdown_timeout is None:
            self.shutdown_timeout = int(os.environ.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "30"))
        elif self.shutdown_timeout < 0:
            raise ValueError(f"shutdown_timeout must be non-negative, got {self.shutdown_timeout}")
        for name, why in MPI_REFUSED.items():
            value = getattr(self, name)
            if value != LaunchConfig.__dataclass_fields__[name].default and value != []:  # []: no filters
                raise ValueError(f"LaunchConfig.{name}: lantern's launcher does not support {why}")
        if self.min_nodes != self.max_nodes:
            raise ValueError(f"nnodes={self.min_nodes}:{self.max_nodes}: lantern's launcher starts a fixed set of "
                             "nodes through mpiexec, so the node count must be one number")
        if self.max_nodes > 1 and not self.hostfile:
            raise ValueError(f"nnodes={self.max_nodes} needs a host file (--hostfile): lantern's launcher starts "
                             "every node's processes from this machine through mpiexec, where torchrun runs once "
                             "per node")


# LaunchConfig's fields that must keep their default over MPI, and what they would ask for.
MPI_REFUSED = {
    "logs_specs": "log files per rank (mpiexec prints every rank's output on the launcher's terminal)",
    "log_line_prefix_template": "prefixes on the ranks' output lines", "local_addr": "choosing the agent's address",
    "event_log_handler": "event log plug-ins", "numa_options": "NUMA binding",
    "duplicate_stdout_filters": "copying output to log files",
    "duplicate_stderr_filters": "copying output to log files",
    "virtual_local_rank": "per-GPU device masking",
}


@dataclasses.dataclass
class Program:
    """What each rank runs: a script (or a module, or with no_python an executable) and its arguments."""
    target: str
    args: list = dataclasses.field(default_factory=list)
    module: bool = False
    no_python: bool = False

    @classmethod
    def from_entrypoint(cls, entrypoint, args):
        """The program torch's (entrypoint, args) describe: a Python interpreter (sys.executable or PYTHON_EXEC)
        with [-u] [-m] target args, as torchrun builds them, runs that script or module; any other entrypoint is an
        executable. A Python function cannot be one: mpiexec starts programs, not functions."""
        if not isinstance(entrypoint, str):
            raise NotImplementedError(f"launch_agent: entrypoint {entrypoint!r}: lantern's launcher starts "
                                      "programs through mpiexec; give a script path (or an executable), not a "
                                      "Python function")
        args = [str(arg) for arg in args]
        if entrypoint not in (sys.executable, os.getenv("PYTHON_EXEC", sys.executable)):
            return cls(entrypoint, args, no_python=True)
        flags = []
        while args and args[0] in ("-u", "-m"):
            flags.append(args.pop(0))
        if not args:
            raise ValueError(f"launch_agent: {entrypoint} needs a script or module to run")
        return cls(args[0], args[1:], module="-m" in flags)


def mpiexec_path():
    """The mpiexec of this Python's environment (the mpich wheel puts it beside python), else the one on PATH."""
    here = shutil.which("mpiexec", path=sysconfig.get_path("scripts"))
    found = here or shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("lantern.distributed.run starts processes with MPI's mpiexec, and none is installed: "
                           "pip install mpich mpi4py")
    return found


def mpiexec_command(config, program, error_dir):
    """mpiexec's command line: nproc_per_node ranks per node (-ppn keeps each node's ranks consecutive), each a
    worker that sets torchrun's variables and runs the program."""
    world_size = config.max_nodes * config.nproc_per_node
    command = [mpiexec_path(), "-n", str(world_size), "-ppn", str(config.nproc_per_node)]
    if config.hostfile:
        command += ["-f", config.hostfile]
    python = os.getenv("PYTHON_EXEC", sys.executable)
    command += [python, "-u", "-m", "lantern.distributed.launcher.worker", "--error-dir", error_dir]
    command += ["--module"] * program.module + ["--no-python"] * program.no_python
    if config.local_ranks_filter is not None:
        command += ["--local-ranks-filter", ",".join(map(str, sorted(config.local_ranks_filter)))]
    return command + ["--", program.target, *program.args]


def job_environment(config):
    """The variables every rank shares, which mpiexec passes on to all of them (the workers add their own)."""
    host, _, port = config.rdzv_endpoint.rpartition(":") if ":" in config.rdzv_endpoint else \
        (config.rdzv_endpoint, "", "")
    return {
        "MASTER_ADDR": host or "localhost", "MASTER_PORT": port if port not in ("", "0") else str(free_port()),
        "TORCHELASTIC_RUN_ID": config.run_id, "TORCHELASTIC_MAX_RESTARTS": str(config.max_restarts),
        "ROLE_NAME": config.role, "TORCHELASTIC_SIGNALS_TO_HANDLE": config.signals_to_handle,
        # torchrun's agent serves a TCPStore that workers may join; MPI needs none, so lantern's launcher has none.
        "TORCHELASTIC_USE_AGENT_STORE": "False",
    }


def free_port():
    """A TCP port nobody listens on now (for MASTER_PORT when the rendezvous endpoint names none)."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def launch_agent(config, entrypoint, args):
    """torch.distributed.launcher.api.launch_agent: run `entrypoint args` as the job's ranks to the end; retry a
    failed attempt up to config.max_restarts times; raise ChildFailedError naming the failed ranks when the last
    attempt fails (or the launcher was signalled to stop). Returns {rank: None}: programs return no values."""
    program = Program.from_entrypoint(entrypoint, args)
    run_dir = tempfile.mkdtemp(prefix=f"lantern_run_{config.run_id}_")
    shared = job_environment(config)
    for attempt in range(config.max_restarts + 1):
        attempt_dir = os.path.join(run_dir, f"attempt_{attempt}")
        environment = {**os.environ, **shared, "TORCHELASTIC_RESTART_COUNT": str(attempt)}
        supervisor = Supervisor(mpiexec_command(config, program, attempt_dir), environment, attempt_dir, config)
        returncode = supervisor.run()
        if returncode == 0:
            shutil.rmtree(run_dir, ignore_errors=True)
            return dict.fromkeys(range(config.max_nodes * config.nproc_per_node))
        failures = read_records(attempt_dir) or [_unrecorded_failure(returncode, supervisor.signalled)]
        if supervisor.signalled is not None:
            break
        if attempt < config.max_restarts:
            print(f"lantern.distributed.run: attempt {attempt} failed (exit code {returncode}); restarting "
                  f"({attempt + 1} of {config.max_restarts})", file=sys.stderr, flush=True)
    raise ChildFailedError(program.target, failures)


class elastic_launch:
    """torch.distributed.launcher.api.elastic_launch: `elastic_launch(config, entrypoint)(*args)` is
    launch_agent(config, entrypoint, args)."""

    def __init__(self, config, entrypoint):
        self.config, self.entrypoint = config, entrypoint

    def __call__(self, *args):
        return launch_agent(self.config, self.entrypoint, list(args))


def _unrecorded_failure(returncode, signalled):
    if signalled is not None:
        why = f"the launcher received {signal.Signals(signalled).name} and passed it on to mpiexec"
    else:
        why = (f"mpiexec exited with code {returncode} and no rank left an error record: a rank died without a "
               "Python exception (a signal such as SIGKILL, or os._exit); mpiexec's report above names it")
    return ProcessFailure(rank=None, local_rank=None, exitcode=returncode, message=why)


def end_with_the_launcher():
    """In mpiexec's process before it starts: have Linux send it SIGTERM when the launcher dies (killed, even by
    SIGKILL), so that mpiexec stops the ranks rather than leave them running. Elsewhere nothing is done."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


PR_SET_PDEATHSIG = 1  # prctl's option number (linux/prctl.h)


class Supervisor:
    """One attempt: mpiexec running, the launcher's signals passed on to it, and the ranks' error records watched
    so that one rank's failure ends the job even while the others wait for it."""

    def __init__(self, command, environment, attempt_dir, config):
        self.command, self.environment, self.attempt_dir, self.config = command, environment, attempt_dir, config
        self.process = None
        self.signalled = None

    def run(self):
        self.process = subprocess.Popen(self.command, env=self.environment, preexec_fn=end_with_the_launcher)
        previous = self._forward_signals()
        try:
            while self.process.poll() is None:
                if any(failure.rank_ends for failure in read_records(self.attempt_dir)):
                    self._stop()
                    break
                time.sleep(self.config.monitor_interval)
            return self.process.wait()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def _forward_signals(self):
        """Pass the signals torchrun handles on to mpiexec (which passes them to the ranks); returns the handlers
        to put back. Signal handlers belong to the main thread, so elsewhere nothing is forwarded."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous = {}
        for name in filter(None, self.config.signals_to_handle.split(",")):
            number = signal.Signals[name.strip()]
            previous[number] = signal.signal(number, self._forward)
        return previous

    def _forward(self, number, frame):
        self.signalled = number
        self.process.send_signal(number)

    def _stop(self):
        """Let the job end by itself for ABORT_GRACE_S, then terminate mpiexec, and kill it after the timeout."""
        try:
            self.process.wait(ABORT_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            self.process.terminate()
        try:
            self.process.wait(self.config.shutdown_timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
