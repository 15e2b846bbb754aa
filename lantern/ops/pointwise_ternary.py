"""Pointwise ops of three operands: clamp (with clamp_min, clamp_max and nan_to_num beside it), where,
lerp, addcmul and addcdiv, each with its derivative.

>>> x = lantern.tensor([-2., 0.5, 3.])
>>> x.clamp(-1, 1).tolist(), lantern.lerp(x, lantern.zeros(3), 0.5).tolist()
([-1.0, 0.5, 1.0], [-1.0, 0.25, 1.5])
"""

import numpy as np

from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .meta_util import operands_result_type, pointwise_shape
from .derivative import derivative
from .registry import structured
from .pointwise_common import _computed, _is_tensor, _require_tensor, as_dtype
from ..core import user_warnings


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
        user_warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
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


derivative("clamp", name=lambda args: "ClampBackward0" if _is_tensor(args[1]) or _is_tensor(args[2]) else
           "ClampBackward1", scalar_inputs=(("min", "max"),), self="clamp_backward(grad, self, min, max)",
           min="clamp_bound_backward(grad, self, min, max, True)",
           max="clamp_bound_backward(grad, self, max, min, False)")
derivative("where", self="where_zero(condition, grad)", other="where_zero(condition.logical_not(), grad)")


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


derivative("nan_to_num", self="grad * self.isfinite()")
derivative("clamp_min", name=lambda args: "ClampMinBackward1" if _is_tensor(args[1]) else "ClampMinBackward0",
           scalar_inputs=("min",), self="clamp_backward(grad, self, min, None)",
           min="clamp_bound_backward(grad, self, min, None, True)")
derivative("clamp_max", name=lambda args: "ClampMaxBackward1" if _is_tensor(args[1]) else "ClampMaxBackward0",
           scalar_inputs=("max",), self="clamp_backward(grad, self, None, max)",
           max="clamp_bound_backward(grad, self, max, None, False)")


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


def lerp_arrays(xp, a, end, weight, out=None):
    """a + weight * (end - a) by PyTorch's two-sided formula, exact at weight 0 (gives a) and at weight 1 (gives
    end). A number weight (the optimizers' moving averages) picks its branch once and may write into `out` (`a`
    itself, for an in-place update)."""
    diff = xp.asarray(xp.subtract(end, a))  # NumPy gives a 0-d result as a scalar, which out= cannot take
    if not isinstance(weight, (int, float)):
        return xp.where(xp.abs(weight) < 0.5, a + weight * diff, end - diff * (1 - weight))
    target = diff if out is None else out
    if abs(weight) < 0.5:
        diff *= weight
        return xp.add(a, diff, out=target)
    diff *= 1 - weight
    return xp.subtract(end, diff, out=target)


structured("lerp(Tensor self, Tensor end, Tensor weight) -> Tensor", _lerp_meta, _computed(lerp_arrays, 3),
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


derivative("lerp", name=lambda args: "LerpBackward1" if _is_tensor(args[2]) else "LerpBackward0",
           scalar_inputs=("weight",), self="grad * conj(1 - weight)", end="grad * conj(weight)",
           weight="grad * conj(end - self)")
derivative("addcmul", self="grad", tensor1="grad * conj(tensor2 * value)", tensor2="grad * conj(tensor1 * value)")
derivative("addcdiv", self="grad", tensor1="grad * conj(value / tensor2)",
           tensor2="-grad * conj(value * tensor1 / (tensor2 * tensor2))")
