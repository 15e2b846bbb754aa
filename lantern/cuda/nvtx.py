"""torch.cuda.nvtx: NVIDIA Tools Extension ranges for profilers, absent from a CPU build.

>>> lantern.cuda.nvtx.range_push("step")
Traceback (most recent call last):
RuntimeError: NVTX functions not installed. Are you sure you have a CUDA build?
"""
import contextlib

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]


def _no_nvtx(*args, **kwargs):
    raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")


range_push = range_pop = range_start = range_end = mark = _no_nvtx


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    """A context that pushes an NVTX range for its block."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
