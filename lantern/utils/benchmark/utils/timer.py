"""Timer: timeit.Timer made lantern-aware, as torch.utils.benchmark.Timer. It fixes lantern's intra-op thread
count while it measures (one thread unless told), warms up before timing, picks a block size that makes the
timer's own cost negligible, and returns Measurements that print and compare.

A `timer=` callable replaces the clock (timeit's contract: called before and after each block), which makes a
measurement deterministic:

>>> import itertools
>>> from lantern.utils.benchmark import Timer
>>> ticks = itertools.count()
>>> m = Timer("x + 1", setup="x = 1", timer=lambda: next(ticks) * 1e-3).timeit(100)
>>> m.number_per_run, m.times
(100, [1e-05])
"""
import enum
import textwrap
import timeit

import lantern
from . import common
from .valgrind_wrapper import callgrind_run, timer_interface as valgrind_timer_interface

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """The default clock: timeit's, after waiting for an accelerator's queued work when one is present."""
    if lantern.accelerator.is_available():
        lantern.accelerator.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _language(language):
    if language in (Language.PYTHON, "py", "python"):
        return Language.PYTHON
    if language in (Language.CPP, "cpp", "c++"):
        raise RuntimeError("Timer(language='cpp'): lantern has no C++ side, so it cannot compile and time C++ "
                           "statements; time the Python statement that calls the same lantern op instead")
    raise ValueError(f"Invalid language `{language}`.")


def _tidy(code: str) -> str:
    """`code` dedented, without the newline that opens a block string or trailing whitespace."""
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


class Timer:
    """Measure the time of `stmt` (a string of Python run in `globals`, where `torch` is lantern unless given)
    after `setup`. label, sub_label, description and env name the measurement for printing and Compare;
    num_threads is lantern's intra-op thread count while measuring (default 1, as torch's)."""

    _timer_cls = timeit.Timer

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None, label=None,
                 sub_label=None, description=None, env=None, num_threads=1, language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._globals = dict(globals or {})  # a copy: exec adds __builtins__, which must not leak to the caller
        self._language = _language(language)
        self._globals.setdefault("torch", lantern)
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this code can simply be "
                             "moved to `setup`.")
        stmt, setup = _tidy(stmt), _tidy(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer,
                                      globals=valgrind_timer_interface.CopyIfCallgrind.unwrap_all(self._globals))
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                          sub_label=sub_label, description=description, env=env,
                                          num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)  # at least 1 ns: no block takes less, and no division by 0

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Run `stmt` `number` times, after a warm-up of number // 100 runs (at least 2): one block."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(number_per_run=number, raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(self, number, time_hook, stop_hook, min_run_time, max_run_time=None,
                                   callback=None) -> list[float]:
        """Blocks of `number` runs until min_run_time has passed and stop_hook agrees, or max_run_time passes."""
        total_time, can_stop, times = 0.0, False, []
        with common.set_torch_threads(self._task_spec.num_threads):
            while total_time < min_run_time or not can_stop:
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Runs per block: ×10 from 1 until the timer's overhead (an empty block's median time) is at most 0.01% of
        a block and a block takes a thousandth of min_run_time, or a block alone exceeds min_run_time."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = lantern.tensor([self._timeit(0) for _ in range(5)]).median().item()
            number = 1
            while True:
                time_taken = self._timeit(number)
                if overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time or number * 10 > 2147483647:  # torch's C++ int limit, kept
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> common.Measurement:
        """Blocks of the estimated size until min_run_time seconds have been measured; `callback(number, time)`
        sees each block."""
        number = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(number, lambda: self._timeit(number), lambda times: True,
                                                min_run_time=min_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback=None) -> common.Measurement:
        """Blocks until more than 3 are in, min_run_time has passed and the IQR is under `threshold` of the median,
        or max_run_time has passed."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times):
            return len(times) > 3 and common.Measurement(
                number_per_run=number, raw_times=times, task_spec=self._task_spec).meets_confidence(threshold)

        times = self._threaded_measurement_loop(number, lambda: self._timeit(number), stop_hook, min_run_time,
                                                max_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def collect_callgrind(self, number: int = 100, *, repeats: int | None = None, collect_baseline: bool = True,
                          retain_out_file: bool = False):
        """Instruction counts of `number` runs of `stmt` under valgrind's callgrind, in a subprocess (see
        valgrind_wrapper.timer_interface): a CallgrindStats, or a tuple of `repeats` of them."""
        if repeats is not None and repeats < 1:
            raise ValueError("If specified, `repeats` must be >= 1")
        self._timeit(1)  # a broken stmt or setup fails here, not in the subprocess
        result = callgrind_run.wrapper_singleton().collect_callgrind(
            task_spec=self._task_spec, globals=self._globals, number=number, repeats=repeats or 1,
            collect_baseline=collect_baseline, retain_out_file=retain_out_file)
        return result[0] if repeats is None else result
