"""Timer.collect_callgrind's runner: it writes a script that runs the statement, starts it under
`valgrind --tool=callgrind` and reads the counts back with callgrind_annotate.

torch switches collection on and off from inside the process with valgrind's client requests, compiled into
libtorch. lantern has no C side, so the script runs each measured block as `sys.call_tracing(exec, (block,
globals()))` and valgrind is told to collect only inside CPython's sys_call_tracing (--toggle-collect) and to
write a profile each time it returns (--dump-after): one profile per repeat, then the empty statement's
(the baseline). Nothing in lantern calls sys.call_tracing, so those are the run's last profiles.
"""
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

import lantern
from .timer_interface import CallgrindStats, CopyIfCallgrind, FunctionCount, FunctionCounts, Serialization

_COMMANDS = ("valgrind", "callgrind_annotate")


class GlobalsBridge:
    """The globals of a Timer, written to `data_dir` for the subprocess; each must be wrapped in CopyIfCallgrind,
    as copying changes what a statement sees (a counter it bumps, say)."""

    def __init__(self, globals, data_dir: str) -> None:
        if globals.get("torch", lantern) is not lantern:
            raise ValueError("`collect_callgrind` does not support mocking out `torch`.")
        self._data_dir = data_dir
        os.makedirs(data_dir, exist_ok=True)
        self._globals = {name: value for name, value in globals.items() if name not in ("torch", "__builtins__")}
        if not all(isinstance(value, CopyIfCallgrind) for value in self._globals.values()):
            raise ValueError("`collect_callgrind` requires that globals be wrapped in `CopyIfCallgrind` so that "
                             "serialization is explicit.")

    def construct(self) -> str:
        """The script's lines that load each global (after its own setup code)."""
        lines = []
        for name, wrapped in self._globals.items():
            if wrapped.setup is not None:
                lines.append(textwrap.dedent(wrapped.setup))
            path = os.path.join(self._data_dir, name + (".pkl" if wrapped.serialization == Serialization.PICKLE
                                                        else ".pt"))
            lines.append(self._save(name, wrapped, path))
        return "\n".join(lines)

    @staticmethod
    def _save(name, wrapped, path) -> str:
        """Write `wrapped`'s value to `path`; the line that loads it as `name`."""
        if wrapped.serialization == Serialization.PICKLE:
            with open(path, "wb") as f:
                pickle.dump(wrapped.value, f)
            return f"with open({path!r}, 'rb') as f:\n    {name} = pickle.load(f)"
        if wrapped.serialization == Serialization.TORCH:
            lantern.save(wrapped.value, path)
            return f"{name} = torch.load({path!r}, weights_only=False)"
        lantern.jit.save(wrapped.value, path)
        return f"{name} = torch.jit.load({path!r})"


def _unrolled(stmt: str, number: int) -> str:
    """`number` runs of `stmt` as code: blocks of 100 copies under a loop (a loop iteration costs more
    instructions than the statements it would save), then the remainder."""
    block = 100
    loops = number // block
    loops = 0 if loops == 1 else loops  # one pass needs no loop
    remainder = number - block * loops
    code = ""
    if loops:
        code += f"for _ in range({loops}):\n" + textwrap.indent("\n".join([stmt] * block), "    ") + "\n"
    if remainder:
        code += "\n".join([stmt] * remainder)
    return code


_SCRIPT = """\
import gc
import os
import pickle
import sys

import lantern
import lantern as torch
lantern.set_num_threads({num_threads})

if os.path.realpath(sys.executable) != {interpreter!r} or lantern.__file__ != {lantern_file!r}:
    sys.exit("Interpreter or lantern mismatch: " + os.path.realpath(sys.executable) + ", " + lantern.__file__)

{load_globals}

{setup}

for _ in range({warmup}):
{indented_stmt}

_blocks = [compile({measured!r}, "<stmt>", "exec")] * {repeats}
if {collect_baseline}:
    _blocks.append(compile({baseline!r}, "<baseline>", "exec"))
gc.collect()
for _block in _blocks:
    sys.call_tracing(exec, (_block, globals()))
    gc.collect()
"""


def construct_script(task_spec, bridge, *, number, repeats, collect_baseline) -> str:
    """The script the subprocess runs under valgrind."""
    return _SCRIPT.format(
        num_threads=task_spec.num_threads, interpreter=os.path.realpath(sys.executable),
        lantern_file=lantern.__file__, load_globals=bridge.construct(), setup=task_spec.setup,
        warmup=min(number, 10), indented_stmt=textwrap.indent(task_spec.stmt, "    "),
        measured=_unrolled(task_spec.stmt, number) or "pass", repeats=repeats,
        collect_baseline=collect_baseline, baseline=_unrolled("pass", number) or "pass")


_TOTAL = re.compile(r"^([0-9,]+)\s+PROGRAM TOTALS")
_HEADER = re.compile(r"Ir\s+file:function")
_FUNCTION = re.compile(r"^\s*([0-9,]+)\s+(.+:.+)$")


def parse_annotate(text: str, inclusive: bool) -> FunctionCounts:
    """The function counts in callgrind_annotate's output `text` (the program-total lines left out)."""
    lines = iter(text.splitlines())
    total = next((int(m.group(1).replace(",", "")) for m in map(_TOTAL.match, lines) if m), None)
    if total is None or not any(_HEADER.match(line) for line in lines):
        raise AssertionError("Failed to parse callgrind_annotate's output")
    counts = []
    for line in lines:
        found = _FUNCTION.match(line)
        if found is None:
            if re.match(r"-+", line):
                continue
            break
        count = int(found.group(1).replace(",", ""))
        if count != total:  # callgrind's top-level entries repeat the total
            counts.append(FunctionCount(count, found.group(2)))
    return FunctionCounts(tuple(sorted(counts, reverse=True)), inclusive=inclusive)


def _annotate(path: str, inclusive: bool) -> FunctionCounts:
    out = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--threshold=100",
                          "--show-percs=no", path], capture_output=True, text=True, check=True).stdout
    return parse_annotate(out, inclusive)


def _profiles(working_dir: str, count: int) -> list[str]:
    """The last `count` numbered profiles callgrind wrote (callgrind.out.1, .2, ...)."""
    numbered = [name for name in os.listdir(working_dir) if re.fullmatch(r"callgrind\.out\.\d+", name)]
    numbered.sort(key=lambda name: int(name.rsplit(".", 1)[1]))
    if len(numbered) < count:
        raise OSError(f"Failed to collect callgrind profile: expected {count} profiles, found {len(numbered)}")
    return [os.path.join(working_dir, name) for name in numbered[-count:]]


def _run_valgrind(working_dir: str, script: str) -> None:
    """Run `script` under callgrind in `working_dir`; OSError with its output when it fails."""
    script_file = os.path.join(working_dir, "timer_callgrind.py")
    with open(script_file, "w") as f:
        f.write(script)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={os.path.join(working_dir, 'callgrind.out')}",
         "--dump-line=yes", "--dump-instr=yes", "--collect-atstart=no", "--toggle-collect=sys_call_tracing",
         "--dump-after=sys_call_tracing", sys.executable, script_file],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=working_dir)
    if done.returncode:
        raise OSError(f"Failed to collect callgrind profile:\n{done.stdout}")


class ValgrindWrapper:
    """Checks once that valgrind can run here, then collects CallgrindStats."""

    def __init__(self) -> None:
        self._supported_platform = sys.platform.startswith("linux")
        self._commands_available = {cmd: shutil.which(cmd) is not None for cmd in _COMMANDS}

    def _validate(self) -> None:
        if not self._supported_platform:
            raise OSError("Valgrind is not supported on this platform.")
        missing = [cmd for cmd, available in self._commands_available.items() if not available]
        if missing:
            raise OSError("Missing: " + ", ".join(missing))

    def collect_callgrind(self, task_spec, globals, *, number, repeats, collect_baseline, retain_out_file):
        """`repeats` CallgrindStats of `number` runs of the task, each with the baseline (empty when not
        collected)."""
        self._validate()
        working_dir = tempfile.mkdtemp(prefix="callgrind")
        try:
            bridge = GlobalsBridge(globals, os.path.join(working_dir, "data"))
            _run_valgrind(working_dir, construct_script(task_spec, bridge, number=number, repeats=repeats,
                                                        collect_baseline=collect_baseline))
            paths = _profiles(working_dir, repeats + int(collect_baseline))
            baseline = (_annotate(paths[-1], True), _annotate(paths[-1], False)) if collect_baseline else (
                FunctionCounts((), inclusive=True), FunctionCounts((), inclusive=False))
            return tuple(self._stats(task_spec, number, path, baseline, retain_out_file) for path in paths[:repeats])
        finally:
            shutil.rmtree(working_dir)

    @staticmethod
    def _stats(task_spec, number, path, baseline, retain_out_file) -> CallgrindStats:
        contents = None
        if retain_out_file:
            with open(path) as f:
                contents = f.read()
        return CallgrindStats(task_spec=task_spec, number_per_run=number, built_with_debug_symbols=True,
                              baseline_inclusive_stats=baseline[0], baseline_exclusive_stats=baseline[1],
                              stmt_inclusive_stats=_annotate(path, True), stmt_exclusive_stats=_annotate(path, False),
                              stmt_callgrind_out=contents)


_SINGLETON = []


def wrapper_singleton() -> ValgrindWrapper:
    """The process's one ValgrindWrapper."""
    if not _SINGLETON:
        _SINGLETON.append(ValgrindWrapper())
    return _SINGLETON[0]
