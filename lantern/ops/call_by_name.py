"""Call an operator by its registered name, through the whole dispatcher (autograd, tracing, the backend kernel):
how composite ops, kernels and derivative formulas call other ops without importing one another's modules.

>>> from lantern.ops.call_by_name import call_op
>>> call_op("add", lantern.ones(2), lantern.ones(2), 3)
tensor([4., 4.])
"""
from .dispatcher import call
from .registry import get


def call_op(name, *args):
    """Run the operator registered as `name` on all of its arguments, positionally in schema order."""
    return call(get(name), args)
