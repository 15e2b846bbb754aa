"""Binary pointwise ops from one table (name, NumPy ufunc or kernel, result-dtype rule, dtype check; see
pointwise_common.py): floor_divide, remainder, fmod, atan2, maximum/minimum, the bitwise and logical ops, the
comparisons, fmax/fmin, copysign, xlogy; then hypot and logaddexp (floating operands only), heaviside, and the
closeness tests (isclose, allclose, equal). Each family's derivatives follow it.

>>> (lantern.tensor([1, 5]) > 2).tolist(), lantern.remainder(lantern.tensor([-3, 3]), 2).tolist()
([False, True], [1, 1])
"""
from functools import partial

import numpy as np

from ..core import dtype as dt
from . import complex_arithmetic
from .meta_util import pointwise_shape
from .derivative import derivative, nondifferentiable, zero_gradient_inplace
from .dispatcher import call
from .registry import composite, get, structured
from .nn_common import _op
from .pointwise_arithmetic import _int_zero_check
from .pointwise_common import (
    BOOL, FLOAT, KEEP, _FLOAT32, _HALF, _binary_meta, _compare_impl, _computed, _ints_only, _is_tensor, _not_for,
    _not_for_complex, _require_tensor, _special_impl, _tensor_self, _ufunc_impl, as_dtype,
)


_shift = {n: _not_for(f"{k}_cpu", dt.BOOL, dt.FLOATING, dt.COMPLEX) for n, k in
          (("bitwise_left_shift", "lshift"), ("bitwise_right_shift", "rshift"))}
_no_bool_or_complex = {n: _not_for(f"{k}_cpu", dt.BOOL, dt.COMPLEX) for n, k in
                       (("floor_divide", "div_floor"), ("remainder", "remainder"), ("fmod", "fmod"))}
_real_only = {n: _not_for(f"{n}_cpu", dt.COMPLEX) for n in ("atan2", "lt", "le", "gt", "ge")}


def _minmax_check(name):
    return _not_for(name, dt.COMPLEX, error=RuntimeError, msg=f"{name} not implemented for complex tensors.")


def _int_safe(name):
    """Integer floor_divide/remainder/fmod (the ufunc xp.<name>) raise on a zero divisor, as PyTorch does (NumPy
    would return 0)."""
    def impl(xp, out, dtype, a, b):
        b = as_dtype(xp, b, dtype)
        if dtype.kind in "iu":
            _int_zero_check(xp, b, out)
        getattr(xp, name)(as_dtype(xp, a, dtype), b, out=out, casting="unsafe")
    impl.__name__ = name
    return impl


# ---- the binary table ------------------------------------------------------------------------------------

# name, ufunc's name on xp or impl, dtype rule, dtype check, takes a Python number as `other`, has an in-place form
BINARY = [
    ("floor_divide", _int_safe("floor_divide"), KEEP, _no_bool_or_complex["floor_divide"], True, True),
    ("remainder", _int_safe("remainder"), KEEP, _no_bool_or_complex["remainder"], True, True),
    ("fmod", _int_safe("fmod"), KEEP, _no_bool_or_complex["fmod"], True, True),
    ("atan2", "arctan2", FLOAT, _real_only["atan2"], False, True),
    ("maximum", "maximum", KEEP, _minmax_check("maximum"), False, False),
    ("minimum", "minimum", KEEP, _minmax_check("minimum"), False, False),
    ("bitwise_and", "bitwise_and", KEEP, _ints_only["bitwise_and"], True, True),
    ("bitwise_or", "bitwise_or", KEEP, _ints_only["bitwise_or"], True, True),
    ("bitwise_xor", "bitwise_xor", KEEP, _ints_only["bitwise_xor"], True, True),
    ("bitwise_left_shift", "left_shift", KEEP, _shift["bitwise_left_shift"], True, True),
    ("bitwise_right_shift", "right_shift", KEEP, _shift["bitwise_right_shift"], True, True),
    ("eq", _compare_impl("equal"), BOOL, None, True, True),
    ("ne", _compare_impl("not_equal"), BOOL, None, True, True),
    ("lt", _compare_impl("less"), BOOL, _real_only["lt"], True, True),
    ("le", _compare_impl("less_equal"), BOOL, _real_only["le"], True, True),
    ("gt", _compare_impl("greater"), BOOL, _real_only["gt"], True, True),
    ("ge", _compare_impl("greater_equal"), BOOL, _real_only["ge"], True, True),
    ("logical_and", _compare_impl("logical_and"), BOOL, None, False, True),
    ("logical_or", _compare_impl("logical_or"), BOOL, None, False, True),
    ("logical_xor", _compare_impl("logical_xor"), BOOL, None, False, True),
    ("fmax", "fmax", KEEP, _minmax_check("fmax"), False, False),
    ("fmin", "fmin", KEEP, _minmax_check("fmin"), False, False),
    ("copysign", _computed(lambda xp, a, b: xp.copysign(a, b), 2), FLOAT, _not_for_complex("copysign_cpu"), True,
     True),
    ("xlogy", _special_impl("xlogy", 2), FLOAT, _not_for_complex("xlogy_cpu"), True, True),
]


for _name, _fn, _rule, _check, _number_other, _inplace in BINARY:
    _meta = _binary_meta(_name, _rule, _check, _number_other)
    if _name == "copysign":
        _meta = _tensor_self(_name, _meta)
    structured(f"{_name}(Tensor self, Tensor other) -> Tensor", _meta,
               _ufunc_impl(_fn, 2) if isinstance(_fn, str) else _fn, inplace=_inplace, pointwise=True)


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


nondifferentiable("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                  "logical_and", "logical_or", "logical_xor")
zero_gradient_inplace("eq", "ne", "lt", "le", "gt", "ge")


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


_HELPERS = {"fmax_self_wins": fmax_self_wins, "copysign_backward": copysign_backward,
            "xlogy_self_backward": xlogy_self_backward}
_derivative = partial(derivative, helpers=_HELPERS)


_derivative("fmax", self="where_zero(fmax_self_wins(self, other, True), grad)",
                    other="where_zero(fmax_self_wins(self, other, True).logical_not(), grad)")
_derivative("fmin", self="where_zero(fmax_self_wins(self, other, False), grad)",
                    other="where_zero(fmax_self_wins(self, other, False).logical_not(), grad)")
_derivative("copysign", name=lambda args: "CopysignBackward0" if _is_tensor(args[1]) else "CopysignBackward1",
                    scalar_inputs=("other",), self="copysign_backward(grad, self, result)", other="zeros_like(grad)")
_derivative("xlogy", name=lambda args: "XlogyBackward1" if not _is_tensor(args[0]) else
                    "XlogyBackward0" if _is_tensor(args[1]) else "XlogyBackward2", scalar_inputs=("self", "other"),
                    self="xlogy_self_backward(grad, self, other)", other="grad * self / other")


# ---- binary ops on floating operands only (PyTorch refuses integers and bools in their kernels) ----------------

def _logaddexp(xp, a, b):
    return xp.logaddexp(a, b) if a.dtype.kind != "c" else complex_arithmetic.log_add_exp(xp, a, b)


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


derivative("hypot", self="grad * self / result", other="grad * other / result")
derivative("logaddexp", self="grad / conj(1 + (other - self).exp())", other="grad / conj(1 + (self - other).exp())")
derivative("logaddexp2", self="grad / (1 + (other - self).exp2())", other="grad / (1 + (self - other).exp2())")


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


nondifferentiable("isclose")
