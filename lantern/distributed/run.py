"""`python -m lantern.distributed.run` (and `lantern-run`): torchrun's command line, starting the ranks through MPI.

    python -m lantern.distributed.run --nproc-per-node 2 train.py --batch_size 8
    lantern-run --nnodes 2 --nproc-per-node 4 --hostfile hosts train.py      # two machines, from this one

torchrun's arguments keep their meaning where MPI gives them one: --nproc-per-node (a number, or cpu/auto), --nnodes
(with --hostfile beyond one: mpiexec starts every node's ranks from this machine), --standalone, --rdzv-endpoint,
--rdzv-id, --master-addr/--master-port (MASTER_ADDR and MASTER_PORT for the program), --role, --max-restarts,
--monitor-interval, --signals-to-handle, --shutdown-timeout, --local-ranks-filter, -m/--module, --no-python,
--run-path; lantern's own --cuda-as-cpu runs a GPU-written program with its CUDA devices meaning the CPU
(docs/cuda-as-cpu.md). Each rank runs the program with `torch` aliased to lantern, in torchrun's environment (RANK,
LOCAL_RANK, WORLD_SIZE, ...). MPI does the rendezvous, so --rdzv-backend and --rdzv-conf are accepted and
--start-method has no effect; options about log files, NUMA binding and GPUs raise an error naming themselves. Like
torchrun, each option can also come from a PET_<OPTION> environment variable (PET_NPROC_PER_NODE=2).

>>> args = parse_args(["--nproc-per-node", "2", "--master-port", "29600", "-m", "pkg.train", "--lr", "0.1"])
>>> config, cmd, cmd_args = config_from_args(args)
>>> config.nproc_per_node, config.rdzv_endpoint, cmd == sys.executable, cmd_args
(2, '127.0.0.1:29600', True, ['-u', '-m', 'pkg.train', '--lr', '0.1'])
"""
import argparse
import os
import sys
import uuid

from ..core import cuda_as_cpu
from .launcher.api import LOCAL_RANK_MACRO, LaunchConfig, elastic_launch
from .launcher.failures import ChildFailedError

__all__ = ["get_args_parser", "parse_args", "config_from_args", "run", "main", "parse_min_max_nnodes",
           "get_rdzv_endpoint", "get_use_env", "determine_local_world_size"]

# torchrun's options that lantern's launcher refuses unless left at their default, and why.
UNSUPPORTED = {
    "log_dir": "log files per rank (mpiexec prints every rank's output here)",
    "redirects": "log files per rank", "tee": "log files per rank",
"duplicate_stdout_filters": "copying output to log files",
    "duplicate_stderr_filters": "copying output to log files", "logs_specs": "log file plug-ins",
    "event_log_handler": "event log plug-ins", "numa_binding": "NUMA binding",
    "virtual_local_rank": "per-GPU device masking", "local_addr": "choosing the agent's address",
}


class _FromEnvironment(argparse.Action):
    """An option whose default comes from PET_<DEST> when that is set, as torchrun's `env` action does."""

    def __init__(self, dest, default=None, required=False, **kwargs):
        default = os.environ.get(f"PET_{dest.upper()}", default)
        super().__init__(dest=dest, default=default, required=required and default is None, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


class _FlagFromEnvironment(argparse.Action):
    """A flag that PET_<DEST>=1 also sets."""

    def __init__(self, dest, **kwargs):
        default = os.environ.get(f"PET_{dest.upper()}", "0") == "1"
        super().__init__(dest=dest, default=default, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True)


def _option(parser, name, **kwargs):
    """Add --a-b with its torchrun alias --a_b (and any short forms given in `also`)."""
    also = kwargs.pop("also", ())
    spellings = [f"--{name}", *([f"--{name.replace('-', '_')}"] if "-" in name else []), *also]
    action = _FlagFromEnvironment if kwargs.pop("flag", False) else _FromEnvironment
    parser.add_argument(*spellings, action=action, **kwargs)


def get_args_parser():
    """torchrun's argument parser (its option names, aliases, defaults), plus lantern's --hostfile."""
    parser = argparse.ArgumentParser(prog="lantern-run", description="Start a PyTorch program's ranks through MPI, "
                                     "with torch aliased to lantern (torchrun's arguments).")
    _option(parser, "nnodes", type=str, default="1:1", help="number of nodes (MIN:MAX ranges need MIN == MAX)")
    _option(parser, "nproc-per-node", type=str, default="1", help="ranks per node: a number, cpu or auto")
    _option(parser, "hostfile", help="mpiexec's host file (one host[:slots] a line) for a job on several machines")
    _option(parser, "rdzv-backend", type=str, default="static", help="accepted: MPI does the rendezvous")
    _option(parser, "rdzv-endpoint", type=str, default="", help="<host>:<port> given to ranks as MASTER_ADDR/PORT")
    _option(parser, "rdzv-id", type=str, default="none", help="the job's id (TORCHELASTIC_RUN_ID)")
    _option(parser, "rdzv-conf", type=str, default="", help="accepted: <key1>=<value1>,...")
    _option(parser, "standalone", flag=True, help="single node: a fresh run id and a free MASTER_PORT")
    _option(parser, "max-restarts", type=int, default=0, help="rerun a failed job this many times")
    _option(parser, "monitor-interval", type=float, default=0.1, help="seconds between looks at the ranks")
    _option(parser, "start-method", type=str, default="spawn", choices=["spawn", "fork", "forkserver"],
            help="accepted: mpiexec starts the processes")
    _option(parser, "role", type=str, default="default", help="ROLE_NAME of the ranks")
    _option(parser, "local-ranks-filter", type=str, default="", help="show only these local ranks' output (0,1,2)")
    _option(parser, "module", flag=True, also=["-m"], help="run the script as a module, as python -m")
    _option(parser, "no-python", flag=True, help="execute the script as a program (not Python)")
    _option(parser, "run-path", flag=True, help="accepted: ranks always run the script in their own interpreter")
    _option(parser, "node-rank", type=int, default=0, help="0: this machine starts every node")
    _option(parser, "master-addr", type=str, default="127.0.0.1", help="MASTER_ADDR for the ranks")
    _option(parser, "master-port", type=int, help="MASTER_PORT for the ranks (default: a free port)")
    _option(parser, "signals-to-handle", type=str, default="SIGTERM,SIGINT,SIGHUP,SIGQUIT",
            help="signals the launcher passes on to the ranks")
    _option(parser, "shutdown-timeout", type=float, help="seconds from SIGTERM to SIGKILL (default: "
            "TORCH_ELASTIC_SHUTDOWN_TIMEOUT, else 30)")
    _option(parser, "cuda-as-cpu", flag=True, help="lantern: the CUDA devices the program names are the CPU, in "
            "every rank (LANTERN_CUDA_AS_CPU=1; docs/cuda-as-cpu.md)")
    _add_unsupported_options(parser)
    parser.add_argument("training_script", help="the program each rank runs, then its arguments")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


def _add_unsupported_options(parser):
    """torchrun's options that lantern-run refuses unless left at their default (UNSUPPORTED says why)."""
    _option(parser, "log-dir", type=str, help="unsupported")
    _option(parser, "redirects", type=str, default="0", also=["-r"], help="unsupported")
    _option(parser, "tee", type=str, default="0", also=["-t"], help="unsupported")
    _option(parser, "duplicate-stdout-filters", type=str, default=[], help="unsupported")
    _option(parser, "duplicate-stderr-filters", type=str, default=[], help="unsupported")
    _option(parser, "event-log-handler", type=str, default="null", help="unsupported")
    _option(parser, "logs-specs", type=str, help="unsupported")
    _option(parser, "numa-binding", type=str, help="unsupported")
    _option(parser, "virtual-local-rank", flag=True, help="unsupported")
    _option(parser, "local-addr", type=str, help="unsupported")


def parse_args(args):
    return get_args_parser().parse_args(args)


def config_from_args(args):
    """torch's config_from_args: (LaunchConfig, cmd, cmd_args) from parsed arguments. cmd is the Python
    interpreter (PYTHON_EXEC, else this one) and cmd_args `-u [-m] script args`, or with --no-python the script
    itself; the ranks run that command (launcher.api.Program reads it back)."""
    _refuse_unsupported(args)
    min_nodes, max_nodes = parse_min_max_nnodes(args.nnodes)
    if not 0 < min_nodes <= max_nodes:
        raise AssertionError(f"min_nodes must be > 0 and <= max_nodes, got min_nodes={min_nodes}, "
                             f"max_nodes={max_nodes}")
    if args.max_restarts < 0:
        raise AssertionError("max_restarts must be >= 0")
    if args.hostfile and not os.path.isfile(args.hostfile):
        raise FileNotFoundError(f"--hostfile {args.hostfile}: no such file")
    config = LaunchConfig(
        min_nodes=min_nodes, max_nodes=max_nodes, nproc_per_node=determine_local_world_size(args.nproc_per_node),
        run_id=args.rdzv_id, role=args.role, rdzv_endpoint=get_rdzv_endpoint(args), rdzv_backend=args.rdzv_backend,
        rdzv_configs=_rendezvous_configs(args), max_restarts=args.max_restarts,
        monitor_interval=args.monitor_interval, start_method=args.start_method,
        signals_to_handle=args.signals_to_handle, duplicate_stdout_filters=args.duplicate_stdout_filters,
        duplicate_stderr_filters=args.duplicate_stderr_filters, shutdown_timeout=args.shutdown_timeout,
        hostfile=args.hostfile, local_ranks_filter=_local_ranks(args.local_ranks_filter))
    local_rank = [] if get_use_env(args) else [f"--local-rank={LOCAL_RANK_MACRO}"]
    if args.no_python:
        if args.module:
            raise ValueError("Don't use both the '--no-python' flag and the '--module' flag at the same time.")
        return config, args.training_script, [*local_rank, *args.training_script_args]
    python = os.getenv("PYTHON_EXEC", sys.executable)
    return config, python, ["-u", *["-m"] * args.module, args.training_script, *local_rank,
                            *args.training_script_args]


def get_use_env(args):
    """torch's: False only for torch.distributed.launch without --use-env, whose programs read their local rank
    from a --local-rank argument rather than LOCAL_RANK."""
    return getattr(args, "use_env", True)


def _refuse_unsupported(args):
    """The options MPI gives no meaning raise naming themselves; so does a node rank other than 0."""
    parser = get_args_parser()
    for name, what in UNSUPPORTED.items():
        if getattr(args, name) != parser.get_default(name):
            raise ValueError(f"--{name.replace('_', '-')}: lantern's launcher does not support {what}")
    if args.node_rank != 0:
        raise ValueError(f"--node-rank {args.node_rank}: lantern's launcher runs once, on one machine, and starts "
                         "every node's ranks through mpiexec (list the machines with --hostfile)")


def _local_ranks(local_ranks_filter):
    """--local-ranks-filter 0,2 as {0, 2}; empty (the default) shows every rank."""
    if not local_ranks_filter:
        return None
    try:
        return set(map(int, local_ranks_filter.split(",")))
    except ValueError as error:
        raise ValueError("--local_ranks_filter must be a comma-separated list of integers e.g. "
                         "--local_ranks_filter=0,1,2") from error


def _rendezvous_configs(args):
    """--rdzv-conf's key=value pairs (checked, otherwise unused: MPI does the rendezvous), with the node rank for
    the static backend, as torchrun keeps them."""
    configs = {}
    for pair in filter(None, (part.strip() for part in args.rdzv_conf.split(","))):
        key, _, value = pair.partition("=")
        if not key.strip():
            raise ValueError("The rendezvous configuration string must be in format <key1>=<value1>,...,"
                             "<keyN>=<valueN>.")
        if not value.strip():
            raise ValueError(f"The rendezvous configuration option '{key.strip()}' must have a value specified.")
        configs[key.strip()] = value.strip()
    if args.rdzv_backend == "static":
        configs["rank"] = args.node_rank
    return configs


def parse_min_max_nnodes(nnodes):
    """torch's: '2' is (2, 2), '1:4' is (1, 4)."""
    parts = nnodes.split(":")
    if len(parts) > 2:
        raise RuntimeError(f'nnodes={nnodes} is not in "MIN:MAX" format')
    return int(parts[0]), int(parts[-1])


def get_rdzv_endpoint(args):
    """torch's: the static backend's endpoint is --master-addr:--master-port unless --rdzv-endpoint is given."""
    if args.rdzv_backend == "static" and not args.rdzv_endpoint:
        return f"{args.master_addr}:{args.master_port}"
    return args.rdzv_endpoint


def determine_local_world_size(nproc_per_node):
    """torch's: a number, or `cpu`/`auto` (one rank per CPU core: lantern computes on the CPU); `gpu` and `xpu`
    find no devices."""
    try:
        return int(nproc_per_node)
    except ValueError:
        if nproc_per_node in ("cpu", "auto"):
            return os.cpu_count()
        if nproc_per_node in ("gpu", "xpu"):
            raise ValueError(f"{'Cuda' if nproc_per_node == 'gpu' else 'Xpu'} is not available.") from None
        raise ValueError(f"Unsupported nproc_per_node value: {nproc_per_node}") from None


def run(args):
    """Launch the job the parsed arguments describe, as torchrun's run(): --standalone (or one node with no
    address given) gets a fresh run id and a free port on localhost; ChildFailedError when the job fails."""
    if args.standalone or (args.rdzv_backend == "static" and not args.rdzv_endpoint and args.master_port is None
                           and parse_min_max_nnodes(args.nnodes)[1] == 1):
        args.rdzv_backend, args.rdzv_endpoint, args.rdzv_id = "c10d", "localhost:0", str(uuid.uuid4())
    elif args.master_port is None:
        args.master_port = 29500
    config, cmd, cmd_args = config_from_args(args)
    if args.cuda_as_cpu:
        cuda_as_cpu.enable()  # sets LANTERN_CUDA_AS_CPU, which the ranks inherit
    if "OMP_NUM_THREADS" not in os.environ and config.nproc_per_node > 1:
        print("*****************************************\nSetting OMP_NUM_THREADS environment variable for each "
              "process to be 1 in default, to avoid your system being overloaded, please further tune the variable "
              "for optimal performance in your application as needed.\n*****************************************",
              file=sys.stderr)
        os.environ["OMP_NUM_THREADS"] = "1"
    elastic_launch(config, cmd)(*cmd_args)


def main(args=None):
    """The console entry point: exit status 0 when every rank succeeded, 1 with the failure report when the job
    failed, 2 when the arguments describe no job lantern can launch."""
    return exit_status(run, parse_args(sys.argv[1:] if args is None else args))


def exit_status(launch, args):
    """Launch the job `args` describe with `launch` (run, or torch.distributed.launch's launch) and say how it
    went as an exit status, with the failure report or the arguments' error on stderr."""
    try:
        launch(args)
    except ChildFailedError as error:
        print(f"{type(error).__module__}.{type(error).__name__}:\n{error}", file=sys.stderr)
        return 1
    except (ValueError, RuntimeError, FileNotFoundError, AssertionError) as error:
        print(f"lantern-run: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
