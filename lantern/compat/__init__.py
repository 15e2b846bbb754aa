"""Run unmodified PyTorch programs on lantern: `python -m lantern.compat script.py [args]`.

`python -m lantern.compat --cuda-as-cpu script.py` runs a program written for a GPU on the CPU: the CUDA devices it
names are the CPU (lantern.core.cuda_as_cpu).

`install()` puts an import hook on sys.meta_path so that `import torch`, `import torch.nn as nn`,
`from torch.utils.data import DataLoader`, `import torchvision.transforms` ... give lantern's modules (see
lantern.compat.aliases). What lantern lacks fails with an error that names it.

>>> import subprocess, sys, tempfile, os
>>> with tempfile.TemporaryDirectory() as d:
...     path = os.path.join(d, "prog.py")
...     with open(path, "w") as f:
...         _ = f.write("import sys, torch\\nprint(torch.ones(2).sum().item(), torch.__name__, sys.argv[1:])\\n")
...     out = subprocess.run([sys.executable, "-m", "lantern.compat", path, "--lr", "0.1"],
...                          capture_output=True, text=True).stdout
>>> out
"2.0 torch ['--lr', '0.1']\\n"
"""
import os
import runpy
import sys
from multiprocessing import spawn

from ..core import cuda_as_cpu
from ..core.shown_name import show_as
from .aliases import ModuleProxy, TorchAliasFinder

__all__ = ["install", "uninstall", "run_script", "main", "cuda_as_cpu"]

_FINDER = [None]
_SPAWN_PREPARATION_DATA = spawn.get_preparation_data


def install():
    """Alias `torch` (and torchvision) to lantern for every later import in this process; returns the finder."""
    if _FINDER[0] is not None:
        return _FINDER[0]
    already = [name for name in sys.modules
               if TorchAliasFinder.lantern_name(name) and not isinstance(sys.modules[name], ModuleProxy)]
    if already:
        raise RuntimeError(f"lantern.compat.install() must run before PyTorch is imported; this process already "
                           f"imported {sorted(already)[0]}")
    finder = _FINDER[0] = TorchAliasFinder()
    sys.meta_path.insert(0, finder)
    show_as("torch")    # the program prints torch.float32, torch.Size([...]), as under PyTorch
    spawn.get_preparation_data = _preparation_data_installing_hook
    return finder


class _InstallInChild:
    """Rides in the preparation data a spawned (or forkserver) child unpickles first: unpickling it installs the
    hook there, before the child re-imports the program's main module, which imports torch."""

    def __reduce__(self):
        return (install, ())


def _preparation_data_installing_hook(name):
    data = _SPAWN_PREPARATION_DATA(name)
    data["lantern_compat"] = _InstallInChild()  # multiprocessing's prepare() reads only the keys it knows
    return data


def uninstall():
    """Remove the hook and the aliased modules it created."""
    finder = _FINDER[0]
    if finder is None:
        return
    sys.meta_path.remove(finder)
    spawn.get_preparation_data = _SPAWN_PREPARATION_DATA
    show_as("lantern")
    for name in finder.proxies:
        if isinstance(sys.modules.get(name), ModuleProxy):
            del sys.modules[name]
    _FINDER[0] = None


def run_script(path, args=()):
    """Run a program file as `python path args...` would, with torch aliased to lantern."""
    install()
    path = os.path.abspath(path)
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(path)  # `python script.py` puts the script's folder first on sys.path
    runpy.run_path(path, run_name="__main__")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--cuda-as-cpu":
        cuda_as_cpu.enable()
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m lantern.compat [--cuda-as-cpu] script.py [args...]\n\nRuns a PyTorch program with "
              "`torch` resolved to lantern.\n\n--cuda-as-cpu  the CUDA devices the program names are the CPU (see "
              "lantern.core.cuda_as_cpu;\n               LANTERN_CUDA_AS_CPU=1 does the same)", file=sys.stderr)
        return 2
    run_script(argv[0], argv[1:])
    return 0
