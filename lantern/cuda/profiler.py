"""torch.cuda.profiler: start/stop the CUDA profiler (cudaProfilerStart), which needs CUDA.

>>> lantern.cuda.profiler.start()
Traceback (most recent call last):
AssertionError: Torch not compiled with CUDA enabled
"""
import contextlib

from ..core.absent_device import needs

__all__ = ["start", "stop", "profile"]

start = needs("CUDA", "start", "Start the CUDA profiler.", __name__)
stop = needs("CUDA", "stop", "Stop the CUDA profiler.", __name__)


@contextlib.contextmanager
def profile():
    """A context that runs the CUDA profiler around its block."""
    start()
    try:
        yield
    finally:
        stop()
