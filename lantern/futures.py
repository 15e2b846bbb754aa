"""Futures: a value that a computation will set later, with callbacks (torch.futures).

A `Future` is completed once, by `set_result(value)` or `set_exception(exc)`; `wait()` blocks until then and
returns the value (or raises the exception), `then(fn)` chains a future for `fn(this_future)`, and
`add_done_callback(fn)` runs `fn(this_future)` on completion (at once if it is already complete). lantern's
`jit.fork` returns one; `collect_all` and `wait_all` join several.

>>> import lantern
>>> fut = lantern.futures.Future()
>>> doubled = fut.then(lambda f: f.value() * 2)
>>> fut.done(), doubled.done()
(False, False)
>>> fut.set_result(21)
>>> doubled.wait(), fut.done()
(42, True)
"""
import threading

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """One value to come (torch.futures.Future); thread-safe, completed exactly once."""

    def __init__(self, *, devices=None):
        self._condition = threading.Condition()
        self._completed = False
        self._result = None
        self._exception = None
        self._callbacks = []

    def done(self):
        """Whether a result or an exception has been set."""
        return self._completed

    def wait(self):
        """Block until the future completes; return its value or raise its exception."""
        with self._condition:
            self._condition.wait_for(lambda: self._completed)
        return self.value()

    def value(self):
        """The value of a completed future (its exception is raised instead, if it has one)."""
        if not self._completed:
            raise RuntimeError("Future.value() called on a future that has not completed yet; call wait() first")
        if self._exception is not None:
            raise self._exception
        return self._result

    def set_result(self, result):
        """Complete the future with `result`, waking its waiters and running its callbacks."""
        self._complete(result, None)

    def set_exception(self, result):
        """Complete the future with the exception `result`: wait() and value() raise it."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def then(self, callback):
        """A new future for `callback(self)`, set when this one completes (with the callback's exception, wrapped
        in a RuntimeError as torch does, if it raises)."""
        chained = self._chained()

        def run(fut):
            try:
                chained.set_result(callback(fut))
            except Exception as exc:
                chained.set_exception(RuntimeError(
                    f"Got the following error when running the callback: {type(exc).__name__}: {exc}"))

        self.add_done_callback(run)
        return chained

    def _chained(self):
        """The future `then` returns: a plain one (a subclass may return one that knows how to make progress)."""
        return Future()

    def add_done_callback(self, callback):
        """Run `callback(self)` when the future completes, or now if it already has."""
        with self._condition:
            if not self._completed:
                self._callbacks.append(callback)
                return
        callback(self)

    def _complete(self, result, exception):
        with self._condition:
            if self._completed:
                raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future can "
                                   "only be marked completed once.")
            self._result, self._exception, self._completed = result, exception, True
            callbacks, self._callbacks = self._callbacks, []
            self._condition.notify_all()
        for callback in callbacks:
            callback(self)

    def __repr__(self):
        return f"<lantern.jit.Future object at {hex(id(self))}>"


def collect_all(futures):
    """A future that completes, with the list of `futures` itself, once every one of them has completed."""
    combined = Future()
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            combined.set_result(list(futures))

    if not futures:
        combined.set_result([])
    for fut in futures:
        fut.add_done_callback(one_done)
    return combined


def wait_all(futures):
    """Wait for every future; return their values in order (raising the first exception met)."""
    return [fut.wait() for fut in collect_all(futures).wait()]
