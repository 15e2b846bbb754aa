"""Unary pointwise ops: one row per op (name, NumPy ufunc or kernel, result-dtype rule, dtype check; see
pointwise_common.py), their derivatives, and the unary ops with arguments (polygamma, logit, round, special_i1)
and conj_physical. The special functions are scipy.special's kernels (erf, lgamma, digamma, i0, ...).

>>> x = lantern.tensor([0.25, 2.5], dtype=lantern.float64)
>>> lantern.round(x, decimals=1).tolist(), lantern.exp(lantern.zeros(1)).tolist()
([0.2, 2.5], [1.0])
"""
import math
from functools import partial

import numpy as np

from ..core import dtype as dt
from ..core.tensor_impl import make_tensor
from . import complex_arithmetic
from .derivative import Derivative, derivative, nondifferentiable
from .derivative_helpers import conj
from .dispatcher import call
from .registry import composite, custom, get, structured
from .nn_common import _op
from .meta_util import iterator_strides
from .special_aten_forms import bessel_i, hurwitz_zeta
from .pointwise_common import (
    BOOL, FLOAT, INT_FOR_BOOL, KEEP, REAL, _computed, _ints_only, _kernel_check, _no_complex, _not_for,
    _not_for_complex, _predicate_impl, _require_tensor, _special_impl, _ufunc_impl, special,
)


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
        if dtype.kind not in "biu":
            xp.copyto(out, 0, where=xp.isnan(a))  # PyTorch's sign of nan is 0


def _sgn(xp, out, dtype, a):
    if a.dtype.kind == "c":
        mag = xp.abs(a)
        xp.divide(a, xp.where(mag == 0, 1, mag), out=out, casting="unsafe")
    else:
        _sign(xp, out, dtype, a)


def _on_floats(name):
    """floor/ceil/trunc (the ufunc xp.<name>): integers pass through unchanged (PyTorch keeps their dtype and
    values)."""
    def impl(xp, out, dtype, a):
        if dtype.kind in "iu":
            xp.copyto(out, a, casting="unsafe")
        else:
            getattr(xp, name)(a, out=out, casting="unsafe")
    impl.__name__ = name
    return impl


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


def _angle_check(name):
    return _not_for(name, dt.COMPLEX, error=RuntimeError, msg=f"{name} is not supported for complex tensors.")


# name, ufunc's name on xp or impl, dtype rule, dtype check, (has in-place form, has out= form)
UNARY = [
    ("abs", _abs, REAL, _not_for("abs_cpu", dt.BOOL), (True, True)),
    ("neg", "negative", KEEP, _no_bool_neg, (True, True)),
    ("sign", _sign, KEEP, _sign_check, (True, True)),
    ("sgn", _sgn, KEEP, None, (True, True)),
    ("reciprocal", "reciprocal", FLOAT, None, (True, True)),
    ("square", _ufunc_impl("square", complex_kernel=complex_arithmetic.square), INT_FOR_BOOL, None,
     (True, True)),
    ("sqrt", "sqrt", FLOAT, None, (True, True)),
    ("rsqrt", _rsqrt, FLOAT, None, (True, True)),
    ("exp", "exp", FLOAT, None, (True, True)),
    ("exp2", "exp2", FLOAT, None, (True, True)),
    ("expm1", "expm1", FLOAT, None, (True, True)),
    ("log", "log", FLOAT, None, (True, True)),
    ("log2", "log2", FLOAT, None, (True, True)),
    ("log10", "log10", FLOAT, None, (True, True)),
    ("log1p", "log1p", FLOAT, None, (True, True)),
    ("sin", "sin", FLOAT, None, (True, True)),
    ("cos", "cos", FLOAT, None, (True, True)),
    ("tan", "tan", FLOAT, None, (True, True)),
    ("asin", "arcsin", FLOAT, None, (True, True)),
    ("acos", "arccos", FLOAT, None, (True, True)),
    ("atan", "arctan", FLOAT, None, (True, True)),
    ("sinh", "sinh", FLOAT, None, (True, True)),
    ("cosh", "cosh", FLOAT, None, (True, True)),
    ("tanh", "tanh", FLOAT, None, (True, True)),
    ("asinh", "arcsinh", FLOAT, None, (True, True)),
    ("acosh", "arccosh", FLOAT, None, (True, True)),
    ("atanh", "arctanh", FLOAT, None, (True, True)),
    ("sigmoid", _sigmoid, FLOAT, None, (True, True)),
    ("floor", _on_floats("floor"), KEEP, _rounding("floor"), (True, True)),
    ("ceil", _on_floats("ceil"), KEEP, _rounding("ceil"), (True, True)),
    ("trunc", _on_floats("trunc"), KEEP, _rounding("trunc"), (True, True)),
    ("frac", _frac, KEEP, _frac_check, (True, True)),
    ("bitwise_not", "invert", KEEP, _ints_only["bitwise_not"], (True, True)),
    ("logical_not", _predicate_impl("logical_not"), BOOL, None, (True, True)),
    ("isnan", _predicate_impl("isnan"), BOOL, None, (False, False)),
    ("isinf", _predicate_impl("isinf"), BOOL, None, (False, False)),
    ("isfinite", _predicate_impl("isfinite"), BOOL, None, (False, False)),
    ("signbit", _predicate_impl("signbit"), BOOL, _signbit_check, (False, True)),
    ("erf", _special_impl("erf"), FLOAT, _not_for_complex("erf_vml_cpu"), (True, True)),
    ("erfc", _special_impl("erfc"), FLOAT, _not_for_complex("erfc_vml_cpu"), (True, True)),
    ("erfinv", _special_impl("erfinv"), FLOAT, _not_for_complex("erfinv_vml_cpu"), (True, True)),
    ("lgamma", _computed(_lgamma), FLOAT, _not_for_complex("lgamma_vml_cpu"), (True, True)),
    ("digamma", _special_impl("psi"), FLOAT, _not_for_complex("digamma"), (True, True)),
    ("i0", _computed(bessel_i("i0")), FLOAT, _not_for_complex("i0_vml_cpu"), (True, True)),
    ("sinc", _computed(_sinc), FLOAT, None, (True, True)),
]
# Multiplies by a constant; PyTorch writes them into empty_like(self), so for an EMPTY input torch keeps the input's
# (meaningless) strides where lantern gives row-major ones: kept apart from UNARY, whose tests compare those.
ANGLES = [
    ("deg2rad", _computed(_deg2rad), FLOAT, _angle_check("deg2rad"), (True, True)),
    ("rad2deg", _computed(_rad2deg), FLOAT, _angle_check("rad2deg"), (True, True)),
]


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
               _ufunc_impl(_fn) if isinstance(_fn, str) else _fn, inplace=_inplace, out=_out, pointwise=True,
               exact_out_dtype=_name in _EXACT_OUT)


def _conj_physical(backend, self):
    """The complex conjugate, materialised. A real tensor is its own conjugate: PyTorch returns an alias of its
    memory (same strides, no _base), and so does lantern."""
    _require_tensor("conj_physical", self)
    if not self.dtype.is_complex:
        return make_tensor(self._storage, self._size, self._stride, self._offset, self.dtype, backend, None, self._vc)
    out = backend.empty_strided(self._size, iterator_strides(self._size, [(self._size, self._stride)]), self.dtype)
    if backend.xp is not None:
        backend.xp.conjugate(backend.array(self), out=backend.array(out))
    return out


custom("conj_physical(Tensor self) -> Tensor", _conj_physical, _conj_physical)


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


# ---- unary ops with arguments: polygamma, logit, round, nan_to_num, clamp_min/clamp_max ----------------------

def _polygamma_meta(a, n):
    _require_tensor("polygamma", a, 2)
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n. (got n = {n})")
    _not_for_complex("polygamma")(a.dtype)
    return a._size, FLOAT(a.dtype)


def _trigamma(xp, x):
    """polygamma(1, x) as ATen computes it, in x's dtype: reflection below 1/2 (pi^2 / sin(pi x)^2, with pi x
    rounded in float32 too, which is where float32 loses digits for negative x), six steps of the recurrence, then
    the asymptotic series."""
    one = x.dtype.type(1)
    pi = x.dtype.type(math.pi)
    reflect = x < x.dtype.type(0.5)
    with xp.errstate(divide="ignore"):
        sin_pi_x = xp.sin(pi * x)
        result = xp.where(reflect, -(pi * pi) / (sin_pi_x * sin_pi_x), x.dtype.type(0))
        x = xp.where(reflect, one - x, x)
        for _ in range(6):
            result = result + one / (x * x)
            x = x + one
        ixx = one / (x * x)
        series = one + one / (x.dtype.type(2) * x) + ixx * (x.dtype.type(1 / 6) - ixx * (x.dtype.type(1 / 30) - ixx
                                                                                            * x.dtype.type(1 / 42)))
        result = result + series / x
    return xp.where(reflect, -result, result)


def _polygamma(xp, a, n):
    """digamma for n = 0 (SciPy's psi); otherwise as ATen computes it: trigamma by its own series, higher n as
    (-1)^(n+1) n! zeta(n + 1, x), n! being exp(lgamma(n + 1)) in x's dtype."""
    if n == 0:
        return special(xp).psi(a)
    if n == 1:
        return _trigamma(xp, a)
    factorial = xp.exp(a.dtype.type(math.lgamma(n + 1)))
    return a.dtype.type(1 if n % 2 else -1) * factorial * hurwitz_zeta(xp, n + 1, a)


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


structured("special_i1(Tensor self) -> Tensor", _special_i1_meta, _computed(bessel_i("i1")), inplace=False,
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


def logit_backward(grad, self, eps):
    """grad / (x (1 - x)) inside the domain; outside it 0 when eps clamps the input, nan without eps."""
    inner = grad / (self * (1 - self))
    if eps is None:
        return _op("where", (self < 0) | (self > 1), math.nan, inner)
    return _op("where", (self < eps) | (self > 1 - eps), 0.0, inner)


_HELPERS = {
    "polygamma": polygamma, "sinc_backward": sinc_backward, "i1_backward": i1_backward,
    "logit_backward": logit_backward, "TWO_OVER_SQRT_PI": 2 / math.sqrt(math.pi),
    "HALF_SQRT_PI": math.sqrt(math.pi) / 2, "DEG2RAD": math.pi / 180, "RAD2DEG": 180 / math.pi,
}
_derivative = partial(derivative, helpers=_HELPERS)


_derivative("erf", self="grad * TWO_OVER_SQRT_PI * (-self * self).exp()")
_derivative("erfc", self="-grad * TWO_OVER_SQRT_PI * (-self * self).exp()")
_derivative("erfinv", self="grad * HALF_SQRT_PI * self.erfinv().square().exp()")
_derivative("lgamma", self="grad * self.digamma()")
_derivative("digamma", self="grad * polygamma(1, self)")
_derivative("polygamma", self="grad * polygamma(n + 1, self)")
get("polygamma_").derivative = Derivative(get("polygamma_"), {"self": "grad * polygamma(n + 1, self)"},  # own entry
                                          name="PolygammaBackward1", helpers=_HELPERS)
_derivative("i0", self="grad * self.special_i1()")
_derivative("special_i1", name="SpecialI1Backward0", self="i1_backward(grad, self, result)")
_derivative("sinc", self="sinc_backward(grad, self)")
_derivative("deg2rad", name="Deg2RadBackward0", self="grad * DEG2RAD")
_derivative("rad2deg", name="Rad2DegBackward0", self="grad * RAD2DEG")
_derivative("logit", self="logit_backward(grad, self, eps)")
derivative("round", name=lambda args: "RoundBackward0" if args[1] is None else "RoundBackward1",
           self="zeros_like(grad)")
