"""NumPy's own ufunc objects, for the pointwise kernels' fast call on NumPy arrays.

A pointwise kernel reaches its array library through `xp` (docs/internals/backends.md). When `xp` is NumPy, calling
the ufunc object found once, with `out` by position, skips a `getattr` per call and NumPy's keyword parsing; other
array libraries (CuPy, the strict test library) keep `getattr(xp, name)(..., out=out)`.

>>> fast_ufunc("add", 2).__name__, fast_ufunc("maximum", 2), fast_ufunc("divmod", 2)
('add', None, None)
"""
import numpy as np

# NumPy 2.4 deprecates a third positional argument to these two (it was mistaken for a third input)
_NO_POSITIONAL_OUT = frozenset(("maximum", "minimum"))


def fast_ufunc(name, inputs):
    """NumPy's ufunc `name` if it takes `inputs` arrays, gives one output and accepts `out` by position; else None."""
    ufunc = getattr(np, name, None)
    if isinstance(ufunc, np.ufunc) and ufunc.nin == inputs and ufunc.nout == 1 and name not in _NO_POSITIONAL_OUT:
        return ufunc
    return None
