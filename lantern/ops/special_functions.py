"""torch.special's functions of one or two arguments (Bessel and Airy functions, the scaled error and Bessel
functions, the normal distribution's log-CDF and quantile, entropy, Hurwitz zeta, xlog1py, the regularized
incomplete gamma functions igamma/igammac and the multivariate log-gamma mvlgamma) and their derivatives.

The kernels are scipy.special's ufuncs on host arrays (cupyx.scipy.special on CuPy ones), with the values PyTorch
gives where SciPy's differ (at the edges of the domain: igamma at 0 and infinity); Hurwitz zeta, Airy Ai and float32
erfcx are computed as ATen computes them, and so are the Bessel functions J0, J1, Y0, Y1 beyond x = 5
(special_aten_forms.py).
SciPy is often the more accurate of the two inside the domain: torch's own OpInfos compare its Bessel functions
with SciPy's at 1e-5 in float64. The orthogonal polynomials are in special_polynomials.py.

>>> x = lantern.tensor([0.0, 1.0, 2.0], dtype=lantern.float64)
>>> [round(v, 6) for v in lantern.special_bessel_j0(x).tolist()]
[1.0, 0.765198, 0.223891]
>>> lantern.igamma(lantern.tensor([1.0]), lantern.tensor([0.0, float("inf")])).tolist()
[0.0, 1.0]
"""
import math
from functools import partial

from ..core import dtype as dt
from .derivative import derivative, nondifferentiable
from .meta_util import pointwise_binary
from .nn_common import _op
from .pointwise_common import (
    FLOAT, KEEP, _binary_meta, _computed, _is_tensor, _kernel_check, _require_tensor, _special_impl, special,
)
from .registry import structured
from .pointwise_unary import _lgamma
from .special_aten_forms import airy_ai, bessel_asymptotic, bessel_i, erfcx, hurwitz_zeta


def _refuse(kernel, half=False, integers=True):
    """The dtype check of a special function's CPU kernel: complex never; float16/bfloat16 unless `half`; bool and
    integers (which most of them compute in the default float dtype) unless `integers`."""
    def check(dtype):
        if (dtype.category == dt.COMPLEX or (not half and dtype in (dt.float16, dt.bfloat16))
                or (not integers and dtype.category < dt.FLOATING)):
            raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype.legacy}\'')
    return check


# ---- unary: kernels ------------------------------------------------------------------------------------------

def _spherical_bessel_j0(xp, x):
    """sin(x) / x, 1 at 0 and 0 at +-inf."""
    safe = xp.where(x == 0, 1, x)
    return xp.where(x == 0, 1, xp.where(xp.isinf(x), 0, xp.sin(safe) / safe))


def _bessel(order, second_kind):
    """J_order (Y_order with `second_kind`): SciPy's Cephes values up to |x| = 5, beyond it ATen's asymptotic form
    (special_aten_forms.bessel_asymptotic: up to ~1e-6 off SciPy's near the zeros, NaN at infinity)."""
    def kernel(xp, x):
        near = getattr(special(xp), ("y" if second_kind else "j") + str(order))(x)
        far = x > 5 if second_kind else xp.abs(x) > 5
        value = bessel_asymptotic(xp, xp.where(far, xp.abs(x), 6.0), order, second_kind)
        if order == 1 and not second_kind:
            value = xp.where(x < 0, -value, value)  # J1 is odd, J0 even
        return xp.where(far, value, near)
    kernel.__name__ = ("bessel_y" if second_kind else "bessel_j") + str(order)
    return kernel


# aten name, kernel, computes float16/bfloat16 (in float32), the derivative of self (None: no gradient flows)
UNARY = [
    ("special_airy_ai", _computed(airy_ai), False, None),
    ("special_bessel_j0", _computed(_bessel(0, False)), False, None),
    ("special_bessel_j1", _computed(_bessel(1, False)), False, None),
    ("special_bessel_y0", _computed(_bessel(0, True)), False, None),
    ("special_bessel_y1", _computed(_bessel(1, True)), False, None),
    ("special_modified_bessel_i0", _computed(bessel_i("i0")), False, None),
    ("special_modified_bessel_i1", _computed(bessel_i("i1")), False, None),
    ("special_modified_bessel_k0", _special_impl("k0"), False, None),
    ("special_modified_bessel_k1", _special_impl("k1"), False, None),
    ("special_scaled_modified_bessel_k0", _special_impl("k0e"), False, None),
    ("special_scaled_modified_bessel_k1", _special_impl("k1e"), False, None),
    ("special_spherical_bessel_j0", _computed(_spherical_bessel_j0), False, None),
    ("special_erfcx", _computed(erfcx), False, "grad * (2 * self * result - M_2_SQRTPI)"),
    ("special_i0e", _special_impl("i0e"), True, "grad * (_op('special_i1e', self) - self.sgn() * result)"),
    ("special_i1e", _special_impl("i1e"), True, "i1e_backward(grad, self, result)"),
    ("special_log_ndtr", _special_impl("log_ndtr"), False, "grad / SQRT_2PI * (-(result + self * self / 2)).exp()"),
    ("special_ndtri", _special_impl("ndtri"), False, "grad * SQRT_2PI * (result * result / 2).exp()"),
    ("special_entr", _special_impl("entr"), True, "grad * -(1 + self.log())"),
]
# PyTorch's schemas call the argument x for these (special_airy_ai(x=...)), self for the others
_NAMED_X = {"special_airy_ai", "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
            "special_spherical_bessel_j0"}
_NODE_NAMES = {"special_i0e": "SpecialI0EBackward0", "special_i1e": "SpecialI1EBackward0"}


def _unary_meta(name, arg, half):
    check = _refuse(name.removeprefix("special_") + "_cpu", half)

    def meta(a):
        _require_tensor(name, a, argname="input" if arg == "self" else arg)
        _kernel_check(check, a.dtype, FLOAT(a.dtype))
        return a._size, FLOAT(a.dtype)
    return meta


for _name, _impl, _half, _ in UNARY:
    _arg = "x" if _name in _NAMED_X else "self"
    structured(f"{_name}(Tensor {_arg}) -> Tensor", _unary_meta(_name, _arg, _half), _impl, inplace=False,
               pointwise=True, method=False)


def i1e_backward(grad, self, result):
    """d i1e(x) / dx = i0e(x) - i1e(x) (sgn(x) + 1 / x), and 1/2 at x == 0."""
    zero = self == 0
    x = _op("where", zero, 1.0, self)
    return grad * _op("where", zero, 0.5, _op("special_i0e", self) - result * (self.sgn() + 1 / x))


# ---- binary: zeta, xlog1py, igamma, igammac --------------------------------------------------------------------

def _zeta(xp, x, q):
    """Hurwitz zeta, as ATen computes it (special_aten_forms.hurwitz_zeta)."""
    return hurwitz_zeta(xp, x, q)


def _incomplete_gamma(xp, a, x, upper):
    """The regularized lower (upper: upper) incomplete gamma function, with PyTorch's values where an argument is
    0 or infinite, which come first in its kernel (igamma(nan, 0) is 0 there, NaN in SciPy)."""
    sp = special(xp)
    full, empty = (0.0, 1.0) if upper else (1.0, 0.0)   # the values at x = inf and at x = 0
    r = sp.gammaincc(a, x) if upper else sp.gammainc(a, x)
    r = xp.where(xp.isinf(x), full, r)
    r = xp.where(xp.isinf(a), xp.where(xp.isinf(x), math.nan, empty), r)
    r = xp.where(x == 0, empty, r)
    r = xp.where(a == 0, xp.where(x > 0, full, math.nan), r)
    return xp.where((x < 0) | (a < 0), math.nan, r)


def _igamma(xp, a, x):
    return _incomplete_gamma(xp, a, x, upper=False)


def _igammac(xp, a, x):
    return _incomplete_gamma(xp, a, x, upper=True)


def number_or_tensor_meta(name, check):
    """The meta of a binary op with a floating result and (Tensor, Tensor), (Scalar, Tensor) and (Tensor, Scalar)
    overloads: two numbers are refused, as PyTorch's argument parser refuses them."""
    def meta(a, b):
        if not _is_tensor(a) and not _is_tensor(b):
            raise TypeError(f"{name}() received an invalid combination of arguments - got ({type(a).__name__}, "
                            f"{type(b).__name__}), but expected (Tensor, Tensor), (Number, Tensor) or (Tensor, "
                            "Number)")
        shape, dtype = pointwise_binary(a, b)
        _kernel_check(check, dtype, FLOAT(dtype))
        return shape, FLOAT(dtype)
    return meta


# aten name, kernel, dtype rule, dtype check; zeta and xlog1py take a number for either argument and are
# functions only, igamma and igammac take tensors and are also methods with an in-place form
BINARY = [
    ("special_zeta", _computed(_zeta, 2), FLOAT, _refuse("zeta_cpu")),
    ("special_xlog1py", _special_impl("xlog1py", 2), FLOAT, _refuse("xlog1py_cpu", half=True)),
    ("igamma", _computed(_igamma, 2), KEEP, _refuse("igamma_cpu", half=True, integers=False)),
    ("igammac", _computed(_igammac, 2), KEEP, _refuse("igammac_cpu", half=True, integers=False)),
]

for _name, _impl, _rule, _check in BINARY:
    _tensors_only = _rule is KEEP
    structured(f"{_name}(Tensor self, Tensor other) -> Tensor",
               _binary_meta(_name, KEEP, _check, False) if _tensors_only else number_or_tensor_meta(_name, _check),
               _impl, inplace=_tensors_only, pointwise=True, method=_tensors_only)


def not_implemented(name):
    """A formula's value where PyTorch has no derivative: backward raises its NotImplementedError."""
    raise NotImplementedError(f"the derivative for '{name}' is not implemented.")


def zeta_other_backward(grad, self, other):
    """d zeta(x, q) / dq = -x zeta(x + 1, q)."""
    return grad * -self * _op("special_zeta", self + 1.0, other)


def xlog1py_self_backward(grad, self, other):
    """grad * log1p(other), and 0 where self == 0 and other <= -1 (x log1p(y) is 0 along self == 0)."""
    return _op("where", (self == 0) & (other <= -1), 0.0, _op("special_xlog1py", grad, other))


def igamma_other_backward(grad, self, other):
    """d P(a, x) / dx = x^(a-1) e^-x / Gamma(a)."""
    return grad * ((self - 1) * other.log() - other - self.lgamma()).exp()


# ---- mvlgamma: the multivariate log-gamma function ------------------------------------------------------------

def _mvlgamma_meta(a, p):
    _require_tensor("mvlgamma", a)
    if a.dtype is dt.bool:
        raise RuntimeError("The input tensor may not be a boolean tensor. (mvlgamma: convert it with .float())")
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1 (mvlgamma got p = {p})")
    _kernel_check(_refuse("mvlgamma", half=True), a.dtype, FLOAT(a.dtype))
    return a._size, FLOAT(a.dtype)


def _mvlgamma(xp, x, p):
    """sum over j < p of lgamma(x - j/2), plus p (p - 1) / 4 log(pi)."""
    total = xp.zeros_like(x)
    for j in reversed(range(p)):
        total += _lgamma(xp, x - j / 2)
    return total + p * (p - 1) / 4 * math.log(math.pi)


structured("mvlgamma(Tensor self, int p) -> Tensor", _mvlgamma_meta, _computed(_mvlgamma), pointwise=True)


def mvlgamma_backward(grad, self, p):
    """grad times the sum over j < p of digamma(self - j/2)."""
    total = (self - (p - 1) / 2).digamma()
    for j in reversed(range(p - 1)):
        total = total + (self - j / 2).digamma()
    return grad * total


# ---- derivatives -----------------------------------------------------------------------------------------------

_HELPERS = {
    "i1e_backward": i1e_backward, "not_implemented": not_implemented, "zeta_other_backward": zeta_other_backward,
    "xlog1py_self_backward": xlog1py_self_backward,
    "igamma_other_backward": igamma_other_backward, "mvlgamma_backward": mvlgamma_backward,
    "_op": _op, "M_2_SQRTPI": 2 / math.sqrt(math.pi), "SQRT_2PI": math.sqrt(2 * math.pi),
}
_derivative = partial(derivative, helpers=_HELPERS)

nondifferentiable(*(name for name, _, _, formula in UNARY if formula is None))
for _name, _, _, _formula in UNARY:
    if _formula is not None:
        _derivative(_name, name=_NODE_NAMES.get(_name), self=_formula)


def _scalar_overload_name(node):
    """PyTorch's node names for (Tensor, Tensor), (Scalar, Tensor) and (Tensor, Scalar) calls: ...0, 1, 2."""
    return lambda args: node + ("1" if not _is_tensor(args[0]) else "0" if _is_tensor(args[1]) else "2")


_derivative("special_zeta", name=_scalar_overload_name("SpecialZetaBackward"), scalar_inputs=("self", "other"),
            self="not_implemented('zeta')", other="zeta_other_backward(grad, self, other)")
_derivative("special_xlog1py", name=_scalar_overload_name("SpecialXlog1PyBackward"), scalar_inputs=("self", "other"),
            self="xlog1py_self_backward(grad, self, other)", other="grad * self / (other + 1)")
_derivative("igamma", self="not_implemented('igamma: input')", other="igamma_other_backward(grad, self, other)")
_derivative("igammac", self="not_implemented('igammac: input')", other="-igamma_other_backward(grad, self, other)")
_derivative("mvlgamma", self="mvlgamma_backward(grad, self, p)")
