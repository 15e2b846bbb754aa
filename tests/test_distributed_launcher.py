"""lantern.distributed.run (lantern-run) against torchrun: its arguments and defaults (read from torch's parser), the
environment each rank gets (compared with what torch's torchrun gives the same program), placement on two nodes
from a host file, -m and --no-python, restarts, and how a job ends when a rank dies: the launcher returns non-zero
with a report naming the rank, within the test's timeout, never a hang."""
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import tomllib

import pytest
import torch.distributed.launch as torch_launch
import torch.distributed.run as torchrun

from distributed_harness import ROOT, SCRIPTS, environment
from lantern.distributed import launch as lantern_launch
from lantern.distributed import run as lantern_run
import torch.distributed.elastic.multiprocessing.errors as torch_errors

import lantern.distributed.elastic.multiprocessing.errors as lantern_errors
from lantern.distributed.launcher import api, failures, worker

PROGRAM = SCRIPTS / "launched_rank.py"
TIMEOUT_S = 120


def launch(*args, cwd=ROOT, timeout=TIMEOUT_S, launcher=("lantern.distributed.run",)):
    """Run the launcher (lantern's by default) to the end; kill its whole process group after `timeout`."""
    process = subprocess.Popen([sys.executable, "-m", *launcher, *map(str, args)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=cwd, env=environment(),
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"{args} did not end within {timeout} s")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def records(out_dir, nproc):
    return [json.loads((out_dir / f"rank{rank}.json").read_text()) for rank in range(nproc)]


# --- the command line, compared with torchrun's parser ---

def test_every_torchrun_option_is_accepted():
    theirs = {s for action in torchrun.get_args_parser()._actions for s in action.option_strings}
    ours = {s for action in lantern_run.get_args_parser()._actions for s in action.option_strings}
    assert theirs <= ours, sorted(theirs - ours)


def test_defaults_are_torchruns():
    ours = lantern_run.get_args_parser()
    for action in torchrun.get_args_parser()._actions:
        assert ours.get_default(action.dest) == action.default, action.dest


ARGV = ["--nnodes", "1", "--nproc_per_node", "3", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:5", "--rdzv_id",
        "job", "--rdzv-conf", "a=1", "--max-restarts", "2", "--monitor-interval", "0.5", "--start-method", "fork",
        "--role", "trainer", "-m", "--master-addr", "10.0.0.1", "--master_port", "1234", "--shutdown-timeout", "4",
        "--signals-to-handle", "SIGTERM", "pkg.train", "--lr", "0.1", "-m"]


def test_parsed_values_are_torchruns():
    theirs = vars(torchrun.get_args_parser().parse_args(ARGV))
    ours = vars(lantern_run.parse_args(ARGV))
    assert {name: ours[name] for name in theirs} == theirs


def test_options_come_from_pet_variables_as_in_torchrun(monkeypatch):
    monkeypatch.setenv("PET_NPROC_PER_NODE", "3")
    monkeypatch.setenv("PET_STANDALONE", "1")
    monkeypatch.setenv("PET_MAX_RESTARTS", "2")
    theirs = vars(torchrun.get_args_parser().parse_args(["x.py"]))
    ours = vars(lantern_run.parse_args(["x.py"]))
    assert {name: ours[name] for name in theirs} == theirs
    assert (ours["nproc_per_node"], ours["standalone"]) == ("3", True)


def config(*argv):
    return lantern_run.config_from_args(lantern_run.parse_args([*argv, "train.py", "--lr", "1"]))


CONFIG_ARGVS = [[], ["--nproc-per-node", "3", "--master-port", "29600"], ["-m", "--role", "trainer"],
                ["--no-python", "--max-restarts", "2", "--shutdown-timeout", "5"],
                ["--rdzv-backend", "c10d", "--rdzv-endpoint", "node0:1", "--rdzv-id", "job", "--rdzv-conf", "a=1,b=2"],
                ["--monitor-interval", "2", "--start-method", "fork", "--signals-to-handle", "SIGTERM"]]


@pytest.mark.parametrize("argv", CONFIG_ARGVS)
def test_config_and_command_are_torchruns(argv, monkeypatch):
    """config_from_args gives torchrun's LaunchConfig (every field but the log-file plug-in) and command."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # torchrun's config_from_args sets it otherwise
    full = [*argv, "train.py", "--lr", "1"]
    theirs, their_cmd, their_args = torchrun.config_from_args(torchrun.get_args_parser().parse_args(full))
    ours, cmd, cmd_args = lantern_run.config_from_args(lantern_run.parse_args(full))
    for field in dataclasses.fields(theirs):
        if field.name != "logs_specs":
            assert getattr(ours, field.name) == getattr(theirs, field.name), field.name
    assert (cmd, cmd_args) == (their_cmd, their_args)


@pytest.mark.parametrize("argv", [[], ["--use-env"], ["-m", "--nproc_per_node", "2"]])
def test_legacy_launch_passes_local_rank_as_torchs(argv, monkeypatch):
    """torch.distributed.launch: without --use-env the program gets --local-rank=${local_rank}, filled in per rank."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    full = [*argv, "train.py", "--lr", "1"]
    theirs = torchrun.config_from_args(torch_launch.parse_args(full))[1:]
    assert lantern_run.config_from_args(lantern_launch.parse_args(full))[1:] == theirs


def test_legacy_launch_refuses_no_python_without_use_env():
    with pytest.raises(ValueError, match="you must also set the '--use-env' flag"):
        lantern_launch.launch(lantern_launch.parse_args(["--no-python", "sh"]))


class RecordedLaunch:
    """Stands in for elastic_launch: keeps the LaunchConfig a run() would launch with, launches nothing."""

    def __init__(self):
        self.configs = []

    def __call__(self, config, entrypoint):
        self.configs.append(config)
        return lambda *args: None


@pytest.mark.parametrize("argv", [["--standalone", "--rdzv-id", "ignored"], [], ["--master-port", "29600"],
                                  ["--rdzv-endpoint", "node0:1234", "--rdzv-id", "job7", "--rdzv-backend", "c10d"]])
def test_rendezvous_as_torchrun_chooses_it(argv, monkeypatch):
    """run() settles the rendezvous as torchrun's does: a fresh uuid4 run id and localhost:0 for --standalone or
    one node with no address given, otherwise what the arguments say."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    theirs, ours = RecordedLaunch(), RecordedLaunch()
    monkeypatch.setattr(torchrun, "elastic_launch", theirs)
    monkeypatch.setattr(lantern_run, "elastic_launch", ours)
    torchrun.run(torchrun.get_args_parser().parse_args([*argv, "train.py"]))
    lantern_run.run(lantern_run.parse_args([*argv, "train.py"]))
    [theirs], [ours] = theirs.configs, ours.configs
    assert (ours.rdzv_endpoint, ours.rdzv_backend) == (theirs.rdzv_endpoint, theirs.rdzv_backend)
    assert ours.run_id == theirs.run_id or len(ours.run_id) == len(theirs.run_id) == 36  # two fresh uuid4s


def test_job_environment_names_master_and_run():
    chosen, _, _ = config("--master-addr", "10.1.2.3", "--master-port", "29600", "--role", "trainer",
                          "--max-restarts", "2")
    shared = api.job_environment(chosen)
    assert (shared["MASTER_ADDR"], shared["MASTER_PORT"], shared["ROLE_NAME"]) == ("10.1.2.3", "29600", "trainer")
    assert shared["TORCHELASTIC_MAX_RESTARTS"] == "2" and shared["TORCHELASTIC_RUN_ID"] == "none"
    free = api.job_environment(api.LaunchConfig(1, 1, 2, rdzv_endpoint="localhost:0"))["MASTER_PORT"]
    assert free.isdigit() and int(free) > 0


@pytest.mark.parametrize("entrypoint,args,program", [
    (sys.executable, ["-u", "train.py", "--lr", "1"], api.Program("train.py", ["--lr", "1"])),
    (sys.executable, ["-u", "-m", "pkg.train", "-m"], api.Program("pkg.train", ["-m"], module=True)),
    (sys.executable, ["train.py"], api.Program("train.py", [])),
    ("/bin/echo", ["-u", "hello"], api.Program("/bin/echo", ["-u", "hello"], no_python=True)),
])
def test_program_read_back_from_torchruns_command(entrypoint, args, program):
    assert api.Program.from_entrypoint(entrypoint, args) == program


def test_a_function_entrypoint_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="not a Python function"):
        api.launch_agent(api.LaunchConfig(1, 1, 2), print, [])


def test_launch_config_fields_are_torchs():
    theirs = {f.name: f.default for f in dataclasses.fields(torchrun.LaunchConfig)}
    ours = {f.name: f.default for f in dataclasses.fields(api.LaunchConfig)}
    assert {name: ours[name] for name in theirs} == theirs
    assert set(ours) - set(theirs) == {"hostfile", "local_ranks_filter"}


@pytest.mark.parametrize("name", sorted(api.MPI_REFUSED))
def test_launch_config_refuses_what_mpi_cannot_do(name):
    with pytest.raises(ValueError, match=f"LaunchConfig.{name}: lantern's launcher does not support"):
        api.LaunchConfig(1, 1, 2, **{name: "x"})


@pytest.mark.parametrize("argv", [["-m", "--no-python"], ["--nproc-per-node", "gpu"], ["--nproc-per-node", "xpu"],
                                  ["--nproc-per-node", "two"], ["--nnodes", "1:2:3"], ["--nnodes", "2:1"],
                                  ["--max-restarts", "-1"], ["--rdzv-conf", "a=1,b"], ["--rdzv-conf", "=1"],
                                  ["--shutdown-timeout", "-1"], ["--local-ranks-filter", "0,a"]])
def test_errors_as_torchrun(argv):
    """torchrun and lantern-run refuse these arguments with the same exception and message."""
    with pytest.raises(Exception) as expected:
        torchrun.config_from_args(torchrun.get_args_parser().parse_args([*argv, "train.py"]))
    with pytest.raises(type(expected.value), match=str(expected.value).replace(".", r"\.")):
        config(*argv)


@pytest.mark.parametrize("argv,message", [
    (["--nnodes", "2"], "needs a host file"),
    (["--nnodes", "1:2"], "node count must be one number"),
    (["--node-rank", "1"], "runs once, on one machine"),
    (["--nnodes", "2", "--hostfile", "/no/such/hosts"], "no such file"),
])
def test_what_mpi_cannot_do_is_refused_by_name(argv, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        config(*argv)


@pytest.mark.parametrize("name", sorted(lantern_run.UNSUPPORTED))
def test_unsupported_options_raise_naming_themselves(name):
    action = next(a for a in lantern_run.get_args_parser()._actions if a.dest == name)
    argv = [action.option_strings[0]] if action.nargs == 0 else [action.option_strings[0], "3"]
    with pytest.raises(ValueError, match=f"--{name.replace('_', '-')}: lantern's launcher does not support"):
        config(*argv)


def test_main_reports_bad_arguments_with_status_2(capsys):
    assert lantern_run.main(["--node-rank", "2", "train.py"]) == 2
    assert "lantern-run: error: --node-rank 2" in capsys.readouterr().err


def test_console_script_is_lantern_run():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, function = scripts["lantern-run"].split(":")
    assert (module, function) == ("lantern.distributed.run", "main")


def test_mpiexec_command_places_ranks_per_node():
    chosen = api.LaunchConfig(min_nodes=2, max_nodes=2, nproc_per_node=3, hostfile="hosts")
    command = api.mpiexec_command(chosen, api.Program("pkg.train", ["-x"], module=True), "/tmp/a")
    assert command[0] == api.mpiexec_path() and os.path.dirname(command[0]) == os.path.dirname(sys.executable)
    assert command[1:7] == ["-n", "6", "-ppn", "3", "-f", "hosts"]
    assert command[-5:] == ["/tmp/a", "--module", "--", "pkg.train", "-x"]


def test_without_mpiexec_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(api.shutil, "which", lambda name, path=None: None)
    with pytest.raises(RuntimeError, match="pip install mpich mpi4py"):
        api.mpiexec_path()


# --- each rank's environment from MPI's ---

@pytest.mark.parametrize("placement", [
    {"PMI_RANK": "5", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "4"},
    {"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
     "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
])
def test_rank_environment_from_mpich_and_open_mpi(placement):
    assert worker.rank_environment(placement) == {
        "RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
        "GROUP_WORLD_SIZE": "2", "ROLE_RANK": "5", "ROLE_WORLD_SIZE": "8"}


def test_rank_environment_outside_mpi_names_the_launcher():
    with pytest.raises(RuntimeError, match="python -m lantern.distributed.run"):
        worker.rank_environment({"RANK": "0"})


def test_error_record_round_trip(tmp_path, monkeypatch):
    path = tmp_path / "attempt_0" / "1" / "error.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    failures.write_record("Traceback ...\nValueError: no\n", 1, message="ValueError: no")
    torch_layout = json.loads(path.read_text())["message"]
    assert torch_layout["message"] == "ValueError: no" and torch_layout["extraInfo"]["py_callstack"].endswith("no\n")
    [found] = failures.read_records(tmp_path / "attempt_0")
    assert (found.rank, found.local_rank, found.exitcode, found.pid) == (1, 0, 1, os.getpid())
    report = str(failures.ChildFailedError("train.py", [found]))
    assert "train.py FAILED" in report and "rank      : 1 (local_rank: 0)" in report and "ValueError: no" in report


@pytest.mark.parametrize("raised", [ValueError("bad batch"), SystemExit(0), SystemExit(2), KeyboardInterrupt()])
def test_record_behaves_as_torchs(raised, tmp_path, monkeypatch):
    """@record: what the decorated function returns or raises, and the error file it leaves, are torch's."""
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    outcomes = []
    for name, module in (("torch", torch_errors), ("lantern", lantern_errors)):
        error_file = tmp_path / name / "error.json"
        error_file.parent.mkdir()
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(error_file))

        @module.record
        def step():
            raise raised
        try:
            outcome = ("returned", step())
        except BaseException as error:  # whatever record lets through
            outcome = ("raised", type(error), str(error))
        written = json.loads(error_file.read_text())["message"] if error_file.exists() else None
        if written is not None:
            written = (written["message"], sorted(written["extraInfo"]), written["extraInfo"]["py_callstack"]
                       .splitlines()[-1])
        outcomes.append((outcome, written))
    assert outcomes[0] == outcomes[1]


# --- whole jobs ---

def test_environment_matches_torchrun(tmp_path):
    """The same program under torchrun (torch) and lantern-run (lantern): every variable torchrun sets is set, to
    the same value, save the error file's path, the agent store (lantern's launcher has none) and NCCL's."""
    seen, port = {}, api.free_port()
    for name, launcher in (("torch", ("torch.distributed.run",)), ("lantern", ("lantern.distributed.run",))):
        out = tmp_path / name
        out.mkdir()
        done = launch("--nproc-per-node", "2", "--master-port", port, PROGRAM, "ok", out, launcher=launcher)
        assert done.returncode == 0, done.stderr
        seen[name] = records(out, 2)
    differ = {"TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_USE_AGENT_STORE"}
    for theirs, ours in zip(seen["torch"], seen["lantern"]):
        added = set(theirs["environ"]) - set(os.environ) - {"TORCH_NCCL_ASYNC_ERROR_HANDLING"}
        assert added <= set(ours["environ"]), added - set(ours["environ"])
        assert {k: ours["environ"][k] for k in added - differ} == {k: theirs["environ"][k] for k in added - differ}
        assert (ours["torch"], ours["tensor_library"], ours["main"]) == ("torch", "lantern", "__main__")
        assert (theirs["tensor_library"], ours["sum"]) == ("torch", theirs["sum"])
        assert ours["torchelastic_launched"] is theirs["torchelastic_launched"] is True


def test_two_nodes_from_a_host_file(tmp_path):
    """Four ranks on two 'machines' (localhost and 127.0.0.1, both this one) from a host file: each node holds
    two consecutive ranks, and the process group spans both."""
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n127.0.0.1:2\n")
    done = launch("--nnodes", "2", "--nproc-per-node", "2", "--hostfile", hosts, PROGRAM, "ok", tmp_path)
    assert done.returncode == 0, done.stderr
    for rank, seen in enumerate(records(tmp_path, 4)):
        placement = {k: seen["environ"][k] for k in ("RANK", "LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE",
                                                      "GROUP_WORLD_SIZE", "WORLD_SIZE", "ROLE_RANK")}
        assert placement == {"RANK": str(rank), "LOCAL_RANK": str(rank % 2), "GROUP_RANK": str(rank // 2),
                             "LOCAL_WORLD_SIZE": "2", "GROUP_WORLD_SIZE": "2", "WORLD_SIZE": "4",
                             "ROLE_RANK": str(rank)}
        assert seen["sum"] == 0 + 1 + 2 + 3


def test_module_with_a_host_file_naming_localhost(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(PROGRAM.read_text())
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost\n")
    done = launch("--nproc-per-node", "2", "--hostfile", hosts, "-m", "pkg.train", "ok", tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for seen in records(tmp_path, 2):
        assert seen["argv"][0] == str(package / "train.py") and seen["main"] == "__main__"
        assert seen["tensor_library"] == "lantern" and seen["sum"] == 1


def test_no_python_executes_the_program(tmp_path):
    done = launch("--nproc-per-node", "2", "--no-python", "sh", "-c",
                  f'echo "$LOCAL_RANK $WORLD_SIZE $GROUP_RANK" > {tmp_path}/rank$RANK')
    assert done.returncode == 0, done.stderr
    assert [(tmp_path / f"rank{r}").read_text() for r in range(2)] == ["0 2 0\n", "1 2 0\n"]


def test_local_ranks_filter_shows_only_those_ranks_output():
    done = launch("--nproc-per-node", "3", "--local-ranks-filter", "0,2", "--no-python", "sh", "-c",
                  'echo "out $RANK"; echo "err $RANK" >&2')
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split("\n")) == ["", "out 0", "out 2"]
    assert sorted(line for line in done.stderr.split("\n") if line.startswith("err")) == ["err 0", "err 2"]


def test_legacy_launch_gives_each_rank_its_local_rank_argument(tmp_path):
    program = tmp_path / "argv.py"
    program.write_text("import os, sys\nopen(os.path.join(sys.argv[-1], os.environ['RANK']), 'w').write("
                       "' '.join(sys.argv[1:]))\n")
    done = launch("--nproc-per-node", "2", program, tmp_path, launcher=("lantern.distributed.launch",))
    assert done.returncode == 0, done.stderr
    assert "torch.distributed.launch is deprecated" in done.stderr
    assert [(tmp_path / str(rank)).read_text() for rank in range(2)] == [f"--local-rank={r} {tmp_path}" for r in (0, 1)]


@pytest.mark.parametrize("mode,names", [
    ("kill", ["rank      : unknown", "exitcode  : 9", "Killed (signal 9)"]),
    ("raise", ["rank      : 1 (local_rank: 1)", "ValueError: rank 1 gives up inside the process group"]),
    ("raise_before_init", ["rank      : 1 (local_rank: 1)", "RuntimeError: rank 1 gives up before init"]),
    ("exit", ["rank      : 1 (local_rank: 1)", "exitcode  : 3", "SystemExit: 3"]),
])
def test_a_failed_rank_ends_the_job(tmp_path, mode, names):
    """While rank 0 waits for rank 1 (in an all_reduce, or in MPI's start-up), rank 1 dies: the launcher returns 1
    with torchrun's failure report naming the rank, instead of waiting for rank 0."""
    started = time.monotonic()
    done = launch("--nproc-per-node", "2", PROGRAM, mode, tmp_path, timeout=60)
    assert done.returncode == 1, done.stderr
    assert f"{PROGRAM} FAILED" in done.stderr and "Root Cause (first observed failure):" in done.stderr
    for name in names:
        assert name in done.stdout + done.stderr  # mpiexec reports a signal on stdout
    assert not (tmp_path / "rank0.json").exists(), "rank 0 finished an all_reduce that rank 1 never joined"
    assert time.monotonic() - started < 60


def test_a_recorded_exception_that_the_program_catches_does_not_end_the_job(tmp_path):
    done = launch("--nproc-per-node", "2", PROGRAM, "record_caught", tmp_path)
    assert done.returncode == 0, done.stderr
    assert [seen["sum"] for seen in records(tmp_path, 2)] == [1.0, 1.0]


def test_max_restarts_reruns_a_failed_job(tmp_path):
    done = launch("--nproc-per-node", "2", "--max-restarts", "1", PROGRAM, "fail_first_attempt", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "attempt 0 failed" in done.stderr and "gives up before init (attempt 0)" in done.stderr
    assert [seen["environ"]["TORCHELASTIC_RESTART_COUNT"] for seen in records(tmp_path, 2)] == ["1", "1"]


def test_sigterm_to_the_launcher_stops_every_rank(tmp_path):
    process = subprocess.Popen([sys.executable, "-m", "lantern.distributed.run", "--nproc-per-node", "2",
                                str(PROGRAM), "wait", str(tmp_path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT, env=environment(),
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"rank{r}.json").exists() for r in range(2)) and time.monotonic() < deadline:
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 1 and "the launcher received SIGTERM" in stderr, stderr


def test_killing_the_launcher_stops_every_rank(tmp_path):
    """SIGKILL gives the launcher no chance to stop mpiexec; Linux's parent-death signal does it instead."""
    process = subprocess.Popen([sys.executable, "-m", "lantern.distributed.run", "--nproc-per-node", "2",
                                str(PROGRAM), "wait", str(tmp_path)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=ROOT, env=environment(), start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"rank{r}.json").exists() for r in range(2)) and time.monotonic() < deadline:
            time.sleep(0.2)
        pids = [seen["pid"] for seen in records(tmp_path, 2)]
        process.kill()
        process.wait()
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in pids)
    finally:
        os.killpg(process.pid, signal.SIGKILL)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
