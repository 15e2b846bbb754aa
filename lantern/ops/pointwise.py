"""Pointwise ops: one row per op (name, NumPy ufunc, how the result dtype is chosen).

Each row makes a structured op, so `exp`, `exp_` and `exp.out` all exist. Result dtypes follow PyTorch:
- KEEP: the promoted input dtype (abs, neg, add, mul, ...);
- FLOAT: integers and bools compute in the default float dtype (exp, sin, true division, ...);
- BOOL: the result is bool, the comparison runs in the promoted dtype (eq, lt, logical_and, ...).

>>> (lantern.tensor([1, 2], dtype=lantern.int32) / 2).dtype
lantern.float32
"""
import numpy as np

from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .meta_util import operands_result_type, pointwise_binary, pointwise_shape
from .registry import structured

KEEP, FLOAT, BOOL = "keep", "float", "bool"


def _require_tensor(name, x, pos=1, argname="input"):
    if not isinstance(x, TensorImpl):
        raise TypeError(f"{name}(): argument '{argname}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _result_dtype(name, dtype, rule):
    if rule == FLOAT and dtype.category < dt.FLOATING:
        return dt.get_default_dtype()
    return dtype


def _unary_meta(name, rule, check=None):
    def meta(a):
        _require_tensor(name, a)
        if check is not None:
            check(a.dtype)
        if rule == BOOL:
            return a._size, dt.bool
        return a._size, _result_dtype(name, a.dtype, rule)
    return meta


def _binary_meta(name, rule, check=None):
    def meta(a, b, *rest):
        shape, dtype = pointwise_binary(a, b)
        if check is not None:
            check(dtype)
        if rule == BOOL:
            return shape, dt.bool
        return shape, _result_dtype(name, dtype, rule)
    return meta


def _ufunc_impl(ufunc, pass_dtype=True):
    if pass_dtype:
        def impl(xp, out, dtype, *args):
            ufunc(*args, out=out, dtype=dtype)
    else:
        def impl(xp, out, dtype, *args):
            ufunc(*args, out=out)
    impl.__name__ = ufunc.__name__
    return impl


def _not_for(name, *categories, msg=None):
    def check(dtype):
        if dtype.category in categories:
            raise RuntimeError(msg or f'"{name}_cpu" not implemented for \'{dtype.legacy}\'')
    return check


_no_bool_neg = _not_for("neg", dt.BOOL, msg=(
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the "
    "`~` or `logical_not()` operator instead."))
_no_bool_sub = _not_for("sub", dt.BOOL, msg=(
    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
    "operator instead."))
_ints_only = {n: _not_for(n, dt.FLOATING, dt.COMPLEX) for n in
              ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
               "bitwise_right_shift")}
_real_only = {n: _not_for(n, dt.COMPLEX) for n in
              ("floor", "ceil", "trunc", "frac", "sign", "remainder", "fmod", "floor_divide", "maximum", "minimum",
               "atan2", "lt", "le", "gt", "ge")}


def _sigmoid(xp, out, dtype, a):
    xp.negative(a, out=out, dtype=dtype)
    xp.exp(out, out=out)
    out += 1
    xp.reciprocal(out, out=out)


def _rsqrt(xp, out, dtype, a):
    xp.sqrt(a, out=out, dtype=dtype)
    xp.reciprocal(out, out=out)


def _frac(xp, out, dtype, a):
    t = xp.trunc(a)
    xp.subtract(a, t, out=out, dtype=dtype)


def _sgn(xp, out, dtype, a):
    if np.iscomplexobj(a):
        mag = xp.abs(a)
        xp.divide(a, xp.where(mag == 0, 1, mag), out=out)
    else:
        xp.sign(a, out=out, dtype=dtype)


# name, ufunc or impl, dtype rule, dtype check
UNARY = [
    ("abs", np.absolute, KEEP, None),
    ("neg", np.negative, KEEP, _no_bool_neg),
    ("sign", np.sign, KEEP, _real_only["sign"]),
    ("sgn", _sgn, KEEP, None),
    ("reciprocal", np.reciprocal, FLOAT, None),
    ("square", np.square, KEEP, None),
    ("sqrt", np.sqrt, FLOAT, None),
    ("rsqrt", _rsqrt, FLOAT, None),
    ("exp", np.exp, FLOAT, None),
    ("exp2", np.exp2, FLOAT, None),
    ("expm1", np.expm1, FLOAT, None),
    ("log", np.log, FLOAT, None),
    ("log2", np.log2, FLOAT, None),
    ("log10", np.log10, FLOAT, None),
    ("log1p", np.log1p, FLOAT, None),
    ("sin", np.sin, FLOAT, None),
    ("cos", np.cos, FLOAT, None),
    ("tan", np.tan, FLOAT, None),
    ("asin", np.arcsin, FLOAT, None),
    ("acos", np.arccos, FLOAT, None),
    ("atan", np.arctan, FLOAT, None),
    ("sinh", np.sinh, FLOAT, None),
    ("cosh", np.cosh, FLOAT, None),
    ("tanh", np.tanh, FLOAT, None),
    ("asinh", np.arcsinh, FLOAT, None),
    ("acosh", np.arccosh, FLOAT, None),
    ("atanh", np.arctanh, FLOAT, None),
    ("sigmoid", _sigmoid, FLOAT, None),
    ("floor", np.floor, KEEP, _real_only["floor"]),
    ("ceil", np.ceil, KEEP, _real_only["ceil"]),
    ("trunc", np.trunc, KEEP, _real_only["trunc"]),
    ("frac", _frac, KEEP, _real_only["frac"]),
    ("bitwise_not", np.invert, KEEP, _ints_only["bitwise_not"]),
    ("logical_not", np.logical_not, BOOL, None),
    ("isnan", np.isnan, BOOL, None),
    ("isinf", np.isinf, BOOL, None),
    ("isfinite", np.isfinite, BOOL, None),
    ("signbit", np.signbit, BOOL, None),
]

# Integer inputs pass through these unchanged (PyTorch keeps the dtype and the values).
_IDENTITY_ON_INTS = {"floor", "ceil", "trunc"}


def _unary_impl(name, fn, rule):
    if not isinstance(fn, np.ufunc):
        return fn
    if rule == BOOL:
        return _ufunc_impl(fn, pass_dtype=False)
    if name in _IDENTITY_ON_INTS:
        def impl(xp, out, dtype, a):
            if dtype.kind in "iub":
                out[...] = a
            else:
                fn(a, out=out, dtype=dtype)
        return impl
    return _ufunc_impl(fn)


for _name, _fn, _rule, _check in UNARY:
    structured(f"{_name}(Tensor self) -> Tensor", _unary_meta(_name, _rule, _check), _unary_impl(_name, _fn, _rule))


# ---- binary ----------------------------------------------------------------------------------------------------

def _alpha_check(name, dtype, alpha):
    if alpha != 1:
        if dtype.category < dt.FLOATING and isinstance(alpha, float):
            raise RuntimeError(f"For integral input tensors, argument alpha must not be a floating point number. "
                               f"(in {name})")
        if dtype is dt.bool and not isinstance(alpha, bool):
            raise RuntimeError(f"Boolean alpha only supported for Boolean results. (in {name})")


def _add_sub(name, ufunc, check=None):
    def meta(a, b, alpha=1):
        shape, dtype = pointwise_binary(a, b)
        if check is not None and isinstance(a, TensorImpl) and isinstance(b, TensorImpl):
            check(dtype)
        _alpha_check(name, dtype, alpha)
        return shape, dtype

    def impl(xp, out, dtype, a, b, alpha=1):
        if alpha != 1:
            b = xp.multiply(b, alpha, dtype=dtype)
        ufunc(a, b, out=out, dtype=dtype)
    return meta, impl


structured("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", *_add_sub("add", np.add))
structured("sub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", *_add_sub("sub", np.subtract, _no_bool_sub))


def _rsub_meta(a, b, alpha=1):
    return _add_sub("rsub", None, _no_bool_sub)[0](b, a, alpha)


def _rsub_impl(xp, out, dtype, a, b, alpha=1):
    if alpha != 1:
        a = xp.multiply(a, alpha, dtype=dtype)
    xp.subtract(b, a, out=out, dtype=dtype)


structured("rsub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", _rsub_meta, _rsub_impl,
           inplace=False, out=False)


def _div_meta(a, b, rounding_mode=None):
    shape, dtype = pointwise_binary(a, b)
    if rounding_mode is None:
        return shape, _result_dtype("div", dtype, FLOAT)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    return shape, dtype


def _int_zero_check(xp, b):
    if xp.any(xp.asarray(b) == 0):
        raise ZeroDivisionError("ZeroDivisionError (integer division by zero in lantern div/floor_divide/remainder)")


def _div_impl(xp, out, dtype, a, b, rounding_mode=None):
    if rounding_mode is None:
        xp.true_divide(a, b, out=out, dtype=dtype)
    elif dtype.kind in "iub":
        _int_zero_check(xp, b)
        if rounding_mode == "floor":
            xp.floor_divide(a, b, out=out, dtype=dtype)
        else:  # C-style truncation: the quotient of the magnitudes, with the sign of the product
            q = xp.floor_divide(xp.abs(a), xp.abs(b), dtype=dtype)
            neg = (xp.asarray(a) < 0) ^ (xp.asarray(b) < 0)
            xp.copyto(out, xp.where(neg, -q, q), casting="unsafe")
    elif rounding_mode == "floor":
        xp.floor_divide(a, b, out=out, dtype=dtype)
    else:
        xp.true_divide(a, b, out=out, dtype=dtype)
        xp.trunc(out, out=out)


structured("div(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor", _div_meta, _div_impl)


def _int_safe(ufunc):
    def impl(xp, out, dtype, a, b):
        if dtype.kind in "iu":
            _int_zero_check(xp, b)
        ufunc(a, b, out=out, dtype=dtype)
    return impl


# name, ufunc or impl, dtype rule, dtype check
BINARY = [
    ("mul", np.multiply, KEEP, None),
    ("floor_divide", _int_safe(np.floor_divide), KEEP, _real_only["floor_divide"]),
    ("remainder", _int_safe(np.remainder), KEEP, _real_only["remainder"]),
    ("fmod", _int_safe(np.fmod), KEEP, _real_only["fmod"]),
    ("atan2", np.arctan2, FLOAT, _real_only["atan2"]),
    ("maximum", np.maximum, KEEP, _real_only["maximum"]),
    ("minimum", np.minimum, KEEP, _real_only["minimum"]),
    ("bitwise_and", np.bitwise_and, KEEP, _ints_only["bitwise_and"]),
    ("bitwise_or", np.bitwise_or, KEEP, _ints_only["bitwise_or"]),
    ("bitwise_xor", np.bitwise_xor, KEEP, _ints_only["bitwise_xor"]),
    ("bitwise_left_shift", np.left_shift, KEEP, _ints_only["bitwise_left_shift"]),
    ("bitwise_right_shift", np.right_shift, KEEP, _ints_only["bitwise_right_shift"]),
    ("eq", np.equal, BOOL, None),
    ("ne", np.not_equal, BOOL, None),
    ("lt", np.less, BOOL, _real_only["lt"]),
    ("le", np.less_equal, BOOL, _real_only["le"]),
    ("gt", np.greater, BOOL, _real_only["gt"]),
    ("ge", np.greater_equal, BOOL, _real_only["ge"]),
    ("logical_and", np.logical_and, BOOL, None),
    ("logical_or", np.logical_or, BOOL, None),
    ("logical_xor", np.logical_xor, BOOL, None),
]


def _compare_impl(ufunc):
    def impl(xp, out, dtype, a, b):
        ufunc(a, b, out=out)
    impl.__name__ = ufunc.__name__
    return impl


for _name, _fn, _rule, _check in BINARY:
    _impl = _fn if not isinstance(_fn, np.ufunc) else (_compare_impl(_fn) if _rule == BOOL else _ufunc_impl(_fn))
    structured(f"{_name}(Tensor self, Tensor other) -> Tensor", _binary_meta(_name, _rule, _check), _impl)


# ---- pow: small integer exponents take fast paths (x ** 3 as x*x*x is ~16x faster in NumPy) ----------------

def _pow_meta(a, b):
    shape, dtype = pointwise_binary(a, b)
    if dtype.category == dt.INTEGRAL and not isinstance(b, TensorImpl) and isinstance(b, int) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return shape, dtype


def _pow_impl(xp, out, dtype, a, b):
    if not hasattr(b, "shape") and not isinstance(b, complex) and hasattr(a, "shape"):
        if b == 2:
            return xp.multiply(a, a, out=out, dtype=dtype)
        if b == 1:
            return xp.copyto(out, a, casting="unsafe")
        if b == 3:
            xp.multiply(a, a, out=out, dtype=dtype)
            return xp.multiply(out, a, out=out, dtype=dtype)
        if b == 0.5 and dtype.kind in "fc":
            return xp.sqrt(a, out=out, dtype=dtype)
        if b == -1 and dtype.kind in "fc":
            return xp.reciprocal(a, out=out, dtype=dtype)
    if dtype.kind in "iu" and hasattr(b, "shape") and xp.any(xp.asarray(b) < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    xp.power(a, b, out=out, dtype=dtype)


structured("pow(Tensor self, Tensor exponent) -> Tensor", _pow_meta, _pow_impl)


# ---- clamp and where ---------------------------------------------------------------------------------------

def _clamp_meta(a, min=None, max=None):
    _require_tensor("clamp", a)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    ops = (a, min, max)
    dtype = operands_result_type(ops)
    if dtype is dt.bool:
        raise RuntimeError("\"clamp_cpu\" not implemented for 'Bool'")
    if dtype.category == dt.COMPLEX:
        raise RuntimeError("clamp is not supported for complex types")
    return pointwise_shape(ops), dtype


def _clamp_impl(xp, out, dtype, a, min=None, max=None):
    if min is None:
        xp.minimum(a, max, out=out, dtype=dtype)
    elif max is None:
        xp.maximum(a, min, out=out, dtype=dtype)
    else:
        xp.maximum(a, min, out=out, dtype=dtype)
        xp.minimum(out, max, out=out, dtype=dtype)


structured("clamp(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", _clamp_meta, _clamp_impl)


def _where_meta(condition, a, b):
    if not isinstance(condition, TensorImpl) or condition.dtype is not dt.bool:
        got = condition.dtype.legacy if isinstance(condition, TensorImpl) else type(condition).__name__
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {got}")
    ops = (condition, a, b)
    return pointwise_shape(ops), operands_result_type((a, b))


def _where_impl(xp, out, dtype, condition, a, b):
    xp.copyto(out, b, casting="unsafe")
    xp.copyto(out, a, casting="unsafe", where=condition)


structured("where(Tensor condition, Tensor self, Tensor other) -> Tensor", _where_meta, _where_impl,
           inplace=False)
