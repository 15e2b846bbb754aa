"""How many threads the CPU backend's BLAS may use (torch.set_num_threads / get_num_threads).

lantern's CPU kernels are NumPy calls; the only ones that run threads are the BLAS routines behind matmul and
convolution (OpenBLAS or MKL under NumPy and SciPy). threadpoolctl, the well-kept library for exactly this, sets
their limit at run time.

>>> import lantern
>>> before = lantern.get_num_threads()
>>> lantern.set_num_threads(1); lantern.get_num_threads()
1
>>> lantern.set_num_threads(before)
"""
from threadpoolctl import ThreadpoolController


def set_num_threads(num_threads):
    """Let BLAS use `num_threads` threads in every library loaded now (NumPy's and SciPy's OpenBLAS or MKL)."""
    if type(num_threads) is not int:
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num_threads).__name__}")
    if num_threads <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    ThreadpoolController().limit(limits=num_threads, user_api="blas")


def get_num_threads():
    """The largest thread count any loaded BLAS library will use."""
    return max((lib.num_threads for lib in ThreadpoolController().select(user_api="blas").lib_controllers),
               default=1)
