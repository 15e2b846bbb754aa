"""Instruction counts as torch.utils.benchmark keeps them: FunctionCount (count, "file:function"), FunctionCounts
(a sorted tuple of them that adds, subtracts, filters and renames), CallgrindStats (one statement's counts with a
baseline) and CopyIfCallgrind (a global the callgrind subprocess receives as a copy).

>>> from lantern.utils.benchmark import FunctionCount, FunctionCounts
>>> a = FunctionCounts((FunctionCount(30, "x.c:f"), FunctionCount(5, "dictobject.c:lookdict_unicode")), False)
>>> b = FunctionCounts((FunctionCount(10, "x.c:f"),), False)
>>> (a - b).sum(), a.denoise().sum()
(25, 30)
"""
from __future__ import annotations

import collections
import dataclasses
import enum
import itertools
import re
import textwrap
from typing import Any, NamedTuple

import lantern
from .. import common

__all__ = ["FunctionCount", "FunctionCounts", "CallgrindStats", "CopyIfCallgrind"]


class FunctionCount(NamedTuple):
    count: int  # type: ignore[assignment]  (shadows tuple.count, as torch's field does)
    function: str


@dataclasses.dataclass(repr=False, eq=False, frozen=True)
class FunctionCounts:
    """Counts per function, largest first. `inclusive` counts include callees; sums and differences merge by
    function name; `_linewidth` overrides lantern's print width (for tests)."""
    _data: tuple[FunctionCount, ...]
    inclusive: bool
    truncate_rows: bool = True
    _linewidth: int | None = None

    def __iter__(self):
        yield from self._data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, item):
        data = self._data[item]
        return FunctionCounts(data, self.inclusive, truncate_rows=False) if isinstance(data, tuple) else data

    def __repr__(self) -> str:
        count_len = max((len(str(c)) + int(c < 0) for c, _ in self), default=0)
        linewidth = self._linewidth or lantern.get_printoptions()["linewidth"]
        fn_len = max(linewidth - count_len - 4, 40)
        lines = [f"  {c:>{count_len}}  {_shorten(fn, fn_len)}" for c, fn in self]
        if self.truncate_rows and len(lines) > 18:
            lines = lines[:9] + ["...".rjust(count_len + 2)] + lines[-9:]
        if not self.inclusive:
            lines += ["", f"Total: {self.sum()}"]
        return "\n".join([super().__repr__()] + lines)

    def __add__(self, other: FunctionCounts) -> FunctionCounts:
        return self._merge(other, 1)

    def __sub__(self, other: FunctionCounts) -> FunctionCounts:
        return self._merge(other, -1)

    def __mul__(self, other: int | float) -> FunctionCounts:
        return self._from_dict({fn: int(c * other) for c, fn in self._data}, self.inclusive)

    def transform(self, map_fn) -> FunctionCounts:
        """Rename every function with `map_fn`; functions given one name have their counts added."""
        counts = collections.defaultdict(int)
        for c, fn in self._data:
            counts[map_fn(fn)] += c
        return self._from_dict(counts, self.inclusive)

    def filter(self, filter_fn) -> FunctionCounts:
        """Only the functions whose name `filter_fn` accepts."""
        return FunctionCounts(tuple(fc for fc in self if filter_fn(fc.function)), self.inclusive)

    def sum(self) -> int:
        return sum(c for c, _ in self)

    def denoise(self) -> FunctionCounts:
        """Without CPython's unicode-keyed dict lookups (name lookups), whose counts vary from run to run."""
        return self.filter(lambda fn: "dictobject.c:lookdict_unicode" not in fn)

    def _merge(self, other: FunctionCounts, sign: int) -> FunctionCounts:
        if self.inclusive != other.inclusive:
            raise AssertionError("Cannot merge inclusive and exclusive counts.")
        counts = collections.defaultdict(int)
        for c, fn in self:
            counts[fn] += c
        for c, fn in other:
            counts[fn] += sign * c
        return self._from_dict(counts, self.inclusive)

    @staticmethod
    def _from_dict(counts, inclusive: bool) -> FunctionCounts:
        kept = (FunctionCount(c, fn) for fn, c in counts.items() if c)
        return FunctionCounts(tuple(sorted(kept, reverse=True)), inclusive)


def _shorten(fn: str, length: int) -> str:
    """`fn` cut to `length` characters by an ellipsis in the middle."""
    if len(fn) <= length:
        return fn
    left = (length - 5) // 2
    return fn[:left] + " ... " + fn[-(length - left - 5):]


# What as_standardized strips: build directories, CPython's source prefixes, and the " [library.so]" suffix.
_STANDARDIZE = ((r"^.+build/\.\./", "build/../"), (r"^.+/" + re.escape("build/aten/"), "build/aten/"),
                (r"^.+/" + re.escape("Python/"), "Python/"), (r"^.+/" + re.escape("Objects/"), "Objects/"),
                (r"\s\[.+\]$", ""))


@dataclasses.dataclass(repr=False, eq=False, frozen=True)
class CallgrindStats:
    """The counts of one statement (stmt_*) and of the empty statement run the same way (baseline_*).
    lantern is Python over CPython and NumPy, with no build of its own whose symbols could be missing, so
    built_with_debug_symbols is True and the repr carries no rebuild warning."""
    task_spec: common.TaskSpec
    number_per_run: int
    built_with_debug_symbols: bool
    baseline_inclusive_stats: FunctionCounts
    baseline_exclusive_stats: FunctionCounts
    stmt_inclusive_stats: FunctionCounts
    stmt_exclusive_stats: FunctionCounts
    stmt_callgrind_out: str | None

    def __repr__(self) -> str:
        base = self.baseline_exclusive_stats
        threads = self.task_spec.num_threads
        text = "\n".join([
            super().__repr__(), self.task_spec.summarize(),
            f"  {'':>25}All{'':>10}Noisy symbols removed",
            f"    Instructions: {self.counts(denoise=False):>12}{'':>15}{self.counts(denoise=True):>12}",
            f"    Baseline:     {base.sum():>12}{'':>15}{base.denoise().sum():>12}",
            f"{self.number_per_run} runs per measurement, {threads} thread{'s' if threads > 1 else ''}"]).strip()
        if not self.built_with_debug_symbols:
            text += ("\nWarning: PyTorch was not built with debug symbols.\n         Source information may be "
                     "limited. Rebuild with\n         REL_WITH_DEB_INFO=1 for more detailed results.")
        return text

    def stats(self, inclusive: bool = False) -> FunctionCounts:
        """The statement's counts per function, with callees (inclusive) or without."""
        return self.stmt_inclusive_stats if inclusive else self.stmt_exclusive_stats

    def counts(self, *, denoise: bool = False) -> int:
        """All instructions the statement's runs executed (less the noisy dict lookups if denoise)."""
        stats = self.stmt_exclusive_stats
        return (stats.denoise() if denoise else stats).sum()

    def delta(self, other: CallgrindStats, inclusive: bool = False) -> FunctionCounts:
        """Per function, this statement's counts less `other`'s."""
        return self.stats(inclusive=inclusive) - other.stats(inclusive=inclusive)

    def as_standardized(self) -> CallgrindStats:
        """The same counts with build paths and library names stripped from the function names, so that two
        profiles from different installs diff cleanly."""
        def strip(stats):
            for before, after in _STANDARDIZE:
                stats = stats.transform(lambda fn: re.sub(before, after, fn))
            return stats

        return CallgrindStats(self.task_spec, self.number_per_run, self.built_with_debug_symbols,
                              strip(self.baseline_inclusive_stats), strip(self.baseline_exclusive_stats),
                              strip(self.stmt_inclusive_stats), strip(self.stmt_exclusive_stats), None)


class Serialization(enum.Enum):
    PICKLE = 0
    TORCH = 1
    TORCH_JIT = 2


def _allowed_types():
    return {Serialization.PICKLE: (str, bytes, bool, int, float, complex),
            Serialization.TORCH_JIT: (lantern.jit.ScriptFunction, lantern.jit.ScriptModule),
            Serialization.TORCH: (lantern.nn.Module,)}


class CopyIfCallgrind:
    """Marks a global that collect_callgrind may hand its subprocess as a copy: a builtin scalar or string
    (pickled), an nn.Module (lantern.save) or a scripted function or module (lantern.jit.save). `setup` is code
    the subprocess runs before loading it (imports its class needs)."""

    def __init__(self, value: Any, *, setup: str | None = None) -> None:
        for method, types in _allowed_types().items():
            if isinstance(value, types):
                self._value, self._setup, self._serialization = value, setup, method
                return
        names = "\n".join(getattr(t, "__name__", repr(t)) for t in itertools.chain(_allowed_types().values()))
        raise ValueError(f"Unsupported type: {type(value)}\n`collect_callgrind` restricts globals to the following "
                         f"types:\n{textwrap.indent(names, '  ')}")

    @property
    def value(self) -> Any:
        return self._value

    @property
    def setup(self) -> str | None:
        return self._setup

    @property
    def serialization(self) -> Serialization:
        return self._serialization

    @staticmethod
    def unwrap_all(globals: dict[str, Any]) -> dict[str, Any]:
        return {k: (v.value if isinstance(v, CopyIfCallgrind) else v) for k, v in globals.items()}

