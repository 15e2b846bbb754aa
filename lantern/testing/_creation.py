"""make_tensor (torch.testing._creation): a random tensor for tests, of any shape, dtype and layout.

Values are uniform in [low, high) (defaults by dtype: [0, 2) for bool, [-9, 10) for integers, [-9, 9) for floating
and complex types), drawn with randint / uniform_ on the default generator, as torch draws them, so a seed gives
torch's values. noncontiguous=True returns every other element of a tensor twice as wide in the last dim (offset
by one, to catch offset bugs too).

>>> import lantern
>>> from lantern.testing import make_tensor
>>> t = make_tensor(2, 3, dtype=lantern.float32, device="cpu", low=-1, high=1, noncontiguous=True)
>>> t.shape, t.is_contiguous(), bool(((t >= -1) & (t < 1)).all())
(lantern.Size([2, 3]), False, True)
"""
import collections.abc
import functools
import math

import lantern

from ._comparison import _dtype_text
from ..core import user_warnings

__all__ = ["make_tensor"]

_INTEGRAL_TYPES = [lantern.uint8, lantern.int8, lantern.int16, lantern.int32, lantern.int64]
_FLOATING_TYPES = [lantern.float16, lantern.bfloat16, lantern.float32, lantern.float64]
_COMPLEX_TYPES = [lantern.complex64, lantern.complex128]
_BOOLEAN_OR_INTEGRAL_TYPES = [lantern.bool, *_INTEGRAL_TYPES]
_FLOATING_OR_COMPLEX_TYPES = [*_FLOATING_TYPES, *_COMPLEX_TYPES]


def _uniform_random_(t, low, high):
    """t.uniform_(low, high), halving the bounds when their difference would overflow the dtype."""
    if high - low >= lantern.finfo(t.dtype).max:
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def _low_high(dtype, low, high, *, lowest_inclusive, highest_exclusive, default_low, default_high):
    """The sampling interval: the defaults for None, checked, clamped to what the dtype holds (integers rounded up)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in [low, high]):
        raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
    elif low == high and dtype in _FLOATING_OR_COMPLEX_TYPES:
        user_warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is deprecated "
                      "since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.", FutureWarning,
                      stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest_inclusive or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but "
                         f"{_dtype_text(dtype)} only supports [{lowest_inclusive}, {highest_exclusive})")
    low = min(max(low, lowest_inclusive), highest_exclusive)
    high = min(max(high, lowest_inclusive), highest_exclusive)
    if dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of `shape` (ints, or one sequence) with values uniform in [low, high) (see the module docstring)."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={_dtype_text(dtype)}")
    noncontiguous = noncontiguous and functools.reduce(lambda x, y: x * y, shape, 1) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    result = _random_values(shape, dtype, device, low, high)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype in _BOOLEAN_OR_INTEGRAL_TYPES else lantern.finfo(dtype).tiny
    if dtype in _FLOATING_OR_COMPLEX_TYPES:
        result.requires_grad = requires_grad
    return result


def _random_values(shape, dtype, device, low, high):
    """A contiguous tensor of `shape` with values uniform in the dtype's [low, high)."""
    if dtype is lantern.bool:
        low, high = _low_high(dtype, low, high, lowest_inclusive=0, highest_exclusive=2, default_low=0,
                              default_high=2)
        return lantern.randint(low, high, shape, device=device, dtype=dtype)
    if dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        info = lantern.iinfo(dtype)
        # randint cannot draw int64's largest value: its bounds are int64 too
        low, high = _low_high(dtype, low, high, lowest_inclusive=info.min,
                              highest_exclusive=info.max + (1 if dtype is not lantern.int64 else 0),
                              default_low=-9, default_high=10)
        return lantern.randint(low, high, shape, device=device, dtype=dtype)
    if dtype in _FLOATING_OR_COMPLEX_TYPES:
        info = lantern.finfo(dtype)
        low, high = _low_high(dtype, low, high, lowest_inclusive=info.min, highest_exclusive=info.max,
                              default_low=-9, default_high=9)
        result = lantern.empty(shape, device=device, dtype=dtype)
        _uniform_random_(lantern.view_as_real(result) if dtype in _COMPLEX_TYPES else result, low, high)
        return result
    raise TypeError(f"The requested dtype '{_dtype_text(dtype)}' is not supported by torch.testing.make_tensor(). "
                    "To request support, file an issue at: https://github.com/pytorch/pytorch/issues")
