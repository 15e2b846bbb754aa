"""timeit-style measurement: a loop count chosen so one repeat lasts long enough, then one time per repeat.

>>> t = Measurement("a + b", {"a": 1, "b": 2}, min_time=0.001)
>>> t.number > 1000 and t.seconds_per_call() < 1e-5
True
"""
import math
import timeit


class Measurement:
    """Times `stmt` in `namespace`; each `seconds_per_call()` is one repeat of `number` loops."""

    def __init__(self, stmt, namespace, min_time):
        self.timer = timeit.Timer(stmt, globals=namespace)
        self.timer.timeit(1)  # warm-up: first-call costs (caches, lazy imports) are not what we measure
        self.number = self._calibrate(min_time)

    def _calibrate(self, min_time):
        number = 1
        while True:
            elapsed = self.timer.timeit(number)
            if elapsed >= min_time / 4:
                return max(1, math.ceil(number * min_time / elapsed))
            number *= 4 if elapsed < min_time / 100 else 2

    def seconds_per_call(self):
        return self.timer.timeit(self.number) / self.number
