"""torch 2.13's OpInfo database as the spec: every in-scope OpInfo runs on lantern and torch, sample by sample
(tools/opinfo_sweep.py), and the outcome must equal tests/opinfo_expected.json: an OpInfo that passed may not start
failing, and a known failure that starts passing (or a missing function that appears) must be written into the
file. Regenerate it with `.venv/bin/python tools/opinfo_sweep.py --full --write` (docs/opinfo.md).

The default tier runs the quick sweep (the first samples of every OpInfo and dtype); the reference tier runs every
tenth OpInfo of it in reference mode; the full sweep is marked slow. The harness's own mechanisms (conversion,
rebinding, isolation of crashes and hangs, the comparison with the file) are tested here on small cases.
"""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import lantern

import census  # tools/ is on pytest's pythonpath (pyproject.toml)
import opinfo_sweep
from opinfo_sweep import Missing, Translator, differences, lantern_object, run_ops, status

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REGENERATE = "regenerate with `.venv/bin/python tools/opinfo_sweep.py --full --write` (docs/opinfo.md)"


def _sweep(*args, timeout):
    """Run the sweep in its own process (it imports torch's whole test suite and forks a child per OpInfo)."""
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "opinfo_sweep.py"), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    if proc.returncode:
        pytest.fail(f"the OpInfo sweep differs from tests/opinfo_expected.json ({len(lines) - 1} lines; fix the "
                    f"regressions, or {REGENERATE} when the change is an improvement):\n" + "\n".join(lines[1:80]))
    assert lines and "OpInfos" in lines[0], proc.stdout


def test_quick_sweep_matches_expectations():
    """Every in-scope OpInfo (every tenth in the reference tier, where lantern runs its readable paths only)."""
    _sweep(*(["--every", "10"] if lantern.is_reference_mode() else []), timeout=1200)


@pytest.mark.slow
def test_full_sweep_matches_expectations():
    _sweep("--full", timeout=7200)


# ---- the harness's mechanisms ---------------------------------------------------------------------------------------

def test_tensors_convert_with_strides_and_as_leaves():
    t = torch.arange(12.0, dtype=torch.float64).reshape(3, 4).t().requires_grad_()
    leaves = []
    converted = Translator().value({"x": [t, torch.int32, 2]}, leaves)
    x = converted["x"][0]
    assert x.stride() == (1, 4) and x.shape == (4, 3) and x.dtype is lantern.float64
    assert x.is_leaf and x.requires_grad and leaves == [x]
    np.testing.assert_array_equal(x.detach().numpy(), t.detach().numpy())
    assert converted["x"][1:] == [lantern.int32, 2]


def test_a_sample_keeps_torchs_storage_and_aliasing():
    """as_strided reads the storage, and out= overlap checks look at shared memory: within one sample, lantern's
    tensors have torch's storage (offset, elements outside the view) and share it where torch's do."""
    base = torch.arange(10.0)
    view, same = base[2:8:2], torch.zeros(0)
    (x, y, z), kwargs = Translator().sample_value(((view, base[3:5], same), {"out": same}))
    assert x.storage_offset() == 2 and x.stride() == (2,) and x.tolist() == [2.0, 4.0, 6.0]
    assert x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    assert kwargs["out"] is z and not x._is_view()
    assert x.as_strided((3,), (1,), 0).tolist() == [0.0, 1.0, 2.0]
    deep = Translator().sample_value(torch.zeros([1] * 65))  # more dims than a NumPy array holds: metadata only
    assert deep.dim() == 65


def test_separate_samples_do_not_share_storage():
    base = torch.arange(4.0)
    translator = Translator()
    first, second = translator.sample_value(base), translator.sample_value(base)
    assert first.untyped_storage().data_ptr() != second.untyped_storage().data_ptr()


def test_rebound_functions_call_lantern():
    def through_torch(x):
        return torch.nn.functional.relu(torch.add(x, 1))

    rebound = Translator().rebind(through_torch)
    result = rebound(lantern.tensor([-3.0, 0.5]))
    assert isinstance(result, lantern.Tensor) and result.tolist() == [0.0, 1.5]


def test_a_missing_function_is_named():
    with pytest.raises(Missing, match="lantern has no lantern.linalg.no_such_function"):
        lantern_object("torch.linalg.no_such_function")
    assert lantern_object("torch.linalg.norm") is lantern.linalg.norm


class _Sample:
    def __init__(self, value):
        self.input, self.args, self.kwargs = torch.tensor([value]), (), {}
        self.output_process_fn_grad = lambda out: out

    def noncontiguous(self):
        return self


class _FakeOpInfo:
    """An OpInfo-shaped object whose op doubles its input, kills its process on 1 and hangs on 2."""
    supports_autograd, has_nondeterministic_output = False, False
    name, variant_test_name = "fake", ""

    @staticmethod
    def op(x):
        value = x.tolist()[0]
        if value == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if value == 2:
            time.sleep(600)
        return x * 2

    def supported_dtypes(self, device):
        return {torch.float32}

    def supported_backward_dtypes(self, device):
        return set()

    def sample_inputs(self, device, dtype, requires_grad=False):
        return iter([_Sample(0.0), _Sample(1.0), _Sample(2.0), _Sample(3.0)])

    def error_inputs(self, device):
        return iter([])


def test_a_crash_or_a_hang_fails_its_sample_alone(monkeypatch):
    monkeypatch.setattr(opinfo_sweep, "SAMPLE_TIMEOUT_S", 3)
    results = run_ops({"fake": _FakeOpInfo()}, "quick", jobs=1)
    samples = results["fake"]
    assert samples["float32/0"] is None and samples["float32/0/nc"] is None
    assert samples["float32/1"].startswith("crash")
    assert status(samples) == "partial"


def test_a_hang_is_cut_off(monkeypatch):
    monkeypatch.setattr(opinfo_sweep, "SAMPLE_TIMEOUT_S", 3)
    monkeypatch.setitem(opinfo_sweep.TIERS, "quick", dict(samples=4, noncontiguous=0, grads=0, errors=0))
    samples = run_ops({"fake": _FakeOpInfo()}, "quick", jobs=1)["fake"]
    assert samples["float32/2"].startswith("timeout") and samples["float32/3"] is None


def test_differences_catch_regressions_and_new_passes():
    expected = {"ops": {"a": {"status": "pass", "samples": 2},
                        "b": {"status": "partial", "samples": 2, "failing": {"float32/1": "mismatch"}},
                        "c": {"status": "missing", "samples": 1, "reason": "lantern has no lantern.c"},
                        "gone": {"status": "pass", "samples": 1}}}
    results = {"a": {"float32/0": None, "float32/1": "mismatch: values"},
               "b": {"float32/0": None, "float32/1": None},
               "c": {"float32/0": None}}
    lines = differences(results, expected, scope={"a": 0, "b": 0, "c": 0})
    assert lines == ["gone: in the expectations but not an in-scope OpInfo of this torch",
                     "a float32/1: fails: mismatch: values",
                     "b float32/1: passes now (known failure: mismatch)",
                     "c: lantern has it now (was missing: lantern has no lantern.c)"]
    assert differences({"a": {"float32/0": None, "float32/1": None}}, expected, scope=None) == []


def test_the_measures_run():
    """tools/opinfo_table.py tabulates the expectations file; tools/census.py counts torch's public names."""
    table = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "opinfo_table.py"), "--failures"],
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert table.returncode == 0, table.stderr
    assert "| OpInfos | pass | partial | missing |" in table.stdout
    counted = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "census.py")],
                             capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert counted.returncode == 0, counted.stderr
    rows = [line for line in counted.stdout.splitlines() if line.startswith("| ")]
    assert rows[-1].startswith("| **all** |") and len(rows) == 2 + len(census.NAMESPACES)
