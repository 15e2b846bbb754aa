"""`python -m lantern.compat`: unmodified PyTorch programs run on lantern and train as well as under torch."""
import os
import subprocess
import sys

import pytest

import lantern
import lantern.compat
from lantern.compat.aliases import ModuleProxy, TorchAliasFinder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "compat_scripts")


def _env():
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _start(args, cwd):
    return subprocess.Popen([sys.executable, *args], cwd=cwd, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc, timeout=300):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{err}"
    return out


def _final(out):
    line = out.strip().splitlines()[-1]
    assert line.startswith("FINAL "), out
    return float(line.split()[1])


# script -> (relative tolerance, absolute tolerance) on the final loss against torch's run with the same seed.
# L-BFGS starts from zeros on deterministic data, so it must match closely; the language models start from
# different random streams, so only the quality they reach is compared.
TRAINING = {
    "lbfgs_fit.py": (1e-3, 1e-5),
    "per_sample_sgd.py": (1e-3, 1e-5),   # torch.func's vmap(grad(...)); seeded weights, deterministic data
    "functorch_ensemble.py": (1e-4, 1e-6),   # `import functorch`: combine_state_for_ensemble, vmap(grad(...))
    "lstm_lm.py": (0.35, 0.15),
    "transformer_lm.py": (0.25, 0.1),
}


@pytest.fixture(scope="module")
def training_runs(tmp_path_factory):
    """Every script under torch and under lantern, all started at once (they are independent processes)."""
    cwd = tmp_path_factory.mktemp("runs")
    procs = {}
    for script in TRAINING:
        path = os.path.join(SCRIPTS, script)
        procs[script] = (_start(["-m", "lantern.compat", path], cwd), _start([path], cwd))
    yield procs
    for pair in procs.values():
        for proc in pair:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


@pytest.mark.parametrize("script", sorted(TRAINING))
def test_training_script_matches_torch(script, training_runs):
    ours, theirs = training_runs[script]
    torch_loss = _final(_finish(theirs))
    lantern_loss = _final(_finish(ours))
    rel, abs_ = TRAINING[script]
    assert abs(lantern_loss - torch_loss) <= rel * torch_loss + abs_, (lantern_loss, torch_loss)


PROBE = """
import sys, os
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch import optim
import torch.optim.lr_scheduler as sched
import torch.autograd, torch.nn.utils.rnn, torch.serialization
import torchvision.transforms as T
import helper_module  # found beside the script, as with `python script.py`
print("name", __name__, "argv", sys.argv[1:], "dir", sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
print("same", torch.nn is nn, sys.modules["torch.nn"] is nn, nn.functional is F, torch.optim is optim)
print("lantern", type(torch.ones(1)).__module__, DataLoader.__module__, T.__name__, sched.StepLR.__module__)
print("cuda", torch.cuda.is_available(), torch.float32 is torch.float)
try:
    torch.some_function
except AttributeError as e:
    print("attr", e)
for name in ("torch.fx", "torch.distributed", "torch.nn.parallel", "torch.jit", "torch.onnx"):
    try:
        __import__(name)
    except ModuleNotFoundError as e:
        print("missing", e)
    else:
        print("present", name)
class Point:
    pass
torch.save({"p": Point(), "w": torch.ones(2)}, sys.argv[1])
print("loaded", type(torch.load(sys.argv[1], weights_only=False)["p"]).__name__)
raise SystemExit(3)
"""


def test_runner_behaves_like_python_script(tmp_path):
    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "helper_module.py").write_text("")
    proc = subprocess.run([sys.executable, "-m", "lantern.compat", str(tmp_path / "probe.py"), "ckpt.pt"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["name"] == "__main__ argv ['ckpt.pt'] dir True"
    assert lines["same"] == "True True True True"
    assert lines["lantern"] == ("lantern._tensor lantern.utils.data.dataloader torchvision.transforms "
                                "lantern.optim.lr_scheduler")
    assert lines["cuda"] == f"{lantern.cuda.is_available()} True"
    assert lines["attr"] == ("module 'torch' has no attribute 'some_function' (lantern does not implement "
                             "torch.some_function)")
    missing = [line for line in proc.stdout.splitlines() if line.startswith(("missing", "present"))]
    assert missing[0] == ("missing lantern does not implement torch.fx (imported as torch.fx by this program; "
                          "there is no lantern.fx)")
    assert missing[1:] == ["present torch.distributed", "present torch.nn.parallel", "present torch.jit",
                           "present torch.onnx"]
    assert lines["loaded"] == "Point"


def test_usage_and_errors_exit_nonzero(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "lantern.compat"], env=_env(), capture_output=True, text=True)
    assert proc.returncode == 2 and "usage: python -m lantern.compat [--cuda-as-cpu] script.py" in proc.stderr
    (tmp_path / "bad.py").write_text("import torch\ntorch.definitely_missing()\n")
    proc = subprocess.run([sys.executable, "-m", "lantern.compat", str(tmp_path / "bad.py")], env=_env(),
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "AttributeError: module 'torch' has no attribute 'definitely_missing'" in proc.stderr


def test_proxies_in_process():
    finder = TorchAliasFinder()
    torch_ = finder.proxy("torch", lantern)
    assert isinstance(torch_, ModuleProxy) and torch_.__name__ == "torch"
    assert torch_.nn is finder.proxy("torch.nn", lantern.nn) and torch_.nn.Linear is lantern.nn.Linear
    assert torch_.cuda.__name__ == "torch.cuda"
    spec = finder.find_spec("torch.nn.functional")
    assert spec.name == "torch.nn.functional" and finder.find_spec("numpy") is None
    assert finder.find_spec("torchvision.datasets").name == "torchvision.datasets"
    with pytest.raises(ModuleNotFoundError, match="lantern does not implement torchvision.io"):
        finder.find_spec("torchvision.io")
    torch_.nn._compat_probe = 1  # settings go through to lantern
    try:
        assert lantern.nn._compat_probe == 1
    finally:
        del torch_.nn._compat_probe
    assert not hasattr(lantern.nn, "_compat_probe")
    with pytest.raises(AttributeError, match=r"lantern does not implement torch\.nn\.Nope"):
        torch_.nn.Nope
    star = {name: getattr(torch_, name) for name in torch_.__all__}
    assert star["tensor"] is lantern.tensor and star["float32"] is lantern.float32


def test_proxy_namespace_is_the_modules():
    """`models.__dict__[args.arch]()` (pytorch/examples imagenet) and vars(torch) see lantern's names under
    torch's module names."""
    finder = TorchAliasFinder()
    torch_, models = finder.proxy("torch", lantern), finder.proxy("torchvision.models", lantern.vision.models)
    namespace = vars(torch_)
    assert namespace["__name__"] == "torch" and namespace["float32"] is lantern.float32
    assert namespace["nn"] is torch_.nn and "_lantern_module" not in namespace
    names = sorted(name for name in models.__dict__ if name.islower() and not name.startswith("__")
                   and callable(models.__dict__[name]))
    assert "resnet18" in names and models.__dict__["resnet18"] is lantern.vision.models.resnet18


def test_install_from_python(tmp_path):
    code = ("import lantern.compat, sys\nlantern.compat.install()\nimport torch, torch.optim as optim\n"
            "print(torch.__name__, type(torch.zeros(1)).__module__, optim.SGD.__module__)\n"
            "lantern.compat.uninstall()\nprint('torch' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split() == ["torch", "lantern._tensor", "lantern.optim.sgd", "False"], proc.stderr
    import torch  # noqa: F401  (the real one: the oracle)
    with pytest.raises(RuntimeError, match="must run before PyTorch is imported"):
        lantern.compat.install()


REPRS = """
import torch
x = torch.zeros(2, 3, dtype=torch.float16)
print(x.shape, x.dtype, torch.int64, torch.bool, torch.quint8, torch.strided, torch.channels_last)
print(str(x.dtype) == "torch.float16", x[0, 1:].shape, torch.Size([4]) + (5,))
print(torch.max(torch.arange(6.0).view(2, 3), 1))
print([x.dtype], {"dtype": torch.float32}, f"{torch.float64}")
from packaging import version
from torch.torch_version import TorchVersion
print(torch.__version__ >= "2.0", torch.__version__ >= (1, 12), torch.__version__ < "2.2",
      torch.__version__.split("+")[0].split(".")[:2], version.parse(torch.__version__) >= version.parse("2.1"),
      isinstance(torch.__version__, (str, TorchVersion)))
"""


def test_a_program_prints_torchs_names(tmp_path):
    """Under lantern.compat a program prints torch.float32, torch.Size([...]), torch.return_types... as under
    PyTorch (and `str(t.dtype) == "torch.float16"` holds), and torch.__version__ answers its version checks as
    PyTorch 2.13's does; imported as lantern, the names are lantern's."""
    (tmp_path / "reprs.py").write_text(REPRS)
    runs = {lib: subprocess.run([sys.executable, *prefix, str(tmp_path / "reprs.py")], env=_env(), text=True,
                                capture_output=True, timeout=120)
            for lib, prefix in (("torch", []), ("lantern", ["-m", "lantern.compat"]))}
    assert runs["lantern"].returncode == 0, runs["lantern"].stderr
    assert runs["lantern"].stdout == runs["torch"].stdout
    assert "torch.Size([2, 3]) torch.float16" in runs["lantern"].stdout
    assert repr(lantern.float16) == "lantern.float16" and repr(lantern.Size([2])) == "lantern.Size([2])"
    code = ("import lantern, lantern.compat\nlantern.compat.install()\nprint(lantern.float32)\n"
            "lantern.compat.uninstall()\nprint(lantern.float32)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["torch.float32", "lantern.float32"], proc.stderr


SPAWNING = """
import multiprocessing, sys, torch
import torch.multiprocessing as mp

def child(t):
    t.add_(5)
    print("child", type(torch.zeros(1)).__module__, type(t).__module__, flush=True)

if __name__ == "__main__":
    t = torch.zeros(3)
    t.share_memory_()
    process = mp.get_context(sys.argv[1]).Process(target=child, args=(t[1:],))
    process.start()
    process.join()
    print("parent", process.exitcode, t.tolist())
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_started_processes_run_on_lantern_and_share_memory(tmp_path, method):
    """A process started by spawn or forkserver imports the program's main module afresh: under compat its
    `import torch` gives lantern too, and a tensor moved to shared memory is one memory in both processes."""
    (tmp_path / "spawning.py").write_text(SPAWNING)
    proc = subprocess.run([sys.executable, "-m", "lantern.compat", str(tmp_path / "spawning.py"), method],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.stdout.splitlines() == ["child lantern._tensor lantern._tensor", "parent 0 [0.0, 5.0, 5.0]"], proc.stderr


def test_star_import_binds_torchs_public_names_and_no_submodules():
    """`from torch import *` under compat: every name torch's __all__ exports that lantern has, and no module (a
    program's own `random` or `types` stays its own); no builtin hidden that torch's star import leaves alone."""
    import builtins
    import types

    import torch
    namespace = {}
    exec("from lantern import *", namespace)
    exported = set(namespace) - {"__builtins__"}
    assert {name for name in torch.__all__ if hasattr(lantern, name)} <= exported
    assert not [name for name in exported if isinstance(namespace[name], types.ModuleType)]
    assert {name for name in exported if hasattr(builtins, name)} <= set(torch.__all__)
