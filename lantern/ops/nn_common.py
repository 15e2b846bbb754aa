"""Private helpers shared by the nn ops modules (nn_activation, nn_loss, nn_conv, nn_pooling, linalg_products, ...):
calling an op by name, lantern's `where`, and widening float16/bfloat16 arrays to float32 as PyTorch's CPU kernels do.

>>> import numpy as np
>>> _wide(np.ones(2, np.float16)).dtype
dtype('float32')
"""
import numpy as np

from ..core import dtype as dt
from .call_by_name import call_op as _op

_HALF = (np.dtype(np.float16), np.dtype(dt.bfloat16.np))


def _wide(x):
    """float16/bfloat16 arrays widened to float32, where PyTorch's CPU kernels compute them."""
    return x.astype(np.float32) if x.dtype in _HALF else x


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
