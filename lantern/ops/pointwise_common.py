"""What the pointwise ops share: result-dtype rules, operands as the kernel loop sees them, dtype checks,
the special-function kernels' plumbing, and the metas of unary and binary ops.

Each pointwise op is a structured op, so `exp`, `exp_` and `exp.out` all exist (where PyTorch has them). A rule
maps the promoted input dtype to the result dtype, as PyTorch's TensorIterator configurations do:
- KEEP: the promoted dtype (neg, add, mul, ...);
- FLOAT: integers and bools compute in the default float dtype (exp, sin, true division, ...);
- BOOL: the result is bool; the comparison itself runs in the promoted dtype (eq, lt, logical_and, ...);
- REAL: complex inputs give their real dtype (abs); INT_FOR_BOOL: bool gives int64 (square, as pow(x, 2)).

Kernels compute in the result dtype with every operand cast to it first, as PyTorch's loops do: a Python int
wraps into small integer types (`uint8_t - 3` is 253) and bfloat16 (which has no mixed-type NumPy loops) works.
float16/bfloat16 special functions compute in float32 (`_computed`).

The ops live by family beside this file: pointwise_unary.py (one table of unary ops, the special functions and
the unary ops with arguments), pointwise_arithmetic.py (add, sub, mul, div, pow), pointwise_binary.py (one table
of the other binary ops: comparisons, bitwise and logical ops, remainder, min/max, ...), pointwise_ternary.py
(clamp, where, lerp, addcmul, addcdiv).

>>> (lantern.tensor([1, 2], dtype=lantern.int32) / 2).dtype
lantern.float32
>>> (lantern.tensor([1, 2], dtype=lantern.uint8) - 3).tolist()
[254, 255]
"""
import importlib

import numpy as np

from ..core import dtype as dt
from ..core.numpy_ufuncs import fast_ufunc
from ..core.promotion import result_type_of, wrapped_scalar_dtype
from ..core.tensor_impl import TensorImpl
from .meta_util import broadcast_shapes, pointwise_binary


def KEEP(dtype):
    return dtype


def FLOAT(dtype):
    return dt.get_default_dtype() if dtype.category < dt.FLOATING else dtype


def BOOL(dtype):
    return dt.bool


def REAL(dtype):
    return dtype.to_real()


def INT_FOR_BOOL(dtype):
    return dt.int64 if dtype is dt.bool else dtype


def _require_tensor(name, x, pos=1, argname="input"):
    if not isinstance(x, TensorImpl):
        raise TypeError(f"{name}(): argument '{argname}' (position {pos}) must be Tensor, not {type(x).__name__}")


# ---- operands as the kernel loop sees them ------------------------------------------------------------------

_BF16, _C32, _INT64 = dt.bfloat16.np, dt.complex32.np, dt.int64.np
# the complex dtypes NumPy's own loops compute (a set: testing membership is cheaper than dtype.kind per call)
_COMPLEX_ARRAY_DTYPES = frozenset((dt.complex64.np, dt.complex128.np))


def as_dtype(xp, x, dtype):
    """x (an array or a Python number) cast to the compute dtype, unless NumPy already computes it exactly so:
    a Python int wraps into a small integer type as PyTorch's cast does; bfloat16 and complex32 (ml_dtypes' types)
    have no mixed-type loops."""
    d = getattr(x, "dtype", None)
    if d is None:
        if dtype is _BF16 or dtype is _C32 or (type(x) is int and dtype.kind in "iu" and dtype is not _INT64):
            return xp.asarray(x).astype(dtype)
        return x
    return x if d == dtype else x.astype(dtype)


def compute_dtype(a, b):
    """The dtype a comparison of arrays/numbers a and b runs in: PyTorch's promotion over the three tiers."""
    da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if da is not None and da == db:
        return da
    tiers = ([], [], [])
    for x in (a, b):
        if hasattr(x, "dtype"):
            tiers[0 if x.ndim else 1].append(dt.from_numpy_dtype(x.dtype))
        else:
            tiers[2].append(wrapped_scalar_dtype(x))
    return result_type_of(*tiers).np


def _ufunc_impl(name, operands=1, complex_kernel=None):
    """A kernel running the ufunc xp.<name> ('exp', 'multiply') of `operands` inputs in the result dtype (the hot
    path: operands already of that dtype pass as they are). `complex_kernel(xp, out, *operands)` replaces the ufunc
    for complex results where NumPy's loop computes otherwise than PyTorch's (complex_arithmetic)."""
    # NumPy's ufunc, found once, called with out by position (core/numpy_ufuncs.py); other array libraries and names
    # that are not such ufuncs look the function up on each call
    numpy_ufunc = fast_ufunc(name, operands)
    if operands == 1:
        def impl(xp, out, dtype, a):
            if getattr(a, "dtype", None) is not dtype:
                a = as_dtype(xp, a, dtype)
            if out.dtype is dtype:
                if complex_kernel is not None and dtype in _COMPLEX_ARRAY_DTYPES:
                    return complex_kernel(xp, out, a)
                if xp is np and numpy_ufunc is not None:
                    numpy_ufunc(a, out)
                else:
                    getattr(xp, name)(a, out=out)
            else:
                getattr(xp, name)(a, out=out, dtype=dtype, casting="unsafe")
    else:
        def impl(xp, out, dtype, a, b):
            if getattr(a, "dtype", None) is not dtype:
                a = as_dtype(xp, a, dtype)
            if getattr(b, "dtype", None) is not dtype:
                b = as_dtype(xp, b, dtype)
            if out.dtype is dtype:
                if complex_kernel is not None and dtype in _COMPLEX_ARRAY_DTYPES:
                    return complex_kernel(xp, out, a, b)
                if xp is np and numpy_ufunc is not None:
                    numpy_ufunc(a, b, out)
                else:
                    getattr(xp, name)(a, b, out=out)
            else:
                getattr(xp, name)(a, b, out=out, dtype=dtype, casting="unsafe")
    impl.__name__ = name
    return impl


def _compare_impl(name):
    """A kernel running the comparison or logical ufunc xp.<name> in the operands' promoted dtype."""
    def impl(xp, out, dtype, a, b):
        da = getattr(a, "dtype", None)
        if da is not None and da is getattr(b, "dtype", None):
            return getattr(xp, name)(a, b, out=out, casting="unsafe")
        ct = compute_dtype(a, b)
        if getattr(a, "dtype", None) is not ct or getattr(b, "dtype", None) is not ct:
            a, b = as_dtype(xp, a, ct), as_dtype(xp, b, ct)
        getattr(xp, name)(a, b, out=out, casting="unsafe")
    impl.__name__ = name
    return impl


def _predicate_impl(name):
    """A kernel writing the bool ufunc xp.<name> (isnan, signbit, ...)."""
    def impl(xp, out, dtype, a):
        getattr(xp, name)(a, out=out, casting="unsafe")
    impl.__name__ = name
    return impl


# ---- dtype checks ------------------------------------------------------------------------------------------

def _not_for(kernel, *categories, msg=None, error=NotImplementedError):
    """A check refusing result dtypes of `categories`, as PyTorch's dtype dispatch does ("abs_cpu" ...)."""
    def check(dtype):
        if dtype.category in categories:
            raise error(msg or f'"{kernel}" not implemented for \'{dtype.legacy}\'')
    return check


def _no_complex(name):
    return _not_for(name, dt.COMPLEX, msg=f"{name} is not supported for complex inputs")


_ints_only = {n: _not_for(f"{k}_cpu", dt.FLOATING, dt.COMPLEX) for n, k in
              (("bitwise_and", "bitwise_and"), ("bitwise_or", "bitwise_or"), ("bitwise_xor", "bitwise_xor"),
               ("bitwise_not", "bitwise_not"))}


# ---- special functions and kernels that compute half precision in float32 ------------------------------------

_SPECIAL_MODULES = {}
_HALF = (np.dtype(np.float16), _BF16)
_FLOAT32 = np.dtype(np.float32)


SPECIAL_FUNCTIONS = {"numpy": "scipy.special", "cupy": "cupyx.scipy.special"}  # by array library


def special(xp):
    """scipy.special for NumPy arrays, cupyx.scipy.special for CuPy ones: the same ufuncs on either backend (an
    array library with special functions of its own, lantern.backends.strict_numpy, names them `special`)."""
    module = _SPECIAL_MODULES.get(xp)
    if module is None:
        module = getattr(xp, "special", None) or importlib.import_module(SPECIAL_FUNCTIONS[xp.__name__])
        _SPECIAL_MODULES[xp] = module
    return module


def _computed(fn, tensors=1):
    """An impl writing fn(xp, *operands) to the output; the first `tensors` operands are cast to the compute dtype
    first: the result dtype, or float32 for float16/bfloat16 (PyTorch's half kernels compute in float). The result
    is rounded to the result dtype even when an out= tensor is wider, as PyTorch's loops store it."""
    def impl(xp, out, dtype, *operands):
        ct = _FLOAT32 if dtype in _HALF else dtype
        cast = [as_dtype(xp, a, ct) for a in operands[:tensors]]
        result = fn(xp, *cast, *operands[tensors:])
        if out.dtype != dtype and ct != dtype:
            result = result.astype(dtype)
        xp.copyto(out, result, casting="unsafe")
    impl.__name__ = fn.__name__
    return impl


def _special_impl(name, tensors=1):
    def fn(xp, *operands):
        return getattr(special(xp), name)(*operands)
    fn.__name__ = name
    return _computed(fn, tensors)


def _not_for_complex(kernel):
    return _not_for(kernel, dt.COMPLEX)


def _kernel_check(check, dtype, result_dtype):
    """Run a kernel's dtype check. Its error carries the op's result dtype: an in-place or out= call first checks
    that against its output, as TensorIterator does (lantern.backends.base.meta_with_cast_check_first)."""
    try:
        check(dtype)
    except NotImplementedError as e:
        e.result_dtype = result_dtype
        raise


def _binary_meta(name, rule, check, number_other):
    keep = rule is KEEP

    def meta(a, b):
        if isinstance(a, TensorImpl) and isinstance(b, TensorImpl) and a.dtype is b.dtype:
            # the hot path: two tensors of one dtype (pointwise_binary written out)
            shape = a._size if a._size == b._size else broadcast_shapes(a._size, b._size)
            dtype = a.dtype
        else:
            if not number_other:
                _require_tensor(name, a)
                _require_tensor(name, b, 2, "other")
            elif not isinstance(a, TensorImpl):
                _number_self_check(name, a, b)
            shape, dtype = pointwise_binary(a, b)
        if check is not None:
            _kernel_check(check, dtype, dtype if keep else rule(dtype))
        return shape, dtype if keep else rule(dtype)
    return meta


# the binary ops PyTorch also takes with a number first (remainder.Scalar_Tensor, ...; mul, whose argument parser
# takes numbers for tensors); of those, floor_divide and mul take two numbers
NUMBER_SELF = {"floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
               "bitwise_right_shift", "xlogy", "mul"}
TWO_NUMBERS = {"floor_divide", "mul"}


def _number_self_check(name, a, b):
    """A number as `self` of a binary op: a TypeError unless PyTorch has that overload (eq(2, t) has none)."""
    if name not in NUMBER_SELF or (not isinstance(b, TensorImpl) and name not in TWO_NUMBERS):
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({type(a).__name__}, "
                        f"{type(b).__name__}), but expected (Tensor input, Tensor other) or (Tensor input, Number "
                        "other)" + (" or (Number self, Tensor other)" if name in NUMBER_SELF else ""))


def _tensor_self(name, meta):
    """A binary meta whose `other` may be a number but whose `self` must be a tensor (copysign)."""
    def checked(a, b):
        _require_tensor(name, a)
        return meta(a, b)
    return checked


def _is_tensor(a):
    return hasattr(a, "dim")
