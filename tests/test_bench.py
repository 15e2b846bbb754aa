"""The benchmark suite (bench/): lantern alone when torch is missing, one workload file run as a script, the
peak-memory measurement, the compiled steps against a baseline, the real programs timed whole, and `--write`
putting the tables into a document between its markers."""
import json
import os
import pathlib
import re
import subprocess
import sys


ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from workload import at_most  # noqa: E402

NUMBER = r"\d+(?:\.\d+)?"


def run(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_without_torch_the_runner_reports_lantern_alone_and_writes_between_the_markers(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nprose\n\n<!-- bench:begin -->\nold table\n<!-- bench:end -->\n\nmore prose\n")
    hide_torch = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, 'bench'); import run; "
                  f"sys.exit(run.main(['--quick', '--repeats', '1', '--filter', 'add_16', '--write', {str(doc)!r}]))")
    result = run("-c", hide_torch)
    assert result.returncode == 0, result.stderr
    assert "torch is not installed: measuring lantern alone" in result.stderr
    assert "torch median" not in result.stdout and "torch 2." not in result.stdout
    # at 1 and 2 threads, side by side
    assert "| benchmark | unit | 1 thread: lantern | 2 threads: lantern |" in result.stdout, result.stdout
    assert re.search(rf"^\| add_16 \| µs \| {NUMBER} \| {NUMBER} \|$", result.stdout, re.M), result.stdout
    assert re.search(rf"^\| add_16_requires_grad \| µs \| {NUMBER} \| {NUMBER} \|$", result.stdout, re.M)
    text = doc.read_text()
    assert text.startswith("# Performance\n\nprose\n\n<!-- bench:begin -->\nMeasured ")
    assert text.endswith("<!-- bench:end -->\n\nmore prose\n") and "old table" not in text
    assert "| benchmark | unit | 1 thread: lantern | 2 threads: lantern |\n" in text and "Goals met" not in text


def test_a_workload_file_runs_on_its_own_with_one_library_and_measures_memory():
    result = run("bench/workloads/training.py", "--lib", "lantern", "--quick", "--repeats", "1", "--filter", "mlp",
                 "--threads", "1")
    assert result.returncode == 0, result.stderr
    assert re.search(rf"^\| mlp_train_step \| µs \| {NUMBER} \|$", result.stdout, re.M), result.stdout
    assert "cnn_train_step" not in result.stdout and "add_16" not in result.stdout
    assert "| training step | lantern peak MiB | lantern allocator peak MiB |" in result.stdout
    row = re.search(rf"^\| mlp_train_step \| ({NUMBER}) \| ({NUMBER}) \|$", result.stdout, re.M)
    resident, allocator = map(float, row.groups())
    # built inside the measured run: parameters, gradients, momentum (3 x 2.04 MiB), then activations
    assert 6 < allocator < 10 and allocator <= resident < 40, (allocator, resident)


_STEP_MEMORY_PROBE = """
import json, sys
sys.path.insert(0, "bench")
import lantern
from memory import step_memory
from workload import Workload
work = Workload("ones_16_mib", "y = lib.ones(4 << 20); del y", lambda lib: {"lib": lib})
print(json.dumps(step_memory(lantern, work, steps=3)))
"""


def test_step_memory_sees_one_16_mib_tensor_per_step_and_no_more():
    # in a fresh process, as `make bench` measures: in a long test session glibc's heap already holds pages a 16 MiB
    # block can reuse, so the resident set's high-water mark would not move
    out = subprocess.run([sys.executable, "-c", _STEP_MEMORY_PROBE], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    result = json.loads(out)
    assert result["allocator_peak_mib"] == 16.0   # freed each step, so never two at once
    assert 16 <= result["peak_mib"] < 20


def test_memory_goal_marks_the_eager_training_steps_alone():
    from workload import all_workloads
    from workloads import training
    measured = [w.name for w in all_workloads() if w.memory_goal is not None]
    assert measured == [w.name for w in training.WORKLOADS] and all(n.endswith("_train_step") for n in measured)
    assert all(w.memory_goal == at_most(1.2) for w in all_workloads() if w.memory_goal is not None)


def test_each_training_step_has_a_compiled_variant_judged_against_its_eager_setup():
    import lantern
    from workload import below
    from workloads import training, training_compiled
    variants = {w.name: w for w in training_compiled.WORKLOADS}
    assert list(variants) == [f"{w.name}_compiled" for w in training.WORKLOADS]
    for step in training.WORKLOADS:
        variant = variants[f"{step.name}_compiled"]
        assert variant.stmt == step.stmt and variant.baseline is step.setup and variant.goal == below(1.0)
        assert variant.memory_goal is None
    namespace = variants["mlp_train_step_compiled"].setup(lantern)
    assert type(namespace["model"]).__name__ == "OptimizedModule"
    assert all(p.grad is not None for p in namespace["model"].parameters())   # the warm-up steps ran


class _FakeWorker:
    """Answers the runner's requests in-process: a fixed time per (workload setup or baseline), and a log."""

    def __init__(self, lib, seconds, baseline_seconds=None):
        self.lib, self.seconds, self.baseline_seconds, self.log = lib, seconds, baseline_seconds, []

    def ask(self, request):
        self.log.append(request)
        if "setup" in request:
            return 1
        return self.baseline_seconds if request["baseline"] else self.seconds


def test_a_workload_with_a_baseline_is_judged_against_torch_running_the_baseline():
    import run
    from workload import Workload, below
    workers = [_FakeWorker("lantern", 3e-3), _FakeWorker("torch", 2e-3, baseline_seconds=4e-3)]
    step = Workload("step_compiled", "pass", dict, below(1.0), baseline=dict)
    seconds = run.measure(step, workers, repeats=3, min_time=0.01)
    assert seconds == {("lantern", False): 3e-3, ("torch", False): 2e-3, ("torch", True): 4e-3}
    assert not any(r.get("baseline") for r in workers[0].log)   # lantern runs its own setup only
    assert sum(r == {"time": "step_compiled", "baseline": True} for r in workers[1].log) == 3
    row = run.speed_row(step, seconds, threads=2)
    assert (row.medians, row.reference, row.threads, row.compiled) == ({"lantern": 3e3, "torch": 4e3}, 2e3, 2, True)
    assert (row.ratio, row.reference_ratio, row.met) == (0.75, 1.5, "yes")
    plain = run.speed_row(Workload("add", "pass", dict), {("lantern", False): 1e-6, ("torch", False): None}, 1)
    assert (plain.medians, plain.reference, plain.compiled) == ({"lantern": 1.0, "torch": None}, None, False)


def _document_with_markers(tmp_path, marker):
    """A page with the main table's markers and `marker`'s, each pair around text that --write should replace."""
    doc = tmp_path / "performance.md"
    doc.write_text(f"<!-- bench:begin -->\nop table\n<!-- bench:end -->\n\n<!-- {marker}:begin -->\nold\n"
                   f"<!-- {marker}:end -->\n")
    return doc


def test_programs_run_whole_under_lantern_and_write_between_their_own_markers(tmp_path):
    doc = _document_with_markers(tmp_path, "bench-programs")
    result = run("bench/run.py", "--lib", "lantern", "--quick", "--filter", "program_makemore", "--write", str(doc))
    assert result.returncode == 0, result.stderr
    row = re.search(rf"^\| program_makemore_transformer \| ({NUMBER}) \| ({NUMBER}) \|$", result.stdout, re.M)
    assert row, result.stdout
    assert float(row.group(1)) > 0 and "| add_16 |" not in result.stdout and "ddp_" not in result.stdout
    text = doc.read_text()
    assert text.startswith("<!-- bench:begin -->\nop table\n<!-- bench:end -->\n\n<!-- bench-programs:begin -->\n"
                           "Measured ") and "old" not in text
    assert "| program_makemore_transformer |" in text
    skipped = run("bench/run.py", "--lib", "lantern", "--quick", "--filter", "program_", "--no-programs")
    assert skipped.returncode != 0 and "no workload matches" in skipped.stderr


def test_the_programs_copy_their_folder_and_data_and_take_the_shortened_arguments_when_quick(tmp_path):
    import programs
    word_lm = next(p for p in programs.PROGRAMS if "word_language_model" in p.name)
    texts = {}
    for lib, quick in (("lantern", False), ("torch", True)):
        work = pathlib.Path(programs.working_folder(word_lm, programs.prepare(word_lm, lib, str(tmp_path), quick)))
        assert (work / "main.py").is_file() and work.parent.name == "examples"
        texts[quick] = (work / "data" / "wikitext-2" / "train.txt").read_text()
    full, quick = texts[False], texts[True]
    assert full == quick * programs.WORD_LM_TEXT_REPEATS
    nanogpt = next(p for p in programs.PROGRAMS if "nanogpt" in p.name)
    assert "--max_iters=100" in nanogpt.args and "--max_iters=100" not in nanogpt.quick_args


def test_ddp_rows_run_each_rank_through_the_launcher_and_write_between_their_own_markers(tmp_path):
    doc = _document_with_markers(tmp_path, "bench-ddp")
    result = run("bench/run.py", "--lib", "lantern", "--quick", "--filter", "ddp_mlp", "--write", str(doc))
    assert result.returncode == 0, result.stderr
    for processes in (1, 2):
        assert re.search(rf"^\| ddp_mlp_train_step \| lantern \| {processes} \|( {NUMBER} \|){{4}}", result.stdout,
                         re.M), result.stdout
    assert "ddp_transformer" not in result.stdout and "| add_16 |" not in result.stdout
    row = re.search(rf"^\| ddp_mlp_train_step \| lantern \| 2 \|.* \| -?{NUMBER} ± {NUMBER} \| ({NUMBER})% ± {NUMBER} "
                    rf"\| ({NUMBER})% \| ({NUMBER}) \|$", result.stdout, re.M)
    assert row, result.stdout
    hidden, by_profiler, efficiency = row.groups()
    assert 0 <= float(hidden) <= 100
    assert 0 <= float(by_profiler) <= 100 and float(efficiency) > 0
    text = doc.read_text()
    assert text.startswith("<!-- bench:begin -->\nop table\n<!-- bench:end -->\n\n<!-- bench-ddp:begin -->\nMeasured ")
    assert "| ddp_mlp_train_step | lantern | 2 |" in text and "old" not in text
