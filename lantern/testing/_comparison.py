"""assert_close and assert_allclose (torch.testing._comparison), with torch's tolerances and messages.

Inputs are matched as torch matches them: sequences and mappings item by item (a failure names the item), then the
first "pair" that takes both inputs: None with None, booleans, Python (or NumPy) numbers, tensor-likes (tensors, or
two NumPy arrays). Tensors are compared attribute by attribute (shape, layout, optionally strides, device, dtype),
then value by value with |actual − expected| ≤ atol + rtol·|expected| (lantern.isclose); the default rtol/atol
depend on the dtype. The differences in a mismatch message are computed with lantern ops in the compared dtype, as
torch computes them, so the numbers printed are torch's.

>>> import lantern
>>> from lantern.testing import assert_close
>>> assert_close(lantern.tensor([1.0, 2.0]), lantern.tensor([1.0, 2.0 + 1e-7]))
>>> assert_close(lantern.tensor([1.0, 2.0, 3.0]), lantern.tensor([1.0, 2.5, 3.0]))
Traceback (most recent call last):
AssertionError: Tensor-likes are not close!
<BLANKLINE>
Mismatched elements: 1 / 3 (33.3%)
Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)
"""
import cmath
import collections.abc
import numbers

import numpy as np

import lantern
from ..core import user_warnings

__all__ = ["assert_close", "assert_allclose"]

# (rtol, atol) by dtype name; every other dtype (integers, bool) is compared exactly.
_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}
_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


class _Mismatch(Exception):
    """One comparison failed: the error class and message to raise, and where in nested inputs it happened."""

    def __init__(self, error_class, message, path=()):
        super().__init__(message)
        self.error_class, self.message, self.path = error_class, message, path


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless actual and expected are close (see the module docstring)."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        _compare(actual, expected, options, ())
    except _Mismatch as mismatch:
        message = msg
        if not isinstance(msg, str):
            message = mismatch.message
            if mismatch.path:
                message += "\n\nThe failure occurred for item " + "".join(str([key]) for key in mismatch.path)
            if callable(msg):
                message = msg(message)
        raise mismatch.error_class(message) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated form: numbers become tensors, looser default tolerances, dtypes need not match."""
    user_warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, lantern.Tensor):
        actual = lantern.tensor(actual)
    if not isinstance(expected, lantern.Tensor):
        expected = lantern.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances((actual.dtype, expected.dtype), _ALLCLOSE_TOLERANCES)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


def _compare(actual, expected, options, path):
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != "
                                            f"{len(expected)}", path)
        for index, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, options, path + (index,))
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        return _compare_mappings(actual, expected, options, path)
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", path)
        return
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        if bool(actual) is not bool(expected):
            raise _Mismatch(AssertionError, f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", path)
        return
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(_python_number(actual), _python_number(expected), options, path)
    pair = _tensor_pair(actual, expected, options["allow_subclasses"])
    if pair is None:
        raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {_torch_type(actual)} and "
                                   f"{_torch_type(expected)}.", path)
    _compare_tensors(*pair, options, path)


def _compare_mappings(actual, expected, options, path):
    missing = sorted(set(expected) - set(actual), key=repr)
    extra = sorted(set(actual) - set(expected), key=repr)
    if missing or extra:
        raise _Mismatch(AssertionError, f"The keys of the mappings do not match:\nMissing keys in the actual "
                                        f"mapping: {missing}\nAdditional keys in the actual mapping: {extra}", path)
    for key in expected:
        _compare(actual[key], expected[key], options, path + (key,))


def _is_number(x):
    return isinstance(x, (numbers.Number, np.number)) and not isinstance(x, (bool, np.bool_))


def _python_number(x):
    return x.item() if isinstance(x, np.number) else x


def _is_sequence(x):
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _torch_type(x):
    """The type as torch's message names it: lantern.Tensor is torch.Tensor there."""
    return "<class 'torch.Tensor'>" if type(x) is lantern.Tensor else str(type(x))


def _tensor_pair(actual, expected, allow_subclasses):
    """Both inputs as tensors, when they are of related types (two tensors, two arrays) that make tensors."""
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        return None
    if not allow_subclasses and type(actual) is not type(expected):
        return None
    try:
        return tuple(x if isinstance(x, lantern.Tensor) else lantern.as_tensor(x) for x in (actual, expected))
    except Exception:  # whatever as_tensor refuses, no pair takes
        return None


_NUMBER_DTYPES = {int: "int64", float: "float64", complex: "complex128"}


def _compare_numbers(actual, expected, options, path):
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        rtol, atol = _default_tolerances([_NUMBER_DTYPES[type(x)] for x in (actual, expected)], _TOLERANCES)
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", path)
    if actual == expected or (options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_mismatch_message(actual, expected, rtol, atol), path)


def _scalar_mismatch_message(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff,
                             None, rtol)


def _compare_tensors(actual, expected, options, path):
    def mismatch(name, a, e):
        return _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.", path)
    if actual.shape != expected.shape:
        raise mismatch("shape", actual.shape, expected.shape)
    if actual.layout != expected.layout:
        if options["check_layout"]:
            raise mismatch("layout", actual.layout, expected.layout)
    elif actual.layout == lantern.strided and options["check_stride"] and actual.stride() != expected.stride():
        raise mismatch("stride()", actual.stride(), expected.stride())
    if options["check_device"] and actual.device != expected.device:
        raise mismatch("device", actual.device, expected.device)
    if options["check_dtype"] and actual.dtype != expected.dtype:
        raise mismatch("dtype", _dtype_text(actual.dtype), _dtype_text(expected.dtype))
    if actual.device.type == "meta" or expected.device.type == "meta":
        return  # meta tensors have no values
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        rtol, atol = _default_tolerances((actual.dtype, expected.dtype), _TOLERANCES)
    actual, expected = _equalized(actual.detach(), expected.detach())
    matches = lantern.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=options["equal_nan"])
    if bool(matches.all()):
        return
    if actual.shape == ():
        message = _scalar_mismatch_message(actual.item(), expected.item(), rtol, atol)
    else:
        message = _tensor_mismatch_message(actual, expected, matches, rtol, atol)
    raise _Mismatch(AssertionError, message, path)


def _equalized(actual, expected):
    """Both on the CPU, of their promoted dtype, strided: ready for value comparison."""
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype != expected.dtype:
        common = lantern.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    if actual.layout != expected.layout:
        actual = actual.to_dense() if actual.layout != lantern.strided else actual
        expected = expected.to_dense() if expected.layout != lantern.strided else expected
    return actual, expected


def _dtype_text(dtype):
    return f"torch.{dtype.name}"


def _default_tolerances(dtypes, table):
    """The larger of the dtypes' (rtol, atol); exact for dtypes the table does not list."""
    pairs = [table.get(getattr(d, "name", d), (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _tensor_mismatch_message(actual, expected, matches, rtol, atol):
    """How many elements differ, and the greatest absolute and relative differences among them (with where)."""
    total = matches.numel()
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    actual_flat, expected_flat, matches_flat = actual.flatten(), expected.flatten(), matches.flatten()
    if not actual.dtype.is_floating_point and not actual.dtype.is_complex:
        actual_flat, expected_flat = actual_flat.to(lantern.int64), expected_flat.to(lantern.int64)
    abs_diff = lantern.abs(actual_flat - expected_flat)
    abs_diff[matches_flat] = 0
    max_abs_diff, abs_index = lantern.max(abs_diff, 0)
    rel_diff = abs_diff / lantern.abs(expected_flat)
    rel_diff[matches_flat] = 0
    max_rel_diff, rel_index = lantern.max(rel_diff, 0)
    return _mismatch_message("Tensor-likes", extra, max_abs_diff.item(), _unravel(int(abs_index), matches.shape),
                             atol, max_rel_diff.item(), _unravel(int(rel_index), matches.shape), rtol)


def _unravel(flat_index, shape):
    return tuple(int(i) for i in np.unravel_index(flat_index, tuple(shape)))


def _mismatch_message(identifier, extra, abs_diff, abs_index, atol, rel_diff, rel_index, rtol):
    equality = rtol == 0 and atol == 0
    lines = [f"{identifier} are not {'equal' if equality else 'close'}!", "", extra]
    for kind, diff, index, tol in (("absolute", abs_diff, abs_index, atol), ("relative", rel_diff, rel_index, rtol)):
        line = f"{kind.title()} difference: {diff}" if index is None else \
            f"Greatest {kind} difference: {diff} at index {index}"
        lines.append(line if equality else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)
