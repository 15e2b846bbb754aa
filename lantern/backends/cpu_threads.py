"""How many threads the CPU backend's BLAS may use (torch.set_num_threads / get_num_threads), and the other
thread and floating-point settings of torch's CPU build (inter-op threads, flushing denormals).

lantern's CPU kernels are NumPy calls. BLAS (OpenBLAS or MKL under NumPy and SciPy) runs its own threads behind
matmul; threadpoolctl, the well-kept library for exactly this, sets their limit at run time. The same count sizes
lantern's intra-op pool (core/intra_op.py), which splits large convolutions, poolings and elementwise kernels into
chunks that run at once.

>>> import lantern
>>> before = lantern.get_num_threads()
>>> lantern.set_num_threads(1); lantern.get_num_threads()
1
>>> lantern.set_num_threads(before)
"""
import os

from threadpoolctl import ThreadpoolController

from ..core import intra_op


def set_num_threads(num_threads):
    """Let BLAS use `num_threads` threads in every library loaded now (NumPy's and SciPy's OpenBLAS or MKL)."""
    if type(num_threads) is not int:
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num_threads).__name__}")
    if num_threads <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    ThreadpoolController().limit(limits=num_threads, user_api="blas")
    intra_op.set_num_threads(num_threads)


def get_num_threads():
    """The largest thread count any loaded BLAS library will use."""
    return max((lib.num_threads for lib in ThreadpoolController().select(user_api="blas").lib_controllers),
               default=1)


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
