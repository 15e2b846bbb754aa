"""Mutation check: can the suite fail? Apply deliberate breaks to a copy of lantern, one at a time, and show which
test catches each.

    .venv/bin/python tests/mutation/mutation_check.py            # every break, a table at the end
    .venv/bin/python tests/mutation/mutation_check.py topk_k_error_class   # some breaks by name

For each break in BREAKS the source tree (lantern/, tests/, conftest.py, pyproject.toml) is copied to a temporary
directory, one snippet of one file is replaced (the snippet must occur exactly once, so a break cannot go stale
silently), and pytest runs the break's test files against the copy (-x: the first failing test is the one that
caught it). A break no test catches is reported as MISSED and the script exits with status 1.
tests/test_mutation_check.py runs it in the slow tier (LANTERN_SLOW=1, see docs/testing.md).
"""
import dataclasses
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Break:
    name: str
    path: str  # relative to the repository root
    old: str   # occurs exactly once in path
    new: str
    tests: tuple  # test files (or node ids) expected to catch it


BREAKS = [
    Break("swap max/min (two-tensor form) in _tensor.py", "lantern/_tensor.py",
          '_minmax(self, "max", "maximum", ', '_minmax(self, "max", "minimum", ',
          ("tests/test_reductions.py",)),
    Break("flip the sign of sin's derivative", "lantern/ops/pointwise_unary.py",
          'derivative("sin", self="grad * conj(self.cos())")', 'derivative("sin", self="-grad * conj(self.cos())")',
          ("tests/test_autograd_gradcheck_ops.py",)),
    Break("view-incompatible error becomes NotImplementedError", "lantern/ops/views.py",
          '    if stride is None:\n        raise RuntimeError(\n            "view size is not compatible',
          '    if stride is None:\n        raise NotImplementedError(\n            "view size is not compatible',
          ("tests/test_views.py", "tests/test_tensor_shape.py")),
    Break("topk k-out-of-range error becomes NotImplementedError", "lantern/ops/sorting.py",
          'raise RuntimeError(f"selected index k out of range (topk',
          'raise NotImplementedError(f"selected index k out of range (topk', ("tests/test_sorting.py",)),
    Break("LinearLR default total_iters 5 -> 4", "lantern/optim/lr_scheduler.py",
          "start_factor=1.0 / 3, end_factor=1.0, total_iters=5,", "start_factor=1.0 / 3, end_factor=1.0, total_iters=4,",
          ("tests/test_lr_scheduler.py",)),
    Break("int64 sum/prod computed through float64 (2**62 loses its low bits)", "lantern/ops/reduction.py",
          "    def impl(xp, out, dtype, self, dim=None, keepdim=False, dtype_arg=None):\n"
          "        getattr(xp, ufunc_name).reduce(",
          "    def impl(xp, out, dtype, self, dim=None, keepdim=False, dtype_arg=None):\n"
          "        if self.dtype == xp.int64:\n"
          "            out[...] = getattr(xp, ufunc_name).reduce(self.astype(xp.float64), axis=None if dim is None else "
          "_axes(self, dim), keepdims=keepdim).astype(xp.int64)\n"
          "            return\n"
          "        getattr(xp, ufunc_name).reduce(", ("tests/test_reductions.py",)),
    Break("stride of a 1-element result: unsqueeze of a 0-dim tensor gets stride 2", "lantern/ops/views.py",
          "new_stride = self._size[d] * self._stride[d] if d < n else 1",
          "new_stride = self._size[d] * self._stride[d] if d < n else 1 + (n == 0)",
          ("tests/test_indexing.py", "tests/test_views.py")),
    Break("detach() keeps requires_grad", "lantern/_tensor.py",
          '        """A tensor sharing storage and version counter, outside autograd."""\n'
          "        return _alias_detached(self)",
          '        """A tensor sharing storage and version counter, outside autograd."""\n'
          "        return _alias_detached(self).requires_grad_(self.requires_grad)",
          ("tests/test_views.py", "tests/test_autograd_views_inplace.py", "tests/test_tensor_basics.py")),
    Break("reshape always copies (never a view)", "lantern/_tensor.py",
          "        if view_strides(self._size, self._stride, shape) is not None:\n            return call(_op(\"view\")",
          "        if False:\n            return call(_op(\"view\")",
          ("tests/test_views.py", "tests/test_tensor_shape.py")),
    Break("mean off by a relative 1e-5 (within the old 1e-3 float64 tolerance)", "lantern/ops/reduction.py",
          "    xp.true_divide(out, count, out=out, casting=\"unsafe\")",
          "    xp.true_divide(out, count * (1 + 1e-5), out=out, casting=\"unsafe\")", ("tests/test_reductions.py",)),
    Break("return types renamed (torch.return_types.max -> max_)", "lantern/ops/reduction.py",
          "made = RETURN_TYPES[name] = type(name, (", "made = RETURN_TYPES[name] = type(name + \"_\", (",
          ("tests/test_sorting.py",)),
    Break("item() of an integer tensor returns a float", "lantern/_tensor.py",
          "        return self._host_array().reshape(()).item()",
          "        value = self._host_array().reshape(()).item()\n        return float(value) if type(value) is int "
          "else value", ("tests/test_tensor_basics.py", "tests/test_reductions.py")),
    Break("item() of a meta tensor raises NotImplementedError", "lantern/_tensor.py",
          'raise RuntimeError("Tensor.item() cannot be called on meta tensors")',
          'raise NotImplementedError("Tensor.item() cannot be called on meta tensors")', ("tests/test_meta_device.py",)),
    Break("tensor == None raises instead of returning False", "lantern/_tensor.py",
          "    except TypeError:\n        return NotImplemented", "    except TypeError:\n        raise",
          ("tests/test_tensor_basics.py",)),
    Break("in-place/out= pointwise ops check the kernel's dtype before the cast (int32 &= float32)",
          "lantern/backends/base.py", "            check_cast(op, result_dtype, out)\n        raise",
          "            pass\n        raise", ("tests/test_pointwise.py",)),
    Break("cumsum/cumprod off by a relative 1e-4 (within the old 1e-2 scan tolerance)", "lantern/ops/scan.py",
          "        out[...] = _accumulate(getattr(xp, ufunc_name), a, dim)\n",
          "        out[...] = _accumulate(getattr(xp, ufunc_name), a, dim) * (1 + 1e-4 * (a.dtype.kind == \"f\"))\n",
          ("tests/test_scans.py",)),
]


def copy_tree(dest):
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".venv", ".git", "out")
    for name in ("lantern", "tests"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(ROOT / name, dest / name)


def apply(brk, dest):
    path = dest / brk.path
    text = path.read_text()
    count = text.count(brk.old)
    if count != 1:
        raise SystemExit(f"break {brk.name!r}: its snippet occurs {count} times in {brk.path} (stale break list)")
    path.write_text(text.replace(brk.old, brk.new))


def run(brk):
    """The id of the first test that fails with `brk` applied, or None."""
    with tempfile.TemporaryDirectory() as tmp:
        dest = pathlib.Path(tmp)
        copy_tree(dest)
        apply(brk, dest)
        env = {**os.environ, "PYTHONPATH": str(dest), "PYTHONDONTWRITEBYTECODE": "1"}
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--tb=no",
                               "-rf", *brk.tests], cwd=dest, env=env, capture_output=True, text=True)
    failed = re.findall(r"^FAILED (.+?)(?: - .*)?$", done.stdout, re.M)
    if done.returncode not in (0, 1) and not failed:
        raise SystemExit(f"break {brk.name!r}: pytest exited {done.returncode}:\n{done.stdout[-2000:]}")
    return failed[0] if failed else None


def main(names):
    chosen = [b for b in BREAKS if not names or b.name in names]
    rows = []
    for brk in chosen:
        caught = run(brk)
        rows.append((brk.name, caught or "MISSED"))
        print(f"{brk.name}: {caught or 'MISSED'}", flush=True)
    width = max(len(name) for name, _ in rows)
    print("\n| break" + " " * (width - 5) + " | caught by |")
    print("|" + "-" * (width + 2) + "|-----------|")
    for name, caught in rows:
        print(f"| {name.ljust(width)} | {caught} |")
    return 1 if any(caught == "MISSED" for _, caught in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
