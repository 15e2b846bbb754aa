"""The benchmark suite (bench/): lantern alone when torch is missing, one workload file run as a script, the
peak-memory measurement, and `--write` putting the tables into a document between its markers."""
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
    assert re.search(rf"^\| add_16 \| µs \| {NUMBER} \|$", result.stdout, re.M), result.stdout
    assert re.search(rf"^\| add_16_requires_grad \| µs \| {NUMBER} \|$", result.stdout, re.M)
    text = doc.read_text()
    assert text.startswith("# Performance\n\nprose\n\n<!-- bench:begin -->\nMeasured ")
    assert text.endswith("<!-- bench:end -->\n\nmore prose\n") and "old table" not in text
    assert "| benchmark | unit | lantern median |\n" in text and "Goals met" not in text


def test_a_workload_file_runs_on_its_own_with_one_library_and_measures_memory():
    result = run("bench/workloads/training.py", "--lib", "lantern", "--quick", "--repeats", "1", "--filter", "mlp")
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


def test_memory_goal_marks_only_the_training_steps():
    from workload import all_workloads
    measured = [w.name for w in all_workloads() if w.memory_goal is not None]
    assert measured == ["mlp_train_step", "cnn_train_step", "lstm_train_step", "transformer_train_step"]
    assert all(w.memory_goal == at_most(1.5) for w in all_workloads() if w.memory_goal is not None)


def test_ddp_rows_run_each_rank_through_the_launcher_and_write_between_their_own_markers(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("<!-- bench:begin -->\nop table\n<!-- bench:end -->\n\n<!-- bench-ddp:begin -->\nold\n"
                   "<!-- bench-ddp:end -->\n")
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
