"""Run a script as N MPI ranks and read back what each rank checked: the harness of lantern.distributed's tests.

A rank script declares checks with `Checks` and runs them under an MPI launcher; every check's outcome on every
rank (name, rank, ok, error) goes as a JSON line to a file per rank in the directory the test side names
(LANTERN_CHECK_RESULTS; stdout would do, but mpiexec interleaves the ranks' output mid-line). The test side runs the script once per world size with
`run_script` (the venv's mpiexec, a timeout that kills the whole process group, never a hang) and asserts each
check, so a failure names the check, the rank and its traceback. `check_names` reads the names from the script
without running it, for pytest's parametrize.

A rank script (tests/distributed_scripts/example.py)::

    from distributed_harness import Checks
    checks = Checks()

    @checks.check
    def all_reduce_sums(dist, rank, size):
        t = lantern.ones(2) * rank
        dist.all_reduce(t)
        assert t.tolist() == [sum(range(size))] * 2

    if __name__ == "__main__":
        checks.run()

and its test::

    SCRIPT = SCRIPTS / "example.py"

    @pytest.fixture(scope="module", params=[2, 4])
    def ranks(request):
        return run_script(SCRIPT, nproc=request.param)

    @pytest.mark.parametrize("name", check_names(SCRIPT))
    def test_check(ranks, name):
        ranks.assert_passed(name)
"""
import datetime
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "distributed_scripts"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
_RESULTS_VARIABLE = "LANTERN_CHECK_RESULTS"
_TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
                       "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")


class Checks:
    """The checks of a rank script, run in declaration order by `run()` on every rank."""

    def __init__(self):
        self.functions = []

    @property
    def names(self):
        return [f.__name__ for f in self.functions]

    def check(self, function):
        """Decorator: `function(dist, rank, size)` is a check; raising (an assert) fails it on this rank."""
        self.functions.append(function)
        return function

    def run(self, backend="gloo", init=True, timeout_s=30):
        """Initialize the default group (unless init=False), run every check, report each, destroy the group.
        The group's timeout is short (`timeout_s`), so a check that leaves its peers waiting in a collective fails
        with a DistBackendError on their side, well before the test side's timeout kills the job."""
        import lantern.distributed as dist
        if init:
            dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
        rank, size = dist.get_rank(), dist.get_world_size()
        for function in self.functions:
            try:
                function(dist, rank, size)
                report(function.__name__, rank, True)
            except Exception:  # a failed check is reported, and the next check runs
                report(function.__name__, rank, False, traceback.format_exc())
        if init:
            dist.destroy_process_group()


def report(name, rank, ok, error=""):
    """Record one check's outcome on this rank for the test side (printed too, for a person reading the output)."""
    entry = json.dumps({"name": name, "rank": rank, "ok": ok, "error": error})
    print(f"rank {rank}: {name} {'passed' if ok else 'FAILED'}\n{error}", end="", flush=True)
    with open(Path(os.environ[_RESULTS_VARIABLE]) / f"rank{rank}.jsonl", "a") as results:
        results.write(entry + "\n")


def check_names(script):
    """The names of a rank script's checks, read by importing it (its checks do not run)."""
    spec = importlib.util.spec_from_file_location(f"_rank_script_{Path(script).stem}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.checks.names


class RanksRun:
    """What an MPI run left: exit status, output, and each check's outcome per rank."""

    def __init__(self, command, nproc, returncode, stdout, stderr, timed_out, results_dir):
        self.command, self.nproc = command, nproc
        self.returncode, self.stdout, self.stderr, self.timed_out = returncode, stdout, stderr, timed_out
        self.results = {}
        for path in sorted(Path(results_dir).glob("rank*.jsonl")):
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                self.results.setdefault(entry["name"], {})[entry["rank"]] = entry

    def describe(self):
        state = "timed out" if self.timed_out else f"exit status {self.returncode}"
        return (f"{' '.join(map(str, self.command))} ({self.nproc} ranks): {state}\n"
                f"--- stderr (last 3000 characters) ---\n{self.stderr[-3000:]}")

    def assert_passed(self, name, ranks=None):
        """The check `name` ran and passed on every rank (or on `ranks`); otherwise an assertion naming ranks and
        tracebacks."""
        outcomes = self.results.get(name, {})
        failed = {rank: entry["error"] for rank, entry in outcomes.items() if not entry["ok"]}
        missing = sorted(set(range(self.nproc) if ranks is None else ranks) - set(outcomes))
        assert not failed, f"check {name} failed on ranks {sorted(failed)}:\n" + "\n".join(
            f"--- rank {rank} ---\n{error}" for rank, error in sorted(failed.items()))
        assert not missing, f"check {name} did not report on ranks {missing}; {self.describe()}"

    def assert_succeeded(self):
        """The run ended in time with exit status 0."""
        assert not self.timed_out and self.returncode == 0, self.describe()


def environment(extra=None):
    """The ranks' environment: this one without torchrun's variables, lantern and tests/ importable."""
    env = {k: v for k, v in os.environ.items() if k not in _TORCHRUN_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra or {})
    return env


def run_ranks(command, nproc=2, timeout=60, env=None, mpiexec_args=()):
    """Run `command` (a list) as `nproc` MPI ranks; kill every process of the job after `timeout` seconds."""
    full = [str(MPIEXEC), *mpiexec_args, "-n", str(nproc), *map(str, command)]
    with tempfile.TemporaryDirectory(prefix="lantern-ranks-") as results_dir:
        process = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                   env=environment({_RESULTS_VARIABLE: results_dir, **(env or {})}),
                                   start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            timed_out = True
        return RanksRun(full, nproc, process.returncode, stdout, stderr, timed_out, results_dir)


def run_script(script, nproc=2, args=(), timeout=60, env=None):
    """Run a Python script (a rank script, say) as `nproc` MPI ranks; see run_ranks."""
    return run_ranks([sys.executable, script, *args], nproc, timeout, env)
