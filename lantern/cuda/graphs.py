"""torch.cuda.graphs: CUDA graph capture and replay, whose C parts are placeholders in a CPU build.

>>> lantern.cuda.graphs.is_current_stream_capturing()
Traceback (most recent call last):
RuntimeError: Tried to instantiate dummy base class _cuda_isCurrentStreamCapturing
"""
from ..core.absent_device import dummy_class_error

__all__ = ["is_current_stream_capturing", "graph_pool_handle", "CUDAGraph", "graph", "make_graphed_callables"]


def is_current_stream_capturing():
    """True while the current stream records a CUDA graph."""
    raise dummy_class_error("_cuda_isCurrentStreamCapturing")


def graph_pool_handle():
    """A memory-pool id to share between graph captures."""
    raise dummy_class_error("_graph_pool_handle")


class CUDAGraph:
    """A captured CUDA graph."""

    def __new__(cls, *args, **kwargs):
        raise dummy_class_error("CUDAGraph")


class graph:
    """A context capturing the CUDA work inside it into `cuda_graph`; it needs a CUDA stream to capture on."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        raise RuntimeError("torch.cuda.Stream requires CUDA support")  # capture needs a side stream first


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """Graphed versions of callables (modules or functions), captured with CUDA graphs."""
    raise dummy_class_error("CUDAGraph")
