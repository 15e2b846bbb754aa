"""Helpers shared by the indexing ops' modules (indexing, indexing_gather_scatter, indexing_slices, indexing_masks):
a 0-dim array seen as 1-D for their kernels, and the backward helpers their derivative formulas call (written with
lantern ops, so double backward works).

>>> _sum_to(lantern.ones(2, 3), (1, 3)).tolist()
[[2.0, 2.0, 2.0]]
>>> _filled((2,), lantern.ones(1, dtype=lantern.float64), "zeros").dtype
lantern.float64
"""
from .call_by_name import call_op as _op


def _at_least_1d(a):
    return a.reshape(1) if a.ndim == 0 else a


def _filled(sizes, like, factory):
    return _op(factory, tuple(sizes), like.dtype, None, like.device, None, False, None)


def _sum_to(grad, sizes):
    """A gradient of a broadcast result, summed back to an input's sizes."""
    return grad if grad._size == tuple(sizes) else grad.sum_to_size(sizes)


def _picked(grad, filled):
    """grad where an op wrote its fill value (grad minus grad with those places zeroed: each place counts once,
    however many times an index names it)."""
    return grad - filled
