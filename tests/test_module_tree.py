"""torch's module tree under `python -m lantern.compat`: every public name resolves at torch's own path, or is in
docs/unsupported-torch-names.md with its reason; torch.distributed and torch.nn.parallel import as on a CPU build;
whole modules save and load with safe globals named by torch's paths."""
import difflib
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import lantern
import lantern.distributed as ldist
from lantern.compat.aliases import TorchAliasFinder
from module_tree import LIST_PATH, ROOT

ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONWARNINGS="ignore")


def test_unsupported_list_is_current():
    """The walk runs in its own process: it imports all of torch's public modules, which this one should not."""
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "module_tree.py")], env=ENV,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    with open(LIST_PATH, encoding="utf-8") as f:
        written = f.read()
    if proc.stdout != written:
        diff = list(difflib.unified_diff(written.splitlines(), proc.stdout.splitlines(), "written", "now",
                                         lineterm="", n=0))
        pytest.fail("docs/unsupported-torch-names.md is out of date; run `.venv/bin/python tests/module_tree.py "
                    "--write` and check the changes:\n" + "\n".join(diff[:60]))
    assert "## Names that resolve to the wrong kind" not in written


def _compat(path):
    """What an unmodified program gets for a dotted `torch...` path: import the module, then take attributes."""
    finder = TorchAliasFinder()
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            spec = finder.find_spec(".".join(parts[:split]))
            break
        except ModuleNotFoundError:  # not a module: an attribute of a shorter path
            continue
    value = spec.loader.create_module(spec)
    for attr in parts[split:]:
        value = getattr(value, attr)
    return value


TRAINING_PATHS = [
    "torch.nn.modules.activation.MultiheadAttention", "torch.nn.modules.linear.NonDynamicallyQuantizableLinear",
    "torch.nn.modules.module.Module", "torch.nn.modules.container.ModuleList", "torch.nn.modules.sparse.Embedding",
    "torch.nn.modules.transformer.TransformerEncoderLayer", "torch.nn.modules.normalization.LayerNorm",
    "torch.nn.modules.dropout.Dropout", "torch.nn.modules.rnn.LSTM", "torch.nn.modules.conv.Conv2d",
    "torch.nn.modules.loss.CrossEntropyLoss", "torch.nn.parameter.Parameter", "torch.nn.functional.relu",
    "torch.nn.utils.rnn.pack_padded_sequence", "torch.nn.utils.clip_grad.clip_grad_norm_",
    "torch.optim.adamw.AdamW", "torch.optim.adam.Adam", "torch.optim.sgd.SGD", "torch.optim.optimizer.Optimizer",
    "torch.optim.lr_scheduler.CosineAnnealingLR", "torch.optim.lr_scheduler.LambdaLR",
    "torch.utils.data.dataloader.DataLoader", "torch.utils.data.dataset.TensorDataset",
    "torch.utils.data.sampler.RandomSampler", "torch.autograd.function.Function", "torch.autograd.grad_mode.no_grad",
    "torch.autograd.variable.Variable", "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.distributed.init_process_group", "torch.distributed.destroy_process_group",
]


@pytest.mark.parametrize("path", TRAINING_PATHS)
def test_training_program_paths_resolve(path):
    """The paths training programs spell out resolve to the lantern object of the same name and kind."""
    ours, theirs = _compat(path), _torch_object(path)
    assert ours.__name__ == theirs.__name__
    assert isinstance(ours, type) == isinstance(theirs, type)
    assert ours.__module__.startswith("lantern.")


def _torch_object(path):
    import importlib
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:split]))
            break
        except ImportError:
            continue
    for attr in parts[split:]:
        value = getattr(value, attr)
    return value


# ---- torch.distributed and torch.nn.parallel ------------------------------------------------------------------

def test_distributed_names_are_torchs():
    import torch.distributed as tdist
    assert all(hasattr(tdist, name) for name in ldist.__all__)
    assert ldist.is_available() is tdist.is_available() is True  # lantern's process groups run on MPI
    assert ldist.is_initialized() is tdist.is_initialized() is False
    assert ldist.ReduceOp.SUM.name == "SUM" and ldist.ReduceOp.AVG.name == "AVG"


@pytest.mark.parametrize("name", ["get_rank", "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast",
                                  "reduce", "all_gather_into_tensor", "gather", "scatter", "send", "recv"])
def test_no_default_group_errors_match_torch(name):
    import torch.distributed as tdist
    tensor_args = {"all_reduce": 1, "broadcast": 2, "reduce": 2, "all_gather_into_tensor": 2, "gather": 1,
                   "scatter": 1, "send": 2, "recv": 1}.get(name, 0)
    args_torch = [torch.ones(2)] + [0] * (tensor_args - 1) if tensor_args else []
    args_ours = [lantern.ones(2)] + [0] * (tensor_args - 1) if tensor_args else []
    if name == "all_gather_into_tensor":
        args_torch, args_ours = [torch.ones(2), torch.ones(2)], [lantern.ones(2), lantern.ones(2)]
    with pytest.raises(Exception) as theirs:
        getattr(tdist, name)(*args_torch)
    with pytest.raises(Exception) as ours:
        getattr(ldist, name)(*args_ours)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_new_group_without_a_default_group_fails_as_torchs():
    import torch.distributed as tdist
    with pytest.raises(ValueError) as theirs:
        tdist.new_group([0])
    with pytest.raises(ValueError) as ours:
        ldist.new_group([0])
    assert str(ours.value) == str(theirs.value)


def test_ddp_without_a_default_group_fails_as_torchs():
    with pytest.raises(ValueError) as theirs:
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 3))
    with pytest.raises(ValueError) as ours:
        lantern.nn.parallel.DistributedDataParallel(lantern.nn.Linear(2, 3))
    assert str(ours.value) == str(theirs.value)


def test_data_parallel_runs_the_module_as_torchs_cpu_build_does():
    theirs = torch.nn.DataParallel(torch.nn.Linear(2, 3))
    ours = lantern.nn.DataParallel(lantern.nn.Linear(2, 3))
    ours.load_state_dict({k: lantern.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["module.weight", "module.bias"]
    assert ours.device_ids == theirs.device_ids == []
    x = [[1.0, 2.0], [3.0, -1.0]]
    assert ours(lantern.tensor(x)).detach().numpy() == pytest.approx(theirs(torch.tensor(x)).detach().numpy())
    assert repr(ours) == repr(theirs)
    with pytest.raises(RuntimeError, match="device type could not be determined"):
        torch.nn.parallel.data_parallel(torch.nn.Linear(2, 3), torch.ones(1, 2))
    with pytest.raises(RuntimeError, match="device type could not be determined"):
        lantern.nn.parallel.data_parallel(lantern.nn.Linear(2, 3), lantern.ones(1, 2))


def test_variable_is_a_class_every_tensor_is_an_instance_of():
    from torch.autograd import Variable as TorchVariable
    assert isinstance(lantern.ones(1), lantern.autograd.Variable) and isinstance(torch.ones(1), TorchVariable)
    assert not isinstance(1.0, lantern.autograd.Variable) and not isinstance(1.0, TorchVariable)


# ---- torch.save(model) / torch.load(weights_only=True) with torch's paths as safe globals -----------------------

SAVE_WHOLE_MODEL = """
import pickle, sys, torch
import torch.nn as nn
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
model = nn.Sequential(nn.Embedding(10, 8), nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))
model.eval()
x = torch.randint(0, 10, (5, 3))
torch.save(model, sys.argv[1])
try:
    torch.load(sys.argv[1])
except pickle.UnpicklingError as e:
    print("refused", "torch.serialization.add_safe_globals" in str(e))
safe = [torch.nn.modules.container.Sequential, torch.nn.modules.sparse.Embedding,
        torch.nn.modules.transformer.TransformerEncoder, torch.nn.modules.transformer.TransformerEncoderLayer,
        torch.nn.modules.activation.MultiheadAttention, torch.nn.modules.linear.NonDynamicallyQuantizableLinear,
        torch.nn.modules.container.ModuleList, torch.nn.modules.linear.Linear, torch.nn.modules.dropout.Dropout,
        torch.nn.modules.normalization.LayerNorm, torch.nn.functional.relu]
with torch.serialization.safe_globals(safe):
    loaded = torch.load(sys.argv[1], weights_only=True)
print("context", type(loaded[1].layers[0].self_attn.out_proj).__name__, torch.equal(loaded(x), model(x)))
torch.serialization.add_safe_globals(safe)
print("added", torch.equal(torch.load(sys.argv[1], weights_only=True)(x), model(x)))
"""


def test_whole_model_save_and_weights_only_load_under_compat(tmp_path):
    script = tmp_path / "save_whole.py"
    script.write_text(SAVE_WHOLE_MODEL)
    proc = subprocess.run([sys.executable, "-m", "lantern.compat", str(script), str(tmp_path / "model.pt")],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["refused True", "context NonDynamicallyQuantizableLinear True",
                                        "added True"]


# ---- SyncBatchNorm in one process --------------------------------------------------------------------------------

def test_sync_batchnorm_is_batchnorm_in_one_process():
    from nn_oracle import check_module, same, same_error
    x = np.random.default_rng(0).random((4, 3, 5)).astype(np.float32)
    check_module(lambda nn: nn.SyncBatchNorm(3, momentum=None), x)
    same(lambda lib: repr(lib.nn.SyncBatchNorm(3, bias=False)))
    same_error(lambda lib: lib.nn.SyncBatchNorm(3)(lib.ones(3)))
    same_error(lambda lib: lib.nn.SyncBatchNorm(0)(lib.ones(2, 0)))

    def convert(lib):
        model = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 1), lib.nn.BatchNorm2d(4, bias=False)).eval()
        converted = lib.nn.SyncBatchNorm.convert_sync_batchnorm(model)
        return repr(converted), converted[1].training, converted[1].running_var is model[1].running_var
    same(convert)
