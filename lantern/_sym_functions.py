"""torch's symbolic-shape helpers (torch.sym_int, sym_max, sym_constrain_range, ...) on concrete numbers.

Under torch.compile these also take SymInt/SymFloat/SymBool, the symbols of dynamic shapes; lantern's JIT
specialises on concrete sizes and has no such symbols, so here they are what torch's are on plain Python and NumPy
numbers: the conversions, min/max with torch's promotion, and the range checks.

>>> import lantern as torch
>>> torch.sym_int(-3.7), torch.sym_max(2, 3.0), torch.sym_sum([1, 2, 3]), torch.sym_ite(True, "a", "b")
(-3, 3.0, 6, 'a')
"""
import builtins
import math

import numpy as np

from .core.tensor_impl import TensorImpl
from .core.overridable import overridable

_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)
_FLOATS = (np.floating, builtins.float)
_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1

__all__ = ["sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum", "sym_ite",
           "sym_constrain_range", "sym_constrain_range_for_size", "sym_fresh_size"]


@overridable
def sym_int(a):
    """int(a): a float truncates toward zero."""
    return builtins.int(a)


@overridable
def sym_float(a):
    return builtins.float(a)


def _check_numbers(a, b):
    for x in (a, b):
        if not isinstance(x, _NUMBERS):
            raise AssertionError(f"expected {_NUMBERS}, got {type(x)}")
    return isinstance(a, _FLOATS) or isinstance(b, _FLOATS)


@overridable
def sym_max(a, b):
    """max(a, b), a float when either is (so sym_max(1, 1.0) and sym_max(1.0, 1) are both 1.0)."""
    any_float = _check_numbers(a, b)
    return builtins.float(builtins.max(a, b)) if any_float else builtins.max(a, b)


@overridable
def sym_min(a, b):
    any_float = _check_numbers(a, b)
    return builtins.float(builtins.min(a, b)) if any_float else builtins.min(a, b)


@overridable
def sym_not(a):
    return not a


@overridable
def sym_sqrt(a):
    return math.sqrt(a)


@overridable
def sym_sum(*args):
    """The sum of the numbers, given as one list or as separate arguments."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


@overridable
def sym_ite(b, t, f):
    """`t if b else f`, with b a bool and t, f of one type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_constrain_range(size, *, min=None, max=None):
    """Check that `size` (an int, or a one-element tensor) lies in [min, max]."""
    _check_range(size, _INT64_MIN if min is None else min, _INT64_MAX if max is None else max)


def sym_constrain_range_for_size(size, *, min=None, max=None):
    """Check that `size` can be a size: in [min, max], min at least 0."""
    _check_range(size, 0 if min is None else builtins.max(min, 0), _INT64_MAX if max is None else max)


def _check_range(size, low, high):
    value = size.item() if isinstance(size, TensorImpl) else size
    if not low <= value <= high:
        raise RuntimeError(f"Invalid value range for {value} between [{low}, {high}].")


def sym_fresh_size(expr):
    """A size computed from `expr` (the Python number it holds)."""
    return np.asarray(expr).item()
