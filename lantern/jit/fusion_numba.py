"""Compiling generated kernel source with numba, cached on disk so a later process loads machine code.

Imported only when a kernel is first needed (numba takes ~0.5 s to import). Each source is written once to
`<tmp>/lantern_fusion_<uid>/k_<hash>.py` (LANTERN_FUSION_CACHE overrides the folder) and imported from there, so
numba's own file cache (`cache=True`) applies: the first process pays the compile (a few hundred ms per
kernel), later ones load it in milliseconds.

>>> import numpy as np
>>> kernel = compile_kernel("def kernel(n, i0, o0):\\n    for k in loop(n):\\n        o0[k] = tanh_float32(i0[k])",
...                         parallel=False)
>>> out = np.empty(2, np.float32); kernel(2, np.array([0.5, -1.0], np.float32), out)
>>> np.allclose(out, np.tanh([0.5, -1.0]))
True
"""
import hashlib
import importlib.util
import math
import os
import sys
import tempfile

from functools import partial

import numba
import numpy as np

from ..core import intra_op
from ..core.reference import specialisation
from .fusion_codegen import SUPPORTED_DTYPES

__all__ = []

PARALLEL_MIN_NUMEL = 1 << 17    # below this, waking threads costs more than they save
f32 = np.float32


@numba.njit(error_model="numpy", cache=True)
def tanh_float32(x):
    # A rational approximation (Eigen's, a few ulp in float32) that LLVM vectorises, unlike libm's tanhf.
    x = f32(-7.90531110763549805) if x < f32(-7.90531110763549805) else x
    x = f32(7.90531110763549805) if x > f32(7.90531110763549805) else x
    x2 = x * x
    p = f32(-2.76076847742355e-16) * x2 + f32(2.00018790482477e-13)
    p = p * x2 + f32(-8.60467152213735e-11)
    p = p * x2 + f32(5.12229709037114e-08)
    p = p * x2 + f32(1.48572235717979e-05)
    p = p * x2 + f32(6.37261928875436e-04)
    p = p * x2 + f32(4.89352455891786e-03)
    q = f32(1.19825839466702e-06) * x2 + f32(1.18534705686654e-04)
    q = q * x2 + f32(2.26843463243900e-03)
    q = q * x2 + f32(4.89352518554385e-03)
    r = x * p / q
    return x if abs(x) < f32(0.0004) else r


@numba.njit(error_model="numpy", cache=True)
def gelu_tanh_grad(x, t, half, one, k, c3):
    return half * (one + t) + x * half * (one - t * t) * k * (one + c3 * x * x)


@numba.njit(error_model="numpy", cache=True)
def silu_grad(x, one):
    s = one / (one + math.exp(-x))
    return s * (one + x * (one - s))


def _prelude():
    lines = ["import math", "import numpy as np", "from numba import njit",
             "from lantern.jit.fusion_numba import tanh_float32, gelu_tanh_grad, silu_grad",
             "tanh_float64 = math.tanh"]
    for dt in sorted(SUPPORTED_DTYPES):
        lines.append(f"T_{dt} = np.{'bool_' if dt == 'bool' else dt}")
        lines.append(f"log_{dt}, sqrt_{dt} = math.log, math.sqrt")
    return "\n".join(lines) + "\n"


PRELUDE = _prelude()


def use_threads(numel):
    """Whether a kernel over `numel` elements should be the threaded variant (see compile_kernel)."""
    return numel >= PARALLEL_MIN_NUMEL and intra_op.num_threads() > 1


def cache_dir():
    default = os.path.join(tempfile.gettempdir(), f"lantern_fusion_{os.getuid() if hasattr(os, 'getuid') else 0}")
    path = os.environ.get("LANTERN_FUSION_CACHE", default)
    os.makedirs(path, exist_ok=True)
    return path


def compile_kernel(source, parallel):
    """The numba function of a generated `def name(n, ...)` source; when `parallel`, a function that runs it over
    flat ranges of its arrays on lantern's intra-op pool."""
    kernel = _compiled(source)
    return partial(on_the_pool, kernel) if parallel else kernel


@specialisation(replaces="a fused kernel's one call over all n elements, kernel(n, *args)",
                when="fast paths on, numba, lantern.get_num_threads() > 1, n ≥ PARALLEL_MIN_NUMEL",
                parity_test="tests/test_intra_op_fusion.py::test_kernel_on_the_pool_gives_the_bits_of_one_call")
def on_the_pool(kernel, n, *args):
    """kernel(n, *args) as one call per range of the flat element index, on lantern's intra-op pool. Every array
    argument of a generated kernel is flat with n elements and each element is computed alone, so the ranges
    write apart and give the bits of one call. The kernels release the GIL (nogil), so the ranges run at once;
    numba's own threading layer (OpenMP, whose idle threads spin) is never started."""
    def run(start, stop):
        kernel(stop - start, *[a[start:stop] if isinstance(a, np.ndarray) else a for a in args])
    intra_op.parallel_chunks(n, run, grain=intra_op.ELEMENTS_PER_CHUNK)


def _compiled(source):
    """The numba function of a generated `def name(n, ...)` source, compiled serial and without the GIL."""
    name = source[4:source.index("(")]
    text = (PRELUDE + "loop = range\n\n\n"
            + "@njit(error_model='numpy', nogil=True, cache=True)\n" + source + "\n")
    digest = hashlib.sha1(text.encode()).hexdigest()[:20]
    path = os.path.join(cache_dir(), f"k_{digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)       # atomic: concurrent processes never see a half-written file
    module_name = f"lantern_fused_{digest}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[module_name] = module
    return getattr(module, name)
