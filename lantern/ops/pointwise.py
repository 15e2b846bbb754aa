"""Pointwise ops: one row per op (name, NumPy ufunc or kernel, result-dtype rule, dtype check).

Each row makes a structured op, so `exp`, `exp_` and `exp.out` all exist (where PyTorch has them). A rule maps the
promoted input dtype to the result dtype, as PyTorch's TensorIterator configurations do:
- KEEP: the promoted dtype (neg, add, mul, ...);
- FLOAT: integers and bools compute in the default float dtype (exp, sin, true division, ...);
- BOOL: the result is bool; the comparison itself runs in the promoted dtype (eq, lt, logical_and, ...);
- REAL: complex inputs give their real dtype (abs); INT_FOR_BOOL: bool gives int64 (square, as pow(x, 2)).

Kernels compute in the result dtype with every operand cast to it first, as PyTorch's loops do: a Python int
wraps into small integer types (`uint8_t - 3` is 253) and bfloat16 (which has no mixed-type NumPy loops) works.

>>> (lantern.tensor([1, 2], dtype=lantern.int32) / 2).dtype
lantern.float32
>>> (lantern.tensor([1, 2], dtype=lantern.uint8) - 3).tolist()
[254, 255]

Beside the tables sit the special functions (scipy.special's kernels: erf, lgamma, digamma, polygamma, ...), the
unary ops with arguments (logit, round(decimals), nan_to_num, clamp_min/clamp_max), the ternary lerp, addcmul and
addcdiv, and the composites float_power, allclose, equal and positive. float16/bfloat16 compute in float32 there.

>>> x = lantern.tensor([0.25, 2.5], dtype=lantern.float64)
>>> lantern.round(x, decimals=1).tolist(), lantern.lerp(x, lantern.ones(2, dtype=x.dtype), 0.5).tolist()
([0.2, 2.5], [0.625, 1.75])
"""
import importlib
import math
import warnings

import numpy as np

from ..core import dtype as dt
from ..core.promotion import result_type_of, wrapped_scalar_dtype
from ..core.contiguity import has_cached_contiguous_strides
from ..core.tensor_impl import TensorImpl, make_tensor
from .meta_util import broadcast_shapes, operands_result_type, pointwise_binary, pointwise_shape
from .derivative import Derivative, derivative, nondifferentiable, zero_gradient_inplace
from .derivative_helpers import conj
from .dispatcher import call
from .nn_common import eager_backend
from .registry import composite, custom, get, structured


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

_BF16, _INT64 = dt.bfloat16.np, dt.int64.np


def as_dtype(xp, x, dtype):
    """x (an array or a Python number) cast to the compute dtype, unless NumPy already computes it exactly so:
    a Python int wraps into a small integer type as PyTorch's cast does; bfloat16 has no mixed-type loops."""
    d = getattr(x, "dtype", None)
    if d is None:
        if dtype is _BF16 or (type(x) is int and dtype.kind in "iu" and dtype is not _INT64):
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


def _ufunc_impl(ufunc):
    """A kernel running `ufunc` in the result dtype (the hot path: operands already of that dtype pass as they are)."""
    if ufunc.nin == 1:
        def impl(xp, out, dtype, a):
            if getattr(a, "dtype", None) is not dtype:
                a = as_dtype(xp, a, dtype)
            if out.dtype is dtype:
                ufunc(a, out=out)
            else:
                ufunc(a, out=out, dtype=dtype, casting="unsafe")
    else:
        def impl(xp, out, dtype, a, b):
            if getattr(a, "dtype", None) is not dtype:
                a = as_dtype(xp, a, dtype)
            if getattr(b, "dtype", None) is not dtype:
                b = as_dtype(xp, b, dtype)
            if out.dtype is dtype:
                ufunc(a, b, out=out)
            else:
                ufunc(a, b, out=out, dtype=dtype, casting="unsafe")
    impl.__name__ = ufunc.__name__
    return impl


def _compare_impl(ufunc):
    def impl(xp, out, dtype, a, b):
        da = getattr(a, "dtype", None)
        if da is not None and da is getattr(b, "dtype", None):
            return ufunc(a, b, out=out, casting="unsafe")
        ct = compute_dtype(a, b)
        if getattr(a, "dtype", None) is not ct or getattr(b, "dtype", None) is not ct:
            a, b = as_dtype(xp, a, ct), as_dtype(xp, b, ct)
        ufunc(a, b, out=out, casting="unsafe")
    impl.__name__ = ufunc.__name__
    return impl


def _predicate_impl(ufunc):
    def impl(xp, out, dtype, a):
        ufunc(a, out=out, casting="unsafe")
    impl.__name__ = ufunc.__name__
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


def _rounding(name):
    """floor/ceil/trunc: identity on integers, refused for bool and complex."""
    no_complex = _no_complex(name)

    def check(dtype):
        no_complex(dtype)
        if dtype is dt.bool:
            raise NotImplementedError(f'"{name}_vml_cpu" not implemented for \'Bool\'')
    return check


_no_bool_neg = _not_for("neg", dt.BOOL, error=RuntimeError, msg=(
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the "
    "`~` or `logical_not()` operator instead."))
_ints_only = {n: _not_for(f"{k}_cpu", dt.FLOATING, dt.COMPLEX) for n, k in
              (("bitwise_and", "bitwise_and"), ("bitwise_or", "bitwise_or"), ("bitwise_xor", "bitwise_xor"),
               ("bitwise_not", "bitwise_not"))}
_shift = {n: _not_for(f"{k}_cpu", dt.BOOL, dt.FLOATING, dt.COMPLEX) for n, k in
          (("bitwise_left_shift", "lshift"), ("bitwise_right_shift", "rshift"))}
_no_bool_or_complex = {n: _not_for(f"{k}_cpu", dt.BOOL, dt.COMPLEX) for n, k in
                       (("floor_divide", "div_floor"), ("remainder", "remainder"), ("fmod", "fmod"))}
_real_only = {n: _not_for(f"{n}_cpu", dt.COMPLEX) for n in ("atan2", "lt", "le", "gt", "ge")}


def _minmax_check(name):
    return _not_for(name, dt.COMPLEX, error=RuntimeError, msg=f"{name} not implemented for complex tensors.")


def _sign_check(dtype):
    if dtype.category == dt.COMPLEX:
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                  "torch.sgn instead.")


def _frac_check(dtype):
    if dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"frac_cpu" not implemented for \'{dtype.legacy}\'')


def _signbit_check(dtype):
    if dtype.category == dt.COMPLEX:
        raise NotImplementedError("signbit is not implemented for complex tensors.")


# ---- unary -------------------------------------------------------------------------------------------------

def _sigmoid(xp, out, dtype, a):
    xp.negative(a, out=out, dtype=dtype, casting="unsafe")
    xp.exp(out, out=out)
    out += 1
    xp.reciprocal(out, out=out)


def _rsqrt(xp, out, dtype, a):
    xp.sqrt(a, out=out, dtype=dtype, casting="unsafe")
    xp.reciprocal(out, out=out)


def _frac(xp, out, dtype, a):
    xp.subtract(a, xp.trunc(a), out=out, casting="unsafe")


def _abs(xp, out, dtype, a):
    xp.absolute(a, out=out, casting="unsafe")  # complex in, real out: no cast of the input


def _sign(xp, out, dtype, a):
    if dtype == np.bool_:
        xp.copyto(out, a, casting="unsafe")
    else:
        xp.sign(a, out=out, casting="unsafe")


def _sgn(xp, out, dtype, a):
    if np.iscomplexobj(a):
        mag = xp.abs(a)
        xp.divide(a, xp.where(mag == 0, 1, mag), out=out, casting="unsafe")
    else:
        _sign(xp, out, dtype, a)


def _on_floats(ufunc):
    """floor/ceil/trunc: integers pass through unchanged (PyTorch keeps their dtype and values)."""
    def impl(xp, out, dtype, a):
        if dtype.kind in "iu":
            xp.copyto(out, a, casting="unsafe")
        else:
            ufunc(a, out=out, casting="unsafe")
    impl.__name__ = ufunc.__name__
    return impl


# ---- special functions and kernels that compute half precision in float32 ------------------------------------

_SPECIAL_MODULES = {}
_HALF = (np.dtype(np.float16), _BF16)
_FLOAT32 = np.dtype(np.float32)


def special(xp):
    """scipy.special for NumPy arrays, cupyx.scipy.special for CuPy ones: the same ufuncs on either backend."""
    module = _SPECIAL_MODULES.get(xp)
    if module is None:
        name = "scipy.special" if xp is np else "cupyx.scipy.special"
        module = _SPECIAL_MODULES[xp] = importlib.import_module(name)
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


def _sinc(xp, a):
    """sin(pi x) / (pi x), and 1 at x == 0."""
    zero = a == 0
    y = xp.where(zero, 1, a) * math.pi
    return xp.where(zero, 1, xp.sin(y) / y)


def _lgamma(xp, a):
    """log|gamma(x)|; at -inf PyTorch gives +inf where scipy gives -inf."""
    r = special(xp).gammaln(a)
    return xp.where(r == -math.inf, math.inf, r)


def _deg2rad(xp, a):
    return a * (math.pi / 180)


def _rad2deg(xp, a):
    return a * (180 / math.pi)


def _not_for_complex(kernel):
    return _not_for(kernel, dt.COMPLEX)


def _angle_check(name):
    return _not_for(name, dt.COMPLEX, error=RuntimeError, msg=f"{name} is not supported for complex tensors.")


# name, ufunc or impl, dtype rule, dtype check, (has in-place form, has out= form)
UNARY = [
    ("abs", _abs, REAL, _not_for("abs_cpu", dt.BOOL), (True, True)),
    ("neg", np.negative, KEEP, _no_bool_neg, (True, True)),
    ("sign", _sign, KEEP, _sign_check, (True, True)),
    ("sgn", _sgn, KEEP, None, (True, True)),
    ("reciprocal", np.reciprocal, FLOAT, None, (True, True)),
    ("square", np.square, INT_FOR_BOOL, None, (True, True)),
    ("sqrt", np.sqrt, FLOAT, None, (True, True)),
    ("rsqrt", _rsqrt, FLOAT, None, (True, True)),
    ("exp", np.exp, FLOAT, None, (True, True)),
    ("exp2", np.exp2, FLOAT, None, (True, True)),
    ("expm1", np.expm1, FLOAT, None, (True, True)),
    ("log", np.log, FLOAT, None, (True, True)),
    ("log2", np.log2, FLOAT, None, (True, True)),
    ("log10", np.log10, FLOAT, None, (True, True)),
    ("log1p", np.log1p, FLOAT, None, (True, True)),
    ("sin", np.sin, FLOAT, None, (True, True)),
    ("cos", np.cos, FLOAT, None, (True, True)),
    ("tan", np.tan, FLOAT, None, (True, True)),
    ("asin", np.arcsin, FLOAT, None, (True, True)),
    ("acos", np.arccos, FLOAT, None, (True, True)),
    ("atan", np.arctan, FLOAT, None, (True, True)),
    ("sinh", np.sinh, FLOAT, None, (True, True)),
    ("cosh", np.cosh, FLOAT, None, (True, True)),
    ("tanh", np.tanh, FLOAT, None, (True, True)),
    ("asinh", np.arcsinh, FLOAT, None, (True, True)),
    ("acosh", np.arccosh, FLOAT, None, (True, True)),
    ("atanh", np.arctanh, FLOAT, None, (True, True)),
    ("sigmoid", _sigmoid, FLOAT, None, (True, True)),
    ("floor", _on_floats(np.floor), KEEP, _rounding("floor"), (True, True)),
    ("ceil", _on_floats(np.ceil), KEEP, _rounding("ceil"), (True, True)),
    ("trunc", _on_floats(np.trunc), KEEP, _rounding("trunc"), (True, True)),
    ("frac", _frac, KEEP, _frac_check, (True, True)),
    ("bitwise_not", np.invert, KEEP, _ints_only["bitwise_not"], (True, True)),
    ("logical_not", _predicate_impl(np.logical_not), BOOL, None, (True, True)),
    ("isnan", _predicate_impl(np.isnan), BOOL, None, (False, False)),
    ("isinf", _predicate_impl(np.isinf), BOOL, None, (False, False)),
    ("isfinite", _predicate_impl(np.isfinite), BOOL, None, (False, False)),
    ("signbit", _predicate_impl(np.signbit), BOOL, _signbit_check, (False, True)),
    ("erf", _special_impl("erf"), FLOAT, _not_for_complex("erf_vml_cpu"), (True, True)),
    ("erfc", _special_impl("erfc"), FLOAT, _not_for_complex("erfc_vml_cpu"), (True, True)),
    ("erfinv", _special_impl("erfinv"), FLOAT, _not_for_complex("erfinv_vml_cpu"), (True, True)),
    ("lgamma", _computed(_lgamma), FLOAT, _not_for_complex("lgamma_vml_cpu"), (True, True)),
    ("digamma", _special_impl("psi"), FLOAT, _not_for_complex("digamma"), (True, True)),
    ("i0", _special_impl("i0"), FLOAT, _not_for_complex("i0_vml_cpu"), (True, True)),
    ("sinc", _computed(_sinc), FLOAT, None, (True, True)),
]
# Multiplies by a constant; PyTorch writes them into empty_like(self), so for an EMPTY input torch keeps the input's
# (meaningless) strides where lantern gives row-major ones: kept apart from UNARY, whose tests compare those.
ANGLES = [
    ("deg2rad", _computed(_deg2rad), FLOAT, _angle_check("deg2rad"), (True, True)),
    ("rad2deg", _computed(_rad2deg), FLOAT, _angle_check("rad2deg"), (True, True)),
]


def _kernel_check(check, dtype, result_dtype):
    """Run a kernel's dtype check. Its error carries the op's result dtype: an in-place or out= call first checks
    that against its output, as TensorIterator does (lantern.backends.base.meta_with_cast_check_first)."""
    try:
        check(dtype)
    except NotImplementedError as e:
        e.result_dtype = result_dtype
        raise


def _unary_meta(name, rule, check=None):
    def meta(a):
        _require_tensor(name, a)
        if check is not None:
            _kernel_check(check, a.dtype, rule(a.dtype))
        return a._size, rule(a.dtype)
    return meta


# Ops PyTorch builds with check_all_same_dtype: their out= / in-place result must have exactly the result dtype
# (the float ops, exp and friends, may cast into any allowed out dtype instead).
_EXACT_OUT = {"abs", "neg", "sign", "sgn", "floor", "ceil", "trunc", "frac", "bitwise_not", "signbit"}

for _name, _fn, _rule, _check, (_inplace, _out) in UNARY + ANGLES:
    structured(f"{_name}(Tensor self) -> Tensor", _unary_meta(_name, _rule, _check),
               _fn if not isinstance(_fn, np.ufunc) else _ufunc_impl(_fn), inplace=_inplace, out=_out, pointwise=True,
               exact_out_dtype=_name in _EXACT_OUT)


# ---- add / sub (with alpha) --------------------------------------------------------------------------------

def _alpha_check(name, dtype, alpha):
    if type(alpha) is bool:
        if dtype is not dt.bool:
            raise RuntimeError(f"Boolean alpha only supported for Boolean results. ({name}: pass alpha as a number)")
    elif alpha != 1 and dtype.category < dt.FLOATING and isinstance(alpha, float):
        raise RuntimeError(f"For integral input tensors, argument alpha must not be a floating point number. "
                           f"({name} of {dtype} tensors)")


def _sub_check(a, b):
    """PyTorch refuses `-` whenever an operand is bool (a Python bool counts as one)."""
    a_bool = a.dtype is dt.bool if isinstance(a, TensorImpl) else type(a) is bool
    b_bool = b.dtype is dt.bool if isinstance(b, TensorImpl) else type(b) is bool
    if a_bool and b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if a_bool or b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")


def _add_meta(a, b, alpha=1):
    if isinstance(a, TensorImpl) and isinstance(b, TensorImpl) and a.dtype is b.dtype:
        shape = a._size if a._size == b._size else broadcast_shapes(a._size, b._size)
        dtype = a.dtype
    else:
        shape, dtype = pointwise_binary(a, b)
    if alpha.__class__ is not int or alpha != 1:
        _alpha_check("add", dtype, alpha)
    return shape, dtype


def _sub_meta(a, b, alpha=1):
    _sub_check(a, b)
    shape, dtype = pointwise_binary(a, b)
    _alpha_check("sub", dtype, alpha)
    return shape, dtype


def _add_sub_impl(ufunc):
    def impl(xp, out, dtype, a, b, alpha=1):
        if alpha.__class__ is int and alpha == 1 and getattr(a, "dtype", None) is dtype and \
                getattr(b, "dtype", None) is dtype:  # the common case: no casts, no scaling
            ufunc(a, b, out=out)
            return
        if getattr(a, "dtype", None) is not dtype:
            a = as_dtype(xp, a, dtype)
        if getattr(b, "dtype", None) is not dtype:
            b = as_dtype(xp, b, dtype)
        if alpha != 1:
            b = xp.multiply(b, as_dtype(xp, alpha, dtype), dtype=dtype, casting="unsafe")
        ufunc(a, b, out=out, dtype=dtype, casting="unsafe")
    return impl


_sub_impl = _add_sub_impl(np.subtract)
structured("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", _add_meta, _add_sub_impl(np.add),
           pointwise=True)
structured("sub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", _sub_meta, _sub_impl, pointwise=True)


def _rsub_meta(a, b, alpha=1):
    return _sub_meta(b, a, alpha)


def _rsub_impl(xp, out, dtype, a, b, alpha=1):
    _sub_impl(xp, out, dtype, b, a, alpha)


structured("rsub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", _rsub_meta, _rsub_impl,
           inplace=False, out=False, pointwise=True, method=False)


# ---- division ----------------------------------------------------------------------------------------------

_rounding_div_checks = {mode: _not_for(f"div_{mode}_cpu", dt.BOOL, dt.COMPLEX) for mode in ("trunc", "floor")}


def _div_meta(a, b, rounding_mode=None):
    shape, dtype = pointwise_binary(a, b)
    if rounding_mode is None:
        return shape, FLOAT(dtype)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    _rounding_div_checks[rounding_mode](dtype)
    return shape, dtype


def _int_zero_check(xp, b, out):
    """A zero divisor is an error only where it meets a dividend: an empty output divides nothing."""
    if out.size and xp.any(xp.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError (integer division by zero: the divisor has a 0)")


def _div_impl(xp, out, dtype, a, b, rounding_mode=None):
    a, b = as_dtype(xp, a, dtype), as_dtype(xp, b, dtype)
    if rounding_mode is None:
        xp.true_divide(a, b, out=out, casting="unsafe")
    elif dtype.kind in "iu":
        _int_zero_check(xp, b, out)
        if rounding_mode == "floor":
            xp.floor_divide(a, b, out=out, casting="unsafe")
        else:  # C-style truncation: the quotient of the magnitudes, with the sign of the product
            q = xp.floor_divide(xp.abs(a), xp.abs(b))
            xp.copyto(out, xp.where((a < 0) ^ (b < 0), -q, q), casting="unsafe")
    elif rounding_mode == "floor":
        xp.floor_divide(a, b, out=out, casting="unsafe")
    else:
        xp.copyto(out, xp.trunc(xp.true_divide(a, b)), casting="unsafe")


structured("div(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor", _div_meta, _div_impl,
           pointwise=True)


def _int_safe(ufunc):
    """Integer floor_divide/remainder/fmod raise on a zero divisor, as PyTorch does (NumPy would return 0)."""
    def impl(xp, out, dtype, a, b):
        b = as_dtype(xp, b, dtype)
        if dtype.kind in "iu":
            _int_zero_check(xp, b, out)
        ufunc(as_dtype(xp, a, dtype), b, out=out, casting="unsafe")
    impl.__name__ = ufunc.__name__
    return impl


# ---- the binary table ------------------------------------------------------------------------------------

# name, ufunc or impl, dtype rule, dtype check, takes a Python number as `other`, has an in-place form
BINARY = [
    ("mul", np.multiply, KEEP, None, True, True),
    ("floor_divide", _int_safe(np.floor_divide), KEEP, _no_bool_or_complex["floor_divide"], True, True),
    ("remainder", _int_safe(np.remainder), KEEP, _no_bool_or_complex["remainder"], True, True),
    ("fmod", _int_safe(np.fmod), KEEP, _no_bool_or_complex["fmod"], True, True),
    ("atan2", np.arctan2, FLOAT, _real_only["atan2"], False, True),
    ("maximum", np.maximum, KEEP, _minmax_check("maximum"), False, False),
    ("minimum", np.minimum, KEEP, _minmax_check("minimum"), False, False),
    ("bitwise_and", np.bitwise_and, KEEP, _ints_only["bitwise_and"], True, True),
    ("bitwise_or", np.bitwise_or, KEEP, _ints_only["bitwise_or"], True, True),
    ("bitwise_xor", np.bitwise_xor, KEEP, _ints_only["bitwise_xor"], True, True),
    ("bitwise_left_shift", np.left_shift, KEEP, _shift["bitwise_left_shift"], True, True),
    ("bitwise_right_shift", np.right_shift, KEEP, _shift["bitwise_right_shift"], True, True),
    ("eq", _compare_impl(np.equal), BOOL, None, True, True),
    ("ne", _compare_impl(np.not_equal), BOOL, None, True, True),
    ("lt", _compare_impl(np.less), BOOL, _real_only["lt"], True, True),
    ("le", _compare_impl(np.less_equal), BOOL, _real_only["le"], True, True),
    ("gt", _compare_impl(np.greater), BOOL, _real_only["gt"], True, True),
    ("ge", _compare_impl(np.greater_equal), BOOL, _real_only["ge"], True, True),
    ("logical_and", _compare_impl(np.logical_and), BOOL, None, False, True),
    ("logical_or", _compare_impl(np.logical_or), BOOL, None, False, True),
    ("logical_xor", _compare_impl(np.logical_xor), BOOL, None, False, True),
    ("fmax", np.fmax, KEEP, _minmax_check("fmax"), False, False),
    ("fmin", np.fmin, KEEP, _minmax_check("fmin"), False, False),
    ("copysign", _computed(lambda xp, a, b: xp.copysign(a, b), 2), FLOAT, _not_for_complex("copysign_cpu"), True,
     True),
    ("xlogy", _special_impl("xlogy", 2), FLOAT, _not_for_complex("xlogy_cpu"), True, True),
]


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
            shape, dtype = pointwise_binary(a, b)
        if check is not None:
            _kernel_check(check, dtype, dtype if keep else rule(dtype))
        return shape, (dtype if keep else rule(dtype))
    return meta


def _tensor_self(name, meta):
    """A binary meta whose `other` may be a number but whose `self` must be a tensor (copysign)."""
    def checked(a, b):
        _require_tensor(name, a)
        return meta(a, b)
    return checked


for _name, _fn, _rule, _check, _number_other, _inplace in BINARY:
    _meta = _binary_meta(_name, _rule, _check, _number_other)
    if _name == "copysign":
        _meta = _tensor_self(_name, _meta)
    structured(f"{_name}(Tensor self, Tensor other) -> Tensor", _meta,
               _fn if not isinstance(_fn, np.ufunc) else _ufunc_impl(_fn), inplace=_inplace, pointwise=True)


# ---- pow: small integer exponents take fast paths (x ** 3 as x*x*x is ~16x faster in NumPy) ----------------

_pow_bool_check = _not_for("pow", dt.BOOL)


def _pow_meta(a, b):
    if not isinstance(a, TensorImpl) and not isinstance(b, TensorImpl):
        raise TypeError(f"pow() received an invalid combination of arguments - got ({type(a).__name__}, "
                        f"{type(b).__name__}): one of them must be a Tensor")
    shape, dtype = pointwise_binary(a, b)
    if dtype is dt.bool and not (type(b) in (bool, int, float) and b in (0, 1)):  # x ** 0, x ** 1 need no kernel
        _pow_bool_check(dtype)
    if dtype.category == dt.INTEGRAL and type(b) is int and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed. (pow: use a float exponent, "
                           f"e.g. x ** {float(b)})")
    return shape, dtype


def _int_power(xp, out, a, b):
    """Integer powers with negative exponents, as PyTorch's integer loop: 1 and -1 stay ±1, the rest become 0."""
    neg = b < 0
    r = xp.power(a, xp.where(neg, 0, b))
    odd = (b % 2) == 1
    small = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0))
    xp.copyto(out, xp.where(neg, small, r), casting="unsafe")


def _pow_impl(xp, out, dtype, a, b):
    if not hasattr(b, "shape") and type(b) is not complex and hasattr(a, "shape"):
        if a.dtype is not dtype:
            a = as_dtype(xp, a, dtype)
        if b == 2:
            return xp.multiply(a, a, out=out, casting="unsafe")
        if b == 1:
            return xp.copyto(out, a, casting="unsafe")
        if b == 0:
            return xp.copyto(out, 1, casting="unsafe")
        if b == 3:
            return xp.multiply(a * a, a, out=out, casting="unsafe")
        if b == 0.5 and dtype.kind in "fc":
            return xp.sqrt(a, out=out, casting="unsafe")
        if b == -1 and dtype.kind in "fc":
            return xp.reciprocal(a, out=out, casting="unsafe")
    a, b = as_dtype(xp, a, dtype), as_dtype(xp, b, dtype)
    if dtype.kind in "iu" and xp.any(b < 0):
        return _int_power(xp, out, a, b)
    xp.power(a, b, out=out, casting="unsafe")


structured("pow(Tensor self, Tensor exponent) -> Tensor", _pow_meta, _pow_impl, pointwise=True)


# ---- clamp and where ---------------------------------------------------------------------------------------

def _clamp_meta(a, min=None, max=None):
    _require_tensor("clamp", a)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    tensor_bounds = isinstance(min, TensorImpl) or isinstance(max, TensorImpl)
    both = min is not None and max is not None
    if both and tensor_bounds and not (isinstance(min, TensorImpl) and isinstance(max, TensorImpl)):
        got = ", ".join(type(x).__name__ if not isinstance(x, TensorImpl) else "Tensor" for x in (a, min, max))
        raise TypeError(f"clamp() received an invalid combination of arguments - got ({got}): the bounds must be "
                        "both numbers or both Tensors")
    ops = (a, min, max)
    dtype = operands_result_type(ops)
    if dtype is dt.bool and (both or not tensor_bounds):  # only a single tensor bound has a bool kernel
        kind = "" if both else ("_min" if max is None else "_max")
        kernel = f"clamp{kind}{'' if tensor_bounds else '_scalar'}_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if dtype.category == dt.COMPLEX:
        raise NotImplementedError("clamp is not supported for complex types")
    return pointwise_shape(ops), dtype


def _clamp_impl(xp, out, dtype, a, min=None, max=None):
    if a.dtype is not dtype:
        a = as_dtype(xp, a, dtype)
    if min is None:
        xp.minimum(a, as_dtype(xp, max, dtype), out=out, casting="unsafe")
    elif max is None:
        xp.maximum(a, as_dtype(xp, min, dtype), out=out, casting="unsafe")
    else:  # min > max gives max everywhere, as in PyTorch
        xp.maximum(a, as_dtype(xp, min, dtype), out=out, casting="unsafe")
        xp.minimum(out, as_dtype(xp, max, dtype), out=out, casting="unsafe")


structured("clamp(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", _clamp_meta, _clamp_impl,
           pointwise=True, exact_out_dtype=True)


def _where_meta(condition, a, b):
    if not isinstance(condition, TensorImpl) or condition.dtype not in (dt.bool, dt.uint8):
        got = condition.dtype.legacy if isinstance(condition, TensorImpl) else type(condition).__name__
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {got} "
                           "(pass condition.bool(), or a comparison such as x > 0)")
    if condition.dtype is dt.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                      "future version of PyTorch. Use a boolean condition instead.", UserWarning, stacklevel=2)
    ops = (condition, a, b)
    return pointwise_shape(ops), operands_result_type((a, b))


def _where_impl(xp, out, dtype, condition, a, b):
    if (type(b) is float and b == 0 and getattr(a, "dtype", None) == out.dtype and out.dtype.kind == "f"
            and condition.dtype == np.bool_):
        _masked_or_zero(xp, out, condition, a)
        return
    xp.copyto(out, xp.where(condition, as_dtype(xp, a, dtype), as_dtype(xp, b, dtype)), casting="unsafe")


def _masked_or_zero(xp, out, condition, a):
    """out = a where condition else +0.0, branch-free: a's bits ANDed with all-ones or all-zeros (NumPy's where
    branches per element and runs ~10x slower on the random masks of a ReLU backward)."""
    bits = np.dtype(f"i{out.dtype.itemsize}")
    mask = (-condition.view(np.int8)).astype(bits)
    xp.bitwise_and(a.view(bits), mask, out=out.view(bits))


structured("where(Tensor condition, Tensor self, Tensor other) -> Tensor", _where_meta, _where_impl,
           inplace=False, pointwise=True, exact_out_dtype=True)


# ---- binary ops on floating operands only (PyTorch refuses integers and bools in their kernels) ----------------

def _logaddexp(xp, a, b):
    if a.dtype.kind != "c":
        return xp.logaddexp(a, b)
    big = xp.where(a.real >= b.real, a, b)  # factor out the larger magnitude: exp never overflows
    return big + xp.log1p(xp.exp(a + b - 2 * big))


def _float_operands_check(kernel, allow_complex=False):
    refused = (dt.BOOL, dt.INTEGRAL) if allow_complex else (dt.BOOL, dt.INTEGRAL, dt.COMPLEX)
    return _not_for(kernel, *refused)


# name, impl, dtype check, has an in-place form
BINARY_FLOATING = [
    ("hypot", _computed(lambda xp, a, b: xp.hypot(a, b), 2), _float_operands_check("hypot_cpu"), True),
    ("logaddexp", _computed(_logaddexp, 2), _float_operands_check("logaddexp_cpu", allow_complex=True), False),
    ("logaddexp2", _computed(lambda xp, a, b: xp.logaddexp2(a, b), 2), _float_operands_check("logaddexp2_cpu"),
     False),
]

for _name, _fn, _check, _inplace in BINARY_FLOATING:
    structured(f"{_name}(Tensor self, Tensor other) -> Tensor", _binary_meta(_name, KEEP, _check, False), _fn,
               inplace=_inplace, pointwise=True)


def _heaviside_meta(a, values):
    _require_tensor("heaviside", a)
    _require_tensor("heaviside", values, 2, "values")
    if a.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes. (heaviside of "
                           f"{a.dtype} and {values.dtype}: convert values with .to(input.dtype))")
    if a.dtype.category == dt.COMPLEX:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    return pointwise_shape((a, values)), a.dtype


def _heaviside(xp, out, dtype, a, values):
    xp.copyto(out, xp.where(a == 0, values, a > 0), casting="unsafe")


structured("heaviside(Tensor self, Tensor values) -> Tensor", _heaviside_meta, _heaviside, pointwise=True,
           exact_out_dtype=True)


# ---- unary ops with arguments: polygamma, logit, round, nan_to_num, clamp_min/clamp_max ----------------------

def _polygamma_meta(a, n):
    _require_tensor("polygamma", a, 2)
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n. (got n = {n})")
    _not_for_complex("polygamma")(a.dtype)
    return a._size, FLOAT(a.dtype)


def _polygamma(xp, a, n):
    sp = special(xp)
    return sp.psi(a) if n == 0 else sp.polygamma(n, a)


# Declared self first, as its methods x.polygamma(n) and x.polygamma_(n) take it (PyTorch's schema puts n first);
# the functional frontend below restores lantern.polygamma(n, x).
structured("polygamma(Tensor self, int n) -> Tensor", _polygamma_meta, _computed(_polygamma), pointwise=True)


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma, lantern.polygamma(n, x) (the method is x.polygamma(n))."""
    if out is None:
        return call(get("polygamma"), (input, n))
    return call(get("polygamma.out"), (input, n, out))


composite("polygamma", polygamma, method=False)


def _special_i1_meta(a):
    _require_tensor("special_i1", a)
    _not_for_complex("i1_cpu")(a.dtype)
    return a._size, FLOAT(a.dtype)


structured("special_i1(Tensor self) -> Tensor", _special_i1_meta, _special_impl("i1"), inplace=False,
           pointwise=True)


def _logit_meta(a, eps=None):
    _require_tensor("logit", a)
    _kernel_check(_not_for_complex("logit_cpu"), a.dtype, FLOAT(a.dtype))
    return a._size, FLOAT(a.dtype)


def _logit(xp, a, eps):
    if eps is not None:
        a = xp.clip(a, eps, 1 - eps)
    return xp.log(a / (1 - a))


structured("logit(Tensor self, float? eps=None) -> Tensor", _logit_meta, _computed(_logit), pointwise=True)


def _round_meta(a, decimals=None):
    """round(x) keeps integers as they are; round(x, decimals=...) (even 0: PyTorch's round.decimals) refuses them."""
    _require_tensor("round", a)
    if a.dtype is dt.bool or a.dtype.category == dt.COMPLEX or (decimals is not None and
                                                                 a.dtype.category == dt.INTEGRAL):
        kernel = "round_cpu" if decimals else "round_vml_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{a.dtype.legacy}\'')
    return a._size, a.dtype


def _round(xp, a, decimals):
    """Half to even, as nearbyint; with decimals, scaled by 10 ** |decimals| first, the way PyTorch scales."""
    if a.dtype.kind in "iu":
        return a
    if not decimals:
        return xp.rint(a)
    scale = a.dtype.type(10.0 ** abs(decimals))
    return xp.rint(a * scale) / scale if decimals > 0 else xp.rint(a / scale) * scale


structured("round(Tensor self, *, int? decimals=None) -> Tensor", _round_meta, _computed(_round), pointwise=True,
           exact_out_dtype=True)


def _nan_to_num_meta(a, nan=None, posinf=None, neginf=None):
    _require_tensor("nan_to_num", a)
    return a._size, a.dtype


def _replace_non_finite(xp, a, nan, posinf, neginf):
    """a with nan, +inf and -inf replaced (defaults: 0 and the dtype's largest and lowest finite values)."""
    big = dt.finfo(dt.from_numpy_dtype(a.dtype)).max
    out = xp.where(xp.isnan(a), 0.0 if nan is None else nan, a)
    out = xp.where(xp.isposinf(a), big if posinf is None else posinf, out)
    return xp.where(xp.isneginf(a), -big if neginf is None else neginf, out).astype(a.dtype)


def _nan_to_num(xp, out, dtype, a, nan=None, posinf=None, neginf=None):
    if dtype.kind in "biu":
        xp.copyto(out, a, casting="unsafe")
    elif dtype.kind == "c":
        out.real = _replace_non_finite(xp, a.real, nan, posinf, neginf)
        out.imag = _replace_non_finite(xp, a.imag, nan, posinf, neginf)
    else:
        xp.copyto(out, _replace_non_finite(xp, a, nan, posinf, neginf), casting="unsafe")


structured("nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
           _nan_to_num_meta, _nan_to_num, pointwise=True, exact_out_dtype=True)


def _clamp_min_meta(a, min):
    return _clamp_meta(a, min, None)


def _clamp_max_meta(a, max):
    return _clamp_meta(a, None, max)


def _clamp_min_impl(xp, out, dtype, a, min):
    _clamp_impl(xp, out, dtype, a, min, None)


def _clamp_max_impl(xp, out, dtype, a, max):
    _clamp_impl(xp, out, dtype, a, None, max)


structured("clamp_min(Tensor self, Tensor min) -> Tensor", _clamp_min_meta, _clamp_min_impl, pointwise=True,
           exact_out_dtype=True)
structured("clamp_max(Tensor self, Tensor max) -> Tensor", _clamp_max_meta, _clamp_max_impl, pointwise=True,
           exact_out_dtype=True)


# ---- ternary: lerp, addcmul, addcdiv -------------------------------------------------------------------------

def _lerp_meta(a, end, weight):
    _require_tensor("lerp", a)
    _require_tensor("lerp", end, 2, "end")
    for argname, x in (("end", end), ("weight", weight)):
        if isinstance(x, TensorImpl) and x.dtype is not a.dtype:
            raise RuntimeError(f"expected dtype {a.dtype.name} for `{argname}` but got dtype {x.dtype.name} "
                               f"(lerp: convert it with .to({a.dtype}))")
    if a.dtype.category < dt.FLOATING:
        kernel = "lerp_kernel_tensor" if isinstance(weight, TensorImpl) else "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{a.dtype.legacy}\'')
    return pointwise_shape((a, end, weight)), a.dtype


def _lerp(xp, a, end, weight):
    """PyTorch's two-sided formula: exact at weight 0 (gives a) and at weight 1 (gives end)."""
    diff = end - a
    if isinstance(weight, (int, float)):  # a scalar weight (optimizers' EMAs) picks its branch once, in place
        if abs(weight) < 0.5:
            diff *= weight
            diff += a
        else:
            diff *= 1 - weight
            xp.subtract(end, diff, out=diff)
        return diff
    return xp.where(xp.abs(weight) < 0.5, a + weight * diff, end - diff * (1 - weight))


structured("lerp(Tensor self, Tensor end, Tensor weight) -> Tensor", _lerp_meta, _computed(_lerp, 3),
           pointwise=True, exact_out_dtype=True)


def _addc_meta(name):
    def meta(a, tensor1, tensor2, value=1):
        _require_tensor(name, a)
        _require_tensor(name, tensor1, 2, "tensor1")
        _require_tensor(name, tensor2, 3, "tensor2")
        ops = (a, tensor1, tensor2)
        dtype = operands_result_type(ops)
        if name == "addcmul" and dtype is dt.bool:
            raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
        if name == "addcdiv" and tensor1.dtype.category <= dt.INTEGRAL and tensor2.dtype.category <= dt.INTEGRAL:
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
                "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input "
                "+ value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value "
                "* tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
                "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
        return pointwise_shape(ops), dtype
    return meta


def _value(xp, value, dtype):
    """`value` as the kernel sees it: PyTorch casts it to the result dtype first (2.5 is 2 for integers)."""
    return as_dtype(xp, int(value) if dtype.kind in "iu" else value, dtype)


def _addcmul(xp, a, tensor1, tensor2, value):
    return a + _value(xp, value, a.dtype) * tensor1 * tensor2


def _addcdiv(xp, a, tensor1, tensor2, value):
    return a + _value(xp, value, a.dtype) * tensor1 / tensor2


structured("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", _addc_meta("addcmul"),
           _computed(_addcmul, 3), pointwise=True)
structured("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", _addc_meta("addcdiv"),
           _computed(_addcdiv, 3), pointwise=True)


# ---- closeness: isclose, allclose, equal ---------------------------------------------------------------------

def _isclose_meta(a, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    _require_tensor("isclose", a)
    _require_tensor("isclose", other, 2, "other")
    if a.dtype is not other.dtype:
        raise RuntimeError(f"{a.dtype.legacy} did not match {other.dtype.legacy} (isclose: convert one of the "
                           "tensors with .to(dtype))")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tol}")
    return pointwise_shape((a, other)), dt.bool


def _isclose(xp, out, dtype, a, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - other| <= atol + rtol * |other|, or equal (infinities included); nan == nan only with equal_nan."""
    close = a == other
    if a.dtype.kind in "biu":  # the tolerance is a float: PyTorch compares in the default float dtype
        ft = dt.get_default_dtype().np
        allowed = atol + xp.abs(rtol * other.astype(ft))
        diff = xp.abs(a.astype(np.int64) - other.astype(np.int64)).astype(ft)
    else:
        if a.dtype in _HALF:
            a, other = a.astype(_FLOAT32), other.astype(_FLOAT32)
        if equal_nan:
            close = close | (xp.isnan(a) & xp.isnan(other))
        allowed = atol + xp.abs(rtol * other)
        diff = xp.abs(a - other)
    xp.copyto(out, close | (xp.isfinite(diff) & (diff <= allowed)))


structured("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor",
           _isclose_meta, _isclose, inplace=False, out=False, pointwise=True)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element of input is close to other's (see isclose): a Python bool."""
    return bool(call(get("isclose"), (input, other, rtol, atol, equal_nan)).all().item())


def equal(input, other):
    """True when input and other have the same size and elements (a Python bool)."""
    return input.equal(other)


def positive(input):
    """input itself (the unary `+`); bool tensors are refused, as PyTorch does."""
    if input.dtype is dt.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported. (positive: convert the tensor "
                           "with .to(int) first)")
    return input


composite("allclose", allclose)
composite("equal", equal, method=False)
composite("positive", positive)


# ---- float_power: pow in double precision (PyTorch's composite) ----------------------------------------------

def _float_power_dtype(input, exponent):
    is_complex = any(x.dtype.is_complex if isinstance(x, TensorImpl) else isinstance(x, complex)
                     for x in (input, exponent))
    return dt.complex128 if is_complex else dt.float64


def _to_dtype(x, dtype):
    if isinstance(x, TensorImpl):
        return x.to(dtype)
    return complex(x) if dtype.is_complex else float(x)


def float_power(input, exponent, *, out=None):
    """input ** exponent computed in float64 (complex128 when either is complex), whatever the inputs' dtypes."""
    dtype = _float_power_dtype(input, exponent)
    base, exponent = _to_dtype(input, dtype), _to_dtype(exponent, dtype)
    if out is None:
        return call(get("pow"), (base, exponent))
    if out.dtype is not dtype:
        raise RuntimeError(f"the output given to float_power has dtype {out.dtype.legacy} but the operation's result "
                           f"requires dtype {dtype.legacy}")
    return call(get("pow.out"), (base, exponent, out))


def float_power_(self, exponent):
    """In-place float_power: self must already have the result's dtype (float64 or complex128)."""
    dtype = _float_power_dtype(self, exponent)
    if self.dtype is not dtype:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.legacy} but the operation's result "
                           f"requires dtype {dtype.legacy}")
    return call(get("pow_"), (self, _to_dtype(exponent, dtype)))


composite("float_power", float_power)
composite("float_power_", float_power_)



def _conj_physical(backend, self):
    """The complex conjugate, materialised. A real tensor is its own conjugate: PyTorch returns an alias of its
    memory (same strides, no _base), and so does lantern."""
    _require_tensor("conj_physical", self)
    if not self.dtype.is_complex:
        return make_tensor(self._storage, self._size, self._stride, self._offset, self.dtype, backend, None, self._vc)
    out = backend.empty(self._size, self.dtype)
    if backend.xp is not None:
        backend.xp.conjugate(backend.array(self), out=backend.array(out))
    return out


custom("conj_physical(Tensor self) -> Tensor", _conj_physical, _conj_physical)

# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====


def _is_tensor(a):
    return hasattr(a, "dim")


def _mul_grad(grad, other):
    """grad * conj(other). Without create_graph (eager_backend), one multiply on the arrays into a new row-major
    tensor: the output `mul` itself gives operands laid out as the op runners' fast path sees them (row-major, by
    their cached strides, or broadcast scalars with strides all 0)."""
    if isinstance(other, TensorImpl) and (other._size == grad._size or not other._size):
        backend = eager_backend(grad, other)
        if (backend is not None and (has_cached_contiguous_strides(grad) or not any(grad._stride))
                and (has_cached_contiguous_strides(other) or not any(other._stride))):
            out = backend.empty(grad._size, grad.dtype)
            array = backend.array
            backend.xp.multiply(array(grad), array(other), out=out._nd)
            return out
    return grad * conj(other)

# ---- pointwise unary ----
# Complex gradients follow PyTorch's convention (the conjugate Wirtinger derivative): hence the conj()s.
derivative("abs", self="grad * self.sgn()")
derivative("neg", self="-grad")
derivative("conj_physical", self="grad.conj_physical()")
derivative("reciprocal", self="-grad * conj(result * result)")
derivative("square", name="PowBackward0", self="grad * 2 * conj(self)")  # square is pow(self, 2) in PyTorch
derivative("sqrt", self="grad / (2 * conj(result))")
derivative("rsqrt", self="-0.5 * grad * conj(result * result * result)")
derivative("exp", self="grad * conj(result)")
derivative("exp2", self="grad * conj(result) * LN2")
derivative("expm1", self="grad * (conj(result) + 1)")
derivative("log", self="grad / conj(self)")
derivative("log2", self="grad / (conj(self) * LN2)")
derivative("log10", self="grad / (conj(self) * LN10)")
derivative("log1p", name="Log1PBackward0", self="grad / (conj(self) + 1)")
derivative("sin", self="grad * conj(self.cos())")
derivative("cos", self="grad * -conj(self.sin())")
derivative("tan", self="grad * conj(1 + result * result)")
derivative("asin", self="grad * conj((1 - self * self).rsqrt())")
derivative("acos", self="-grad * conj((1 - self * self).rsqrt())")
derivative("atan", self="grad / conj(1 + self * self)")
derivative("sinh", self="grad * conj(self.cosh())")
derivative("cosh", self="grad * conj(self.sinh())")
derivative("tanh", self="grad * conj(1 - result * result)")
derivative("asinh", self="grad * conj((self * self + 1).rsqrt())")
derivative("acosh", self="grad * conj((self * self - 1).rsqrt())")
derivative("atanh", self="grad / conj(1 - self * self)")
derivative("sigmoid", self="grad * conj(result * (1 - result))")
for _name in ("sign", "floor", "ceil", "trunc"):
    derivative(_name, self="zeros_like(grad)")
derivative("sgn", self="sgn_backward(grad, self, result)")
derivative("frac", self="grad")
nondifferentiable("bitwise_not", "logical_not", "isnan", "isinf", "isfinite", "signbit")
# ---- pointwise binary ----
derivative("add", self="grad", other="grad if alpha == 1 else grad * conj(alpha)")
derivative("sub", self="grad", other="-grad if alpha == 1 else -grad * conj(alpha)")
derivative("rsub", name=lambda args: "RsubBackward0" if _is_tensor(args[1]) else "RsubBackward1",
           scalar_inputs=("other",), self="-grad if alpha == 1 else -grad * conj(alpha)", other="grad")
derivative("mul", self="mul_grad(grad, other)", other="mul_grad(grad, self)", helpers={"mul_grad": _mul_grad})
derivative("div", name=lambda args: "DivBackward0" if args[2] is None else "DivBackward2",
           self="grad / conj(other) if rounding_mode is None else zeros_like(grad)",
           other="-grad * conj(self / other / other) if rounding_mode is None else zeros_like(grad)")
derivative("remainder", name=lambda args: "RemainderBackward1" if _is_tensor(args[1]) else "RemainderBackward0",
           scalar_inputs=("other",), self="grad", other="-grad * self.div(other, rounding_mode='floor')")
derivative("fmod", name=lambda args: "FmodBackward1" if _is_tensor(args[1]) else "FmodBackward0",
           scalar_inputs=("other",), self="grad", other="-grad * self.div(other, rounding_mode='trunc')")
derivative("atan2", self="grad * other / (self * self + other * other)",
           other="-grad * self / (self * self + other * other)")
derivative("maximum", self="maximum_backward(grad, self, other, True)",
           other="maximum_backward(grad, other, self, True)")
derivative("minimum", self="maximum_backward(grad, self, other, False)",
           other="maximum_backward(grad, other, self, False)")
derivative("pow", name=lambda args: ("PowBackward1" if _is_tensor(args[1]) else "PowBackward0")
           if _is_tensor(args[0]) else "PowBackward2", scalar_inputs=("self", "exponent"),
           self="pow_backward_self(grad, self, exponent)",
           exponent="pow_backward_exponent(grad, self, exponent, result)")
derivative("clamp", name=lambda args: "ClampBackward0" if _is_tensor(args[1]) or _is_tensor(args[2]) else
           "ClampBackward1", scalar_inputs=(("min", "max"),), self="clamp_backward(grad, self, min, max)",
           min="clamp_bound_backward(grad, self, min, max, True)",
           max="clamp_bound_backward(grad, self, max, min, False)")
derivative("where", self="where_zero(condition, grad)", other="where_zero(condition.logical_not(), grad)")
nondifferentiable("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                  "logical_and", "logical_or", "logical_xor")
zero_gradient_inplace("eq", "ne", "lt", "le", "gt", "ge")


# ---- special functions, angles, and the ops added beside them ----

def _op(name, *args):
    return call(get(name), args)


def sinc_backward(grad, self):
    """d sinc(x) / dx = (pi x cos(pi x) - sin(pi x)) / (pi x^2), and 0 at x == 0 (sinc's maximum)."""
    zero = self == 0
    x = _op("where", zero, 1.0, self)
    y = x * math.pi
    slope = (y * y.cos() - y.sin()) / (y * x)
    return grad * conj(_op("where", zero, 0.0, slope))


def i1_backward(grad, self, result):
    """d i1(x) / dx = i0(x) - i1(x) / x, and 1/2 at x == 0."""
    zero = self == 0
    x = _op("where", zero, 1.0, self)
    return grad * _op("where", zero, 0.5, self.i0() - result / x)


def logit_backward(grad, self, eps):
    """grad / (x (1 - x)) inside the domain; outside it 0 when eps clamps the input, nan without eps."""
    inner = grad / (self * (1 - self))
    if eps is None:
        return _op("where", (self < 0) | (self > 1), math.nan, inner)
    return _op("where", (self < eps) | (self > 1 - eps), 0.0, inner)


def fmax_self_wins(self, other, is_max):
    """Where fmax (fmin) takes self: self >= other (<=), or other is nan."""
    return (self >= other if is_max else self <= other) | other.isnan()


def xlogy_self_backward(grad, self, other):
    """grad * log(other), and 0 where self == 0 and other <= 0 (there x log y is 0 nearby, whatever log y is)."""
    return _op("where", (self == 0) & (other <= 0), 0.0, _op("xlogy", grad, other))


def copysign_backward(grad, self, result):
    """copysign(x, y) = ±x: the gradient is grad times that sign, and 0 where x == 0."""
    zero = self == 0
    return grad * _op("where", zero, 0.0, result / _op("where", zero, 1.0, self))


_SPECIAL_HELPERS = {
    "polygamma": polygamma, "sinc_backward": sinc_backward, "i1_backward": i1_backward,
    "logit_backward": logit_backward, "fmax_self_wins": fmax_self_wins, "copysign_backward": copysign_backward,
    "xlogy_self_backward": xlogy_self_backward,
    "TWO_OVER_SQRT_PI": 2 / math.sqrt(math.pi), "HALF_SQRT_PI": math.sqrt(math.pi) / 2,
    "DEG2RAD": math.pi / 180, "RAD2DEG": 180 / math.pi,
}


def _special_derivative(op_name, **kw):
    derivative(op_name, helpers=_SPECIAL_HELPERS, **kw)


_special_derivative("erf", self="grad * TWO_OVER_SQRT_PI * (-self * self).exp()")
_special_derivative("erfc", self="-grad * TWO_OVER_SQRT_PI * (-self * self).exp()")
_special_derivative("erfinv", self="grad * HALF_SQRT_PI * self.erfinv().square().exp()")
_special_derivative("lgamma", self="grad * self.digamma()")
_special_derivative("digamma", self="grad * polygamma(1, self)")
_special_derivative("polygamma", self="grad * polygamma(n + 1, self)")
get("polygamma_").derivative = Derivative(get("polygamma_"), {"self": "grad * polygamma(n + 1, self)"},  # own entry
                                          name="PolygammaBackward1", helpers=_SPECIAL_HELPERS)
_special_derivative("i0", self="grad * self.special_i1()")
_special_derivative("special_i1", name="SpecialI1Backward0", self="i1_backward(grad, self, result)")
_special_derivative("sinc", self="sinc_backward(grad, self)")
_special_derivative("deg2rad", name="Deg2RadBackward0", self="grad * DEG2RAD")
_special_derivative("rad2deg", name="Rad2DegBackward0", self="grad * RAD2DEG")
_special_derivative("logit", self="logit_backward(grad, self, eps)")
derivative("round", name=lambda args: "RoundBackward0" if args[1] is None else "RoundBackward1",
           self="zeros_like(grad)")
derivative("nan_to_num", self="grad * self.isfinite()")
derivative("clamp_min", name=lambda args: "ClampMinBackward1" if _is_tensor(args[1]) else "ClampMinBackward0",
           scalar_inputs=("min",), self="clamp_backward(grad, self, min, None)",
           min="clamp_bound_backward(grad, self, min, None, True)")
derivative("clamp_max", name=lambda args: "ClampMaxBackward1" if _is_tensor(args[1]) else "ClampMaxBackward0",
           scalar_inputs=("max",), self="clamp_backward(grad, self, None, max)",
           max="clamp_bound_backward(grad, self, max, None, False)")
_special_derivative("fmax", self="where_zero(fmax_self_wins(self, other, True), grad)",
                    other="where_zero(fmax_self_wins(self, other, True).logical_not(), grad)")
_special_derivative("fmin", self="where_zero(fmax_self_wins(self, other, False), grad)",
                    other="where_zero(fmax_self_wins(self, other, False).logical_not(), grad)")
_special_derivative("copysign", name=lambda args: "CopysignBackward0" if _is_tensor(args[1]) else "CopysignBackward1",
                    scalar_inputs=("other",), self="copysign_backward(grad, self, result)", other="zeros_like(grad)")
_special_derivative("xlogy", name=lambda args: "XlogyBackward1" if not _is_tensor(args[0]) else
                    "XlogyBackward0" if _is_tensor(args[1]) else "XlogyBackward2", scalar_inputs=("self", "other"),
                    self="xlogy_self_backward(grad, self, other)", other="grad * self / other")
derivative("hypot", self="grad * self / result", other="grad * other / result")
derivative("logaddexp", self="grad / conj(1 + (other - self).exp())", other="grad / conj(1 + (self - other).exp())")
derivative("logaddexp2", self="grad / (1 + (other - self).exp2())", other="grad / (1 + (self - other).exp2())")
derivative("lerp", name=lambda args: "LerpBackward1" if _is_tensor(args[2]) else "LerpBackward0",
           scalar_inputs=("weight",), self="grad * conj(1 - weight)", end="grad * conj(weight)",
           weight="grad * conj(end - self)")
derivative("addcmul", self="grad", tensor1="grad * conj(tensor2 * value)", tensor2="grad * conj(tensor1 * value)")
derivative("addcdiv", self="grad", tensor1="grad * conj(value / tensor2)",
           tensor2="-grad * conj(value * tensor1 / (tensor2 * tensor2))")
nondifferentiable("isclose")
