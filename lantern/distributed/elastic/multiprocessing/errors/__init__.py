"""torch.distributed.elastic.multiprocessing.errors: `@record` on a training script's entry point.

A function decorated with `record` that raises writes the exception to TORCHELASTIC_ERROR_FILE in torchrun's
layout before the exception goes on, so the launcher's failure report shows the traceback; `SystemExit(0)` is a
normal return. Under lantern's launcher every rank's uncaught exception is recorded anyway (see
lantern.distributed.launcher.worker), so @record changes nothing there; it matters for the program's own handling
and for running the same script under torchrun.

>>> @record
... def main():
...     raise SystemExit(0)
>>> print(main())
None
"""
import faulthandler
import functools
import traceback
import warnings

from ....launcher import failures

__all__ = ["record", "ErrorHandler", "get_error_handler"]


class ErrorHandler:
    """Writes an exception to TORCHELASTIC_ERROR_FILE (nothing when unset), as torch's ErrorHandler does."""

    def initialize(self):
        """Dump Python's traceback on a fatal fault (faulthandler), as torch's handler does before the program."""
        try:
            faulthandler.enable(all_threads=True)
        except Exception as error:  # no usable stderr: the program runs without the fault dump
            warnings.warn(f"Unable to enable fault handler. {type(error).__name__}: {error}", stacklevel=2)

    def record_exception(self, error):
        """Write `error` (being handled now) in torchrun's layout, with this rank's place."""
        message = f"{type(error).__name__}: {error}"
        failures.write_record(traceback.format_exc(), 1, message=message, rank_ends=False)


def get_error_handler():
    return ErrorHandler()


def record(fn, error_handler=None):
    """Decorator: run `fn`; record an exception it raises (then re-raise it); SystemExit(0) returns None."""
    handler = error_handler or get_error_handler()

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as done:
            if done.code == 0:
                return None
            raise
        except Exception as error:
            handler.record_exception(error)
            raise
    return wrapper
