"""The quick contiguity test that fast paths use: are a tensor's strides the cached row-major tuple for its size?

Every tensor made fresh (an op's output, a factory's result) gets its strides from `contiguous_strides(size)`,
which hands out one cached tuple per size. So "this tensor is row-major" can be told by one dict lookup and one
identity test instead of comparing strides. The test is one-sided: True is always right, but False proves nothing,
because a row-major tensor can hold an equal tuple built elsewhere (`as_strided(..., (3, 1))`, a view's
arithmetic), and the cache keeps only the first few thousand sizes it sees. Use it only to choose a fast path whose
general path is right for every layout; `Tensor.is_contiguous()` is the full test.

>>> x = lantern.ones(2, 3)
>>> has_cached_contiguous_strides(x), x.is_contiguous()
(True, True)
>>> y = x.as_strided((2, 3), (3, 1))   # row-major, but its strides are a tuple of its own
>>> has_cached_contiguous_strides(y), y.is_contiguous()
(False, True)
>>> has_cached_contiguous_strides(x.t())
False
"""
from .tensor_impl import _STRIDES_CACHE


def has_cached_contiguous_strides(t):
    """True when t's strides are the very tuple `contiguous_strides` hands out for its size: t is row-major.
    False says nothing either way (see the module's docstring)."""
    return t._stride is _STRIDES_CACHE.get(t._size)
