"""Private helpers shared by the nn ops modules (nn_activation, nn_loss, nn_conv, nn_pooling, linalg_products, ...):
calling an op by name, lantern's `where`, widening float16/bfloat16 arrays to float32 as PyTorch's CPU kernels do, and
`eager_backend`, which lets a backward formula compute straight on arrays when nothing needs its ops recorded.

>>> import numpy as np
>>> _wide(np.ones(2, np.float16)).dtype
dtype('float32')
"""
import numpy as np

from ..core import dtype as dt
from ..core.state import tls
from .call_by_name import call_op as _op

_HALF = (np.dtype(np.float16), np.dtype(dt.bfloat16.np))


def _wide(x):
    """float16/bfloat16 arrays widened to float32, where PyTorch's CPU kernels compute them."""
    return x.astype(np.float32) if x.dtype in _HALF else x


_EAGER_DTYPES = (dt.float32, dt.float64)


def eager_backend(*tensors):
    """The backend whose array library a backward formula may use directly on these tensors, or None.

    A formula is written in lantern ops so that double backward can differentiate it; while grad mode is off
    (backward without create_graph) and nothing watches the dispatcher (tracer, profiler, dispatch trace), no one
    sees those ops, and a few array calls on the raw arrays do the same arithmetic without an op's overhead each.
    Only float32/float64 tensors of one dtype on one backend qualify (half precision keeps PyTorch's roundings in
    the ops). Formulas use it as `backend = eager_backend(grad, x)` and fall back to their ops when it is None."""
    if tls.grad_enabled or tls.observed:
        return None
    first = tensors[0]
    backend, dtype = first._backend, first.dtype
    if backend.xp is None or dtype not in _EAGER_DTYPES:
        return None
    for t in tensors:
        if t._backend is not backend or t.dtype is not dtype:
            return None
    return backend


def _where(cond, a, b):
    return _op("where", cond, a, b)


def _sums_along(xp, a, axis):
    """Σ along axis, kept as a size-1 dim: einsum's loop for the last axis (~2× add.reduce's on rows of 1000)."""
    if axis == a.ndim - 1:
        return xp.einsum("...i->...", a)[..., None]
    return xp.add.reduce(a, axis=axis, keepdims=True)


def _row_sums(xp, x):
    """Σ along each row of the 2-D x, as a (rows, 1) column."""
    return _sums_along(xp, x, 1)
