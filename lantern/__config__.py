"""torch.__config__: what this build is made of (`show()`) and how it runs in parallel (`parallel_info()`), as the
text programs print into their logs and bug reports.

>>> import lantern
>>> lantern.__config__.show().splitlines()[0]
'lantern built with:'
>>> "get_num_threads()" in lantern.__config__.parallel_info()
True
"""
import os
import platform

import numpy as np
from threadpoolctl import threadpool_info

from . import version
from .backends.cpu import get_cpu_capability
from .backends.cpu_threads import get_num_interop_threads
from .core import intra_op

__all__ = ["show", "parallel_info"]


def _blas():
    """NumPy's BLAS, as threadpoolctl finds it: 'openblas 0.3.31 (SkylakeX kernels)'."""
    found = [i for i in threadpool_info() if i["user_api"] == "blas" and "numpy" in i["filepath"]]
    if not found:
        return "not found"
    info = found[0]
    kernels = f" ({info['architecture']} kernels)" if info.get("architecture") else ""
    return f"{info['internal_api']} {info['version']}{kernels}"


def _numba():
    try:
        import numba
    except ImportError:
        return "not installed (fused and compiled kernels run op by op)"
    return f"{numba.__version__} (fused and compiled CPU kernels)"


def show():
    """The build: lantern's version, Python, NumPy and its BLAS, numba, the CPU capability the kernels use."""
    return "\n".join([
        "lantern built with:",
        f"  - lantern {version.release}: PyTorch {version.follows}'s CPU behaviour in Python over NumPy",
        f"  - Python {platform.python_version()}",
        f"  - NumPy {np.__version__}, BLAS {_blas()}",
        f"  - numba {_numba()}",
        f"  - CPU capability usage: {get_cpu_capability()}",
        "  - CUDA: not built in (lantern.cuda uses CuPy when it is installed)",
        "",
    ])


def parallel_info():
    """The thread counts: lantern's intra-op pool, the inter-op count, what BLAS is held to, the environment."""
    lines = [
        "lantern/Parallel:",
        f"\tget_num_threads() : {intra_op.num_threads()}",
        f"\tget_num_interop_threads() : {get_num_interop_threads()}",
        f"BLAS {_blas()}",
        f"\tthreads : {intra_op.blas_thread_limit()}",   # one while lantern's own pool does the parallel work
        f"hardware concurrency : {os.cpu_count()}",
        "Environment variables:",
    ]
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        lines.append(f"\t{name} : {os.environ.get(name, '[not set]')}")
    lines += ["lantern parallel backend: a thread pool over NumPy calls that release the GIL (core/intra_op.py)", ""]
    return "\n".join(lines)
