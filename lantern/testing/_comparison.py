"""lantern.testing: assert_close and assert_allclose (torch.testing), with torch's tolerances and messages.

Tensors are compared attribute by attribute (shape, device, dtype, layout, optionally strides), then value by value
with |actual − expected| ≤ atol + rtol·|expected|; the default rtol/atol depend on the dtype. Python numbers,
sequences and mappings are compared item by item, and a failure names the item.

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
import warnings

import numpy as np

import lantern

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
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        _compare(actual, expected, options, ())
    except _Mismatch as mismatch:
        message = mismatch.message
        if msg is not None:
            message = msg(message) if callable(msg) else msg
        elif mismatch.path:
            message += "\n\nThe failure occurred for item " + "".join(str([key]) for key in mismatch.path)
        raise mismatch.error_class(message) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated form: numbers become tensors, looser default tolerances, dtypes need not match."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, lantern.Tensor):
        actual = lantern.tensor(actual)
    if not isinstance(expected, lantern.Tensor):
        expected = lantern.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances(actual, expected, _ALLCLOSE_TOLERANCES)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


def _compare(actual, expected, options, path):
    if isinstance(actual, (lantern.Tensor, np.ndarray)) and isinstance(expected, (lantern.Tensor, np.ndarray)):
        return _compare_tensors(lantern.as_tensor(actual), lantern.as_tensor(expected), options, path)
    if isinstance(actual, bool) and isinstance(expected, bool):
        if actual is not expected:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", path)
        return
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(actual, expected, options, path)
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        return _compare_mappings(actual, expected, options, path)
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != "
                                            f"{len(expected)}", path)
        for index, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, options, path + (index,))
        return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {_torch_type(actual)} and "
                               f"{_torch_type(expected)}.", path)


def _compare_mappings(actual, expected, options, path):
    missing = sorted(set(expected) - set(actual), key=repr)
    extra = sorted(set(actual) - set(expected), key=repr)
    if missing or extra:
        raise _Mismatch(AssertionError, f"The keys of the mappings do not match:\nMissing keys in the actual "
                                        f"mapping: {missing}\nAdditional keys in the actual mapping: {extra}", path)
    for key in expected:
        _compare(actual[key], expected[key], options, path + (key,))


def _is_number(x):
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


def _is_sequence(x):
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _torch_type(x):
    return "<class 'torch.Tensor'>" if isinstance(x, lantern.Tensor) else str(type(x))


def _compare_numbers(actual, expected, options, path):
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        kind = "complex128" if isinstance(actual, complex) or isinstance(expected, complex) else "float64"
        rtol, atol = (0.0, 0) if isinstance(actual, int) and isinstance(expected, int) else _TOLERANCES[kind]
    if actual == expected or (options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    abs_diff = abs(actual - expected)
    if not (cmath.isnan(abs_diff) or cmath.isinf(actual) or cmath.isinf(expected)) and abs_diff <= atol + rtol * abs(
            expected):
        return
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    raise _Mismatch(AssertionError, _mismatch_message("Scalars", f"Expected {expected} but got {actual}.",
                                                      abs_diff, None, atol, rel_diff, None, rtol), path)


def _compare_tensors(actual, expected, options, path):
    checks = [("shape", actual.shape, expected.shape, True),
              ("device", actual.device, expected.device, options["check_device"]),
              ("dtype", _dtype_text(actual), _dtype_text(expected), options["check_dtype"]),
              ("layout", actual.layout, expected.layout, options["check_layout"]),
              ("stride()", actual.stride(), expected.stride(), options["check_stride"])]
    for name, a, e, wanted in checks:
        if wanted and a != e:
            raise _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.", path)
    rtol, atol = options["rtol"], options["atol"]
    if rtol is None:
        rtol, atol = _default_tolerances(actual, expected, _TOLERANCES)
    if actual.dtype != expected.dtype:
        common = lantern.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    a, e = actual.detach().numpy(), expected.detach().numpy()
    if a.dtype == np.bool_:
        matches = a == e
    else:
        matches = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=options["equal_nan"])
    if matches.all():
        return
    raise _Mismatch(AssertionError, _tensor_mismatch_message(a, e, matches, rtol, atol), path)


def _dtype_text(t):
    return f"torch.{str(t.dtype).split('.')[-1]}"


def _default_tolerances(actual, expected, table):
    """The larger of the two dtypes' (rtol, atol); exact for dtypes the table does not list."""
    pairs = [table.get(str(t.dtype).split(".")[-1], (0.0, 0.0)) for t in (actual, expected)]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _tensor_mismatch_message(a, e, matches, rtol, atol):
    total, mismatched = matches.size, int(matches.size - matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a_flat, e_flat, matches_flat = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    integral = a_flat.dtype.kind not in "fc"
    if integral:  # integers and bools: differences in int64, as torch upcasts them
        a_flat, e_flat = a_flat.astype(np.int64), e_flat.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a_flat - e_flat)
        abs_diff[matches_flat] = 0
        if integral:  # torch's true division of integers computes in the default float dtype
            default = lantern.empty(0).numpy().dtype
            rel_diff = abs_diff.astype(default) / np.abs(e_flat).astype(default)
        else:
            rel_diff = abs_diff / np.abs(e_flat)
        rel_diff[matches_flat] = 0
    abs_index, rel_index = _max_index(abs_diff), _max_index(rel_diff)
    return _mismatch_message("Tensor-likes", extra, abs_diff[abs_index].item(),
                             tuple(int(i) for i in np.unravel_index(abs_index, matches.shape)), atol,
                             rel_diff[rel_index].item(), tuple(int(i) for i in np.unravel_index(rel_index,
                                                                                              matches.shape)), rtol)


def _max_index(values):
    """The flat index of the greatest value, NaN counting as greatest (torch.max propagates NaN)."""
    nans = np.flatnonzero(np.isnan(values)) if values.dtype.kind == "f" else ()
    return int(nans[0]) if len(nans) else int(np.argmax(values))


def _mismatch_message(identifier, extra, abs_diff, abs_index, atol, rel_diff, rel_index, rtol):
    equality = rtol == 0 and atol == 0
    lines = [f"{identifier} are not {'equal' if equality else 'close'}!", "", extra]
    for kind, diff, index, tol in (("absolute", abs_diff, abs_index, atol), ("relative", rel_diff, rel_index, rtol)):
        line = f"{kind.title()} difference: {diff}" if index is None else \
            f"Greatest {kind} difference: {diff} at index {index}"
        lines.append(line if equality else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)
