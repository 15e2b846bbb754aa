"""How many intra-op threads the CPU backend may use (torch.set_num_threads / get_num_threads), and the other
thread and floating-point settings of torch's CPU build (inter-op threads, flushing denormals).

lantern's CPU kernels are NumPy calls. The count sizes lantern's intra-op pool (core/intra_op.py), which splits
large GEMMs, convolutions, poolings and elementwise kernels into chunks that run at once; BLAS (OpenBLAS or MKL
under NumPy and SciPy) is held to one thread meanwhile, through threadpoolctl, the well-kept library for exactly
this (docs/internals/intra-op-threads.md says why). With one thread, or in reference mode, BLAS gets the count.

>>> import lantern
>>> before = lantern.get_num_threads()
>>> lantern.set_num_threads(1); lantern.get_num_threads()
1
>>> lantern.set_num_threads(before)
"""
import os

from ..core import intra_op


def set_num_threads(num_threads):
    """Use `num_threads` intra-op threads; every BLAS library loaded now (NumPy's and SciPy's OpenBLAS or MKL) gets
    intra_op.blas_thread_limit() threads."""
    if type(num_threads) is not int:
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num_threads).__name__}")
    if num_threads <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    intra_op.set_num_threads(num_threads)


def get_num_threads():
    """The intra-op thread count: the last set_num_threads, else the thread count BLAS had when first asked."""
    return intra_op.num_threads()


class _InteropThreads:
    """torch's inter-op pool size. lantern runs every op on the calling thread and has no inter-op pool, so the
    number only answers get_num_interop_threads(); it may be set once, as torch's."""
    count = os.cpu_count() or 1
    was_set = False


def set_num_interop_threads(num_threads):
    """Set the inter-op thread count (once per process, as in torch)."""
    if type(num_threads) is not int:
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(num_threads).__name__}")
    if num_threads <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _InteropThreads.was_set:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _InteropThreads.count, _InteropThreads.was_set = num_threads, True


def get_num_interop_threads():
    return _InteropThreads.count


def init_num_threads():
    """Prepare the calling thread's intra-op settings: nothing to do in lantern, whose BLAS thread limit
    (set_num_threads) holds for the whole process, new threads included."""


def set_flush_denormal(mode):
    """Ask to flush denormal floats to zero. NumPy's kernels always keep denormals, so turning flushing on is
    refused (False, as torch answers on a CPU without the feature) and turning it off succeeds (True)."""
    if type(mode) is not bool:
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return not mode
