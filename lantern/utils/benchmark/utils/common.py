"""What a measurement is: the task it timed (TaskSpec), its raw times (Measurement), and the helpers that turn
seconds into text (select_unit, unit_to_english, trim_sigfig) as torch.utils.benchmark does.

The statistics are computed in the dtypes torch's use (float64 quantiles, float32 logarithms and spreads), so
the numbers printed, and the units and significant figures Compare picks, are torch's for the same times.

>>> from lantern.utils.benchmark import Measurement, TaskSpec
>>> m = Measurement(number_per_run=100, raw_times=[6.9e-4], task_spec=TaskSpec("x + 1", "x = 1"))
>>> print("\\n".join(repr(m).splitlines()[1:]))
x + 1
setup: x = 1
  6.90 us
  1 measurement, 100 runs , 1 thread
"""
import collections
import contextlib
import dataclasses
import math
import textwrap
from typing import Any

import lantern

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig", "ordered_unique",
           "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # seconds: no measurement is trusted to better than 25 ns
# An interquartile range above these fractions of the median earns the measurement a warning.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer timed, without its globals: the code, its labels and the thread count."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (else the one-line stmt) with the sub_label; a multi-line stmt is indented under "stmt:"."""
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n" + textwrap.indent(self.stmt, "  ")

    def setup_str(self) -> str:
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The task's lines in a Measurement's repr: title, description, setup (a multi-line part ends blank)."""
        parts = [p for p in (self.title, self.description or "", self.setup_str()) if p]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts)


_TASKSPEC_FIELDS = tuple(field.name for field in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """Times of `number_per_run` runs of a task, one entry of raw_times per block; `times` are per run."""
    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # the user's, carried as is

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:  # stmt, label, num_threads, ... read through to the task
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """How many figures of the median to trust (1 to 4): the median over a 90% confidence interval of the
        central half of the times (z = 1.645), in decimal digits."""
        self._lazy_init()
        n = len(self._sorted_times)
        central = self._sorted_times[n // 4:math.ceil(_float32(3 * n / 4))]
        # torch's float32 std accumulates in float64 and rounds the result to float32
        std = _float32(lantern.tensor(central).double().std(unbiased=False).item())
        interval = max(1.645 * std / _float32(math.sqrt(len(central))), _MIN_CONFIDENCE_INTERVAL)
        digits = math.floor(_log10(self._median / interval))
        return min(max(digits, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        times = lantern.tensor(self._sorted_times, dtype=lantern.float64)
        self._median, self._mean = times.quantile(0.5).item(), times.mean().item()
        self._p25, self._p75 = times.quantile(0.25).item(), times.quantile(0.75).item()
        if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            self._warn("This suggests significant environmental influence.")
        elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
            self._warn("This could indicate system fluctuation.")

    def _warn(self, why: str) -> None:
        spread = self.iqr / self.median * 100
        self._warnings += (f"  WARNING: Interquartile range is {spread:.1f}% of the median measurement.\n"
                           f"           {why}",)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        # torch's property reads a misspelt attribute, fails, and falls back to the field: env is the raw field.
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [super().__repr__(), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to "
                         f"{self._p75 / scale:.2f})")
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements) -> list["Measurement"]:
        """One Measurement per distinct TaskSpec, holding the per-run times of its replicates (number_per_run 1,
        no metadata)."""
        grouped = collections.defaultdict(list)
        for m in measurements:
            grouped[m.task_spec].extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec, metadata=None)
                for spec, times in grouped.items()]


def _float32(x: float) -> float:
    return lantern.tensor(x, dtype=lantern.float32).item()


def _log10(x: float) -> float:
    """log10 of `x` in float32, as torch computes it: correctly rounded, that is float64's log10 rounded to float32.
    (lantern's float32 log10 is NumPy's, an ulp off at some points, 1e-3 among them: a unit boundary.)"""
    return _float32(lantern.tensor(_float32(x), dtype=lantern.float64).log10().item())


def select_unit(t: float) -> tuple[str, float]:
    """The unit that puts `t` seconds in [1, 1000), and its size in seconds.

    >>> select_unit(6.9e-6)
    ('us', 1e-06)
    """
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """`x` rounded to `n` significant figures, in float32 as torch computes it.

    >>> round(trim_sigfig(3.14159, 2), 6)
    3.1
    """
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = math.ceil(_log10(abs(x)))
    scale = 10 ** (magnitude - n)
    return float(lantern.tensor(x / scale).round() * scale)


def ordered_unique(elements) -> list:
    """The distinct elements in first-seen order.

    >>> ordered_unique([3, 1, 3, 2, 1])
    [3, 1, 2]
    """
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int):
    """Run the block with lantern's intra-op thread count at `n`, then restore the count it had."""
    before = lantern.get_num_threads()
    try:
        lantern.set_num_threads(n)
        yield
    finally:
        lantern.set_num_threads(before)
