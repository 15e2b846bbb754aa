"""The public-name census: how many of torch 2.13's public names, namespace by namespace, lantern has.

The names come from torch itself, never from a hand-kept list: a module's `__all__` where it has one, otherwise its
public attributes that torch defines (classes and functions from torch's modules or its C extension, not modules
and not typing helpers); for torch.Tensor, its public attributes. A name counts as present when the same path
resolves on lantern (torch.linalg.norm -> lantern.linalg.norm), as `import lantern as torch` would see it.

    .venv/bin/python tools/census.py              # the table
    .venv/bin/python tools/census.py --missing    # and the missing names of each namespace
    .venv/bin/python tools/census.py --json FILE  # the counts and missing names as JSON
"""
import argparse
import contextlib
import importlib
import inspect
import io
import json
import os
import sys
import types
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opinfo_sweep import Missing, lantern_object  # noqa: E402  (tools/ is not a package)

# The namespaces counted (the list and their everyday neighbours); each is counted by its own names only,
# so torch.nn does not include torch.nn.functional's.
NAMESPACES = ["torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils",
              "torch.optim", "torch.optim.lr_scheduler", "torch.utils.data", "torch.utils.checkpoint",
              "torch.autograd", "torch.linalg", "torch.special", "torch.fft", "torch.distributions",
              "torch.testing", "torch.signal.windows", "torch.masked", "torch.sparse", "torch.func", "torch.random",
              "torch.amp", "torch.jit"]


def torch_namespace(path):
    """torch's object at a dotted path: a module, or torch.Tensor."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if path == "torch.Tensor":
            import torch
            return torch.Tensor
        return importlib.import_module(path)


def public_names(path):
    """torch's public names in the namespace at `path`, sorted (see the module docstring for the rule)."""
    holder = torch_namespace(path)
    if isinstance(holder, type):
        return sorted(name for name in dir(holder) if not name.startswith("_"))
    if hasattr(holder, "__all__"):
        return sorted({name for name in holder.__all__ if hasattr(holder, name)})
    return sorted(name for name, value in vars(holder).items() if not name.startswith("_") and _torch_defined(value))


def _torch_defined(value):
    if isinstance(value, types.ModuleType) or not (inspect.isclass(value) or callable(value)):
        return False
    home = getattr(value, "__module__", None) or ""
    return home == "torch" or home.startswith("torch.")


def lantern_has(path, name):
    """Whether lantern resolves torch's `path.name` at the same path."""
    try:
        lantern_object(f"{path}.{name}")
    except Missing:
        return False
    return True


def census(namespaces=NAMESPACES):
    """{namespace: (names, present, missing names)}."""
    result = {}
    for path in namespaces:
        names = public_names(path)
        missing = [name for name in names if not lantern_has(path, name)]
        result[path] = (len(names), len(names) - len(missing), missing)
    return result


def render(result, show_missing=False):
    lines = ["| namespace | torch's public names | in lantern | share |", "|---|---:|---:|---:|"]
    for path, (total, present, _) in result.items():
        lines.append(f"| {path.replace('torch.', '', 1) if path != 'torch' else path} | {total} | {present} | "
                     f"{present / total:.0%} |")
    total = sum(row[0] for row in result.values())
    present = sum(row[1] for row in result.values())
    lines.append(f"| **all** | {total} | {present} | {present / total:.0%} |")
    if show_missing:
        for path, (_, _, missing) in result.items():
            if missing:
                lines += ["", f"{path} ({len(missing)} missing): " + " ".join(missing)]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--missing", action="store_true", help="list each namespace's missing names")
    parser.add_argument("--json", help="write {namespace: {names, present, missing}} to this file")
    args = parser.parse_args(argv)
    result = census()
    print(render(result, args.missing))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({path: {"names": total, "present": present, "missing": missing}
                       for path, (total, present, missing) in result.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
