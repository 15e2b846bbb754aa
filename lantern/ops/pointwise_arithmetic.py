"""Arithmetic: add, sub and rsub (with alpha), mul, div (with rounding modes), pow and float_power, each
with its derivative.

>>> a = lantern.tensor([1., 2.])
>>> (a + a * 2).tolist(), lantern.div(a, 2, rounding_mode="floor").tolist(), (a ** 3).tolist()
([3.0, 6.0], [0.0, 1.0], [1.0, 8.0])
"""
import numpy as np

from ..core import dtype as dt
from ..core.numpy_ufuncs import fast_ufunc
from ..core.reference import mode, specialisation
from ..core.tensor_impl import _STRIDES_CACHE, TensorImpl
from . import complex_arithmetic
from .meta_util import broadcast_shapes, pointwise_binary
from .derivative import derivative
from .dispatcher import call
from .derivative_specialisation import FLOAT_ARRAY_DTYPES, specialise_derivative
from .registry import composite, get, structured
from .pointwise_common import FLOAT, KEEP, _binary_meta, _is_tensor, _not_for, _ufunc_impl, as_dtype


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


# the fast path's complex test compares lantern's own NumPy dtypes by identity: dtype.kind makes a string (~40 ns)
_COMPLEX64, _COMPLEX128 = dt.complex64.np, dt.complex128.np


def _add_sub_impl(name):
    """add or subtract (the ufunc xp.<name>) with `alpha` scaling the second operand."""
    numpy_ufunc = fast_ufunc(name, 2)

    def impl(xp, out, dtype, a, b, alpha=1):
        # the common case: no casts, no scaling, not complex (NumPy's ufunc found once; out passed by position,
        # which NumPy parses faster than out=)
        if alpha.__class__ is int and alpha == 1 and getattr(a, "dtype", None) is dtype and \
                getattr(b, "dtype", None) is dtype and dtype is not _COMPLEX64 and dtype is not _COMPLEX128:
            (numpy_ufunc if xp is np else getattr(xp, name))(a, b, out)
            return
        if getattr(a, "dtype", None) is not dtype:
            a = as_dtype(xp, a, dtype)
        if getattr(b, "dtype", None) is not dtype:
            b = as_dtype(xp, b, dtype)
        # complex: PyTorch's kernel always computes a + b * alpha as a complex product, even for alpha 1, so an
        # infinite part of b meets a zero and gives nan ((inf+0j) * (1+0j) is inf+nanj)
        if alpha != 1 or dtype.kind == "c":
            b = xp.multiply(b, as_dtype(xp, alpha, dtype), dtype=dtype, casting="unsafe")
        getattr(xp, name)(a, b, out=out, dtype=dtype, casting="unsafe")
    return impl


_sub_impl = _add_sub_impl("subtract")
structured("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", _add_meta, _add_sub_impl("add"),
           pointwise=True)
structured("sub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", _sub_meta, _sub_impl, pointwise=True)


def _rsub_meta(a, b, alpha=1):
    if not _is_tensor(a):  # PyTorch declares no rsub with a number first (2 - t is t.__rsub__(2))
        raise TypeError(f"rsub() received an invalid combination of arguments - got ({type(a).__name__}, "
                        f"{type(b).__name__}), but expected one of: (Tensor input, Tensor other, *, Number alpha) or "
                        "(Tensor input, Number other, Number alpha)")
    return _sub_meta(b, a, alpha)


def _rsub_impl(xp, out, dtype, a, b, alpha=1):
    _sub_impl(xp, out, dtype, b, a, alpha)


structured("rsub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", _rsub_meta, _rsub_impl,
           inplace=False, out=False, pointwise=True, method=False)


derivative("add", self="grad", other="grad if alpha == 1 else grad * conj(alpha)")
derivative("sub", self="grad", other="-grad if alpha == 1 else -grad * conj(alpha)")
derivative("rsub", name=lambda args: "RsubBackward0" if _is_tensor(args[1]) else "RsubBackward1",
           scalar_inputs=("other",), self="-grad if alpha == 1 else -grad * conj(alpha)", other="grad")


structured("mul(Tensor self, Tensor other) -> Tensor", _binary_meta("mul", KEEP, None, True),
           _ufunc_impl("multiply", 2, complex_kernel=complex_arithmetic.multiply), pointwise=True)


derivative("mul", self="grad * conj(other)", other="grad * conj(self)")


def row_major_floats(grad, other):
    """The operands mul_backward_on_arrays serves: float arrays of one dtype on one array backend (on_float_arrays),
    `other` of grad's shape or 0-dim, each row-major or broadcast (strides all 0), so that `grad * other` is
    row-major too. Written out (on_float_arrays and has_cached_contiguous_strides in place): it runs twice per mul
    backward, and each call saved there is ~2% of a small backward pass."""
    if (not isinstance(other, TensorImpl) or grad._backend.xp is None or grad.dtype not in FLOAT_ARRAY_DTYPES
            or other._backend is not grad._backend or other.dtype is not grad.dtype):
        return False
    if other._size != grad._size and other._size:
        return False
    row_major = _STRIDES_CACHE.get(grad._size)
    return ((grad._stride is row_major or not any(grad._stride))
            and (other._stride is row_major or not any(other._stride)))


@specialisation(replaces="mul's derivative grad * conj(other)",
                when="backward without create_graph, fast paths on; row_major_floats(grad, other)",
                parity_test="tests/test_ops_specialisations.py::test_mul_backward_on_arrays", ops=("mul",))
def mul_backward_on_arrays(grad, other):
    """grad * other as one array multiply into a new row-major tensor, without dispatching `mul` (other is real:
    its conj is itself)."""
    backend = grad._backend
    out = backend.empty(grad._size, grad.dtype)
    backend.xp.multiply(backend.array(grad), backend.array(other), out=backend.array(out))
    return out


specialise_derivative("mul", {
    "grad * conj(other)": ("mul_backward_on_arrays(grad, other)", "row_major_floats(grad, other)"),
    "grad * conj(self)": ("mul_backward_on_arrays(grad, self)", "row_major_floats(grad, self)"),
}, helpers={"mul_backward_on_arrays": mul_backward_on_arrays, "row_major_floats": row_major_floats})


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


derivative("div", name=lambda args: "DivBackward0" if args[2] is None else "DivBackward2",
           self="grad / conj(other) if rounding_mode is None else zeros_like(grad)",
           other="-grad * conj(self / other / other) if rounding_mode is None else zeros_like(grad)")


# ---- pow: the kernel is xp.power; small exponents take a named specialisation (x*x*x is ~16x faster) -------

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


def small_exponent(a, b, dtype):
    """The calls pow_small_exponent serves: a tensor to a real number among 0, 1, 2, 3, and for float or complex
    results also 0.5 and -1."""
    if hasattr(b, "shape") or type(b) is complex or not hasattr(a, "shape"):
        return False
    return b in (0, 1, 2, 3) or (b in (0.5, -1) and dtype.kind in "fc")


@specialisation(replaces="pow's kernel xp.power for small scalar exponents",
                when="fast paths on; small_exponent(a, b, dtype)",
                parity_test="tests/test_ops_specialisations.py::test_pow_small_exponent", ops=("pow",))
def pow_small_exponent(xp, out, dtype, a, b):
    """a ** b without a general power: multiplies for 2 and 3 (NumPy's float power is ~16x slower than x*x*x), a
    copy for 1 and 0, sqrt for 0.5, reciprocal for -1. x*x*x rounds twice where power rounds once, so a cube may
    differ from xp.power in the last bit (PyTorch's CPU kernel also multiplies)."""
    if a.dtype is not dtype:
        a = as_dtype(xp, a, dtype)
    if b == 2:
        xp.multiply(a, a, out=out, casting="unsafe")
    elif b == 3:
        xp.multiply(a * a, a, out=out, casting="unsafe")
    elif b == 1:
        xp.copyto(out, a, casting="unsafe")
    elif b == 0:
        xp.copyto(out, 1, casting="unsafe")
    elif b == 0.5:
        xp.sqrt(a, out=out, casting="unsafe")
    else:
        xp.reciprocal(a, out=out, casting="unsafe")


def _complex_pow_number_exponent(xp, out, base, exponent):
    """base ** exponent (a number) as ATen's complex kernel: 0 gives 1 and 1 a copy, whatever the base; 2, 3 and -2
    multiply (and divide), 0.5, -0.5 and -1 take sqrt and reciprocals; any other exponent is C's cpow."""
    if exponent == 0:
        out[...] = 1
    elif exponent == 1:
        xp.copyto(out, base)
    elif exponent in (2, 3, -2):
        square = out if exponent == 2 else xp.empty_like(out)
        complex_arithmetic.multiply(xp, square, base, base)
        if exponent == 3:
            complex_arithmetic.multiply(xp, out, square, base)
        elif exponent == -2:
            xp.true_divide(1, square, out=out)
    elif exponent in (0.5, -0.5):
        xp.sqrt(base, out=out)
        if exponent == -0.5:
            xp.true_divide(1, out, out=out)
    elif exponent == -1:
        xp.true_divide(1, base, out=out)
    else:
        xp.copyto(out, complex_arithmetic.power(xp, base, xp.asarray(exponent, base.dtype)))


def _complex_pow(xp, out, dtype, a, b):
    """a ** b in complex `dtype` as ATen computes it: a number exponent as _complex_pow_number_exponent; a base of
    the number 1 gives 1; otherwise C's cpow elementwise (complex_arithmetic.power, where NumPy's power differs at
    zeros and infinities)."""
    result = out if out.dtype is dtype else xp.empty(out.shape, dtype)
    base = xp.asarray(a, dtype)
    if not hasattr(b, "shape"):
        _complex_pow_number_exponent(xp, result, base, b)
    elif not hasattr(a, "shape") and a == 1:
        result[...] = 1
    else:
        xp.copyto(result, complex_arithmetic.power(xp, base, xp.asarray(b, dtype)))
    if result is not out:
        xp.copyto(out, result, casting="unsafe")


def _pow_impl(xp, out, dtype, a, b):
    """a ** b, both cast to the result dtype; integers to negative powers as PyTorch's integer loop; complex
    powers as ATen's complex kernel (_complex_pow)."""
    if dtype.kind == "c":
        return _complex_pow(xp, out, dtype, a, b)
    if mode.fast and small_exponent(a, b, dtype):
        return pow_small_exponent(xp, out, dtype, a, b)
    a, b = as_dtype(xp, a, dtype), as_dtype(xp, b, dtype)
    if dtype.kind in "iu" and xp.any(b < 0):
        return _int_power(xp, out, a, b)
    xp.power(a, b, out=out, casting="unsafe")


structured("pow(Tensor self, Tensor exponent) -> Tensor", _pow_meta, _pow_impl, pointwise=True)


derivative("pow", name=lambda args: ("PowBackward1" if _is_tensor(args[1]) else "PowBackward0")
           if _is_tensor(args[0]) else "PowBackward2", scalar_inputs=("self", "exponent"),
           self="pow_backward_self(grad, self, exponent)",
           exponent="pow_backward_exponent(grad, self, exponent, result)")


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
