"""torch.nn.functional's pointwise activations: op records with derivatives, plus the Python frontends
(`relu(input, inplace=False)`, `gelu(...)`) that lantern.nn.functional exports. softmax, log_softmax, softmin, glu
and prelu (activations along a dim or with a weight) live in nn_activation_softmax.

- Activations are pointwise structured ops (so `relu_`, `elu.out`, ... exist) whose NumPy kernels compute float16
  and bfloat16 in float32, as PyTorch's CPU kernels do; their derivatives are formulas in lantern ops (double
  backward works).

>>> import lantern.nn.functional as F
>>> F.relu(lantern.tensor([-1.0, 2.0])).tolist(), F.hardtanh(lantern.tensor([-3.0, 0.5])).tolist()
([0.0, 2.0], [-1.0, 0.5])
"""
import math
import numpy as np

from ..autograd.grad_mode import is_grad_enabled
from ..core import dtype as dt
from ..core import intra_op
from ..core.reference import mode, specialisation
from .numba_kernels import optional_kernels
from .nn_common import _HALF, _op, _where, _wide
from .pointwise_common import _require_tensor, special
from .registry import composite, get, structured
from .derivative import Derivative, derivative
from .derivative_specialisation import on_float_arrays, specialise_derivative
from .nn_activation_compiled import (gelu_backward_applies, gelu_backward_on_arrays, gelu_compiled,
                                     gelu_compiled_applies)
from ..core.overridable import overridable


__all__ = [
    "relu", "relu_", "gelu", "silu", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu", "celu_",
    "softplus", "softsign", "hardtanh", "hardtanh_", "relu6", "hardsigmoid", "hardswish", "mish", "tanhshrink",
    "softshrink", "hardshrink", "threshold", "threshold_", "logsigmoid", "sigmoid", "tanh",
]


# ---- pointwise activations ---------------------------------------------------------------------------------

def _float_only(name, kernel):
    """Meta of an activation defined for floating inputs only (PyTorch's dtype dispatch refuses the rest)."""
    def meta(self, *params):
        _require_tensor(name, self)
        if self.dtype.category != dt.FLOATING:
            raise NotImplementedError(f'"{kernel}" not implemented for \'{self.dtype.legacy}\'')
        return self._size, self.dtype
    return meta


# relu and hardtanh check their input before any kernel (relu is clamp_min, hardtanh clamp, in ATen)
_CLAMP_BASED_BOOL_ERRORS = {"relu": "Boolean inputs not supported for relu",
                            "hardtanh": "Bool inputs not supported for hardtanh"}


def _real_only(name):
    """Meta of an activation that also runs on integers (relu, hardtanh, threshold), but not bool or complex."""
    def meta(self, *params):
        _require_tensor(name, self)
        if self.dtype is dt.bool and name in _CLAMP_BASED_BOOL_ERRORS:
            raise RuntimeError(_CLAMP_BASED_BOOL_ERRORS[name])
        if self.dtype.is_complex and name in _CLAMP_BASED_BOOL_ERRORS:
            raise NotImplementedError("clamp is not supported for complex types")
        if self.dtype is dt.bool or self.dtype.is_complex:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{self.dtype.legacy}\'')
        return self._size, self.dtype
    return meta


def _activation(fn):
    """An impl computing fn(x, *params) in the widened dtype and writing it into the output."""
    def impl(xp, out, dtype, x, *params):
        xp.copyto(out, fn(xp, _wide(x), *params), casting="unsafe")
    impl.__name__ = fn.__name__
    return impl


def _relu(xp, x):
    return xp.maximum(x, 0)


def _relu_impl(xp, out, dtype, x):
    """max(x, 0), written straight into the output (relu_: into x itself) without a temporary; row-major arrays in
    flat ranges on the intra-op threads."""
    if x.dtype == out.dtype and x.dtype not in _HALF:
        if x.flags.c_contiguous and out.flags.c_contiguous:
            x_flat, out_flat = x.reshape(-1), out.reshape(-1)
            intra_op.parallel_chunks(out.size, lambda start, stop: xp.maximum(x_flat[start:stop], 0,
                                                                              out=out_flat[start:stop]),
                                     grain=intra_op.ELEMENTS_PER_CHUNK)
        else:
            xp.maximum(x, 0, out=out)
    else:
        xp.copyto(out, _relu(xp, _wide(x)), casting="unsafe")


def contiguous_floats(grad, result):
    """The tensors relu_backward_on_arrays serves: row-major float arrays (on_float_arrays) of one shape."""
    return on_float_arrays(grad, result) and grad.is_contiguous() and result.is_contiguous()


@specialisation(replaces="relu's derivative where_zero(result > 0, grad)",
                when="backward without create_graph, fast paths on; contiguous_floats(grad, result)",
                parity_test="tests/test_ops_specialisations.py::test_relu_backward_on_arrays", ops=("relu",))
def relu_backward_on_arrays(grad, result):
    """grad where relu's output is positive, else 0, in three array calls instead of two ops: grad's bits ANDed with
    an all-ones/all-zeros mask (branch-free, and a nan or inf in grad is zeroed where the mask is off, as `where`
    does). Flat ranges run on the intra-op threads."""
    backend = grad._backend
    xp = backend.xp
    out = backend.empty(grad._size, grad.dtype)
    bits = np.dtype(f"i{grad.dtype.itemsize}")
    r, g, o = (backend.array(t).reshape(-1) for t in (result, grad, out))

    def masked(first, last):
        for start in range(first, last, _MASK_CHUNK):  # the masks' memory stays small however large the tensor
            part = slice(start, min(start + _MASK_CHUNK, last))
            mask = xp.greater(r[part], 0).view(np.int8)
            xp.negative(mask, out=mask)
            xp.bitwise_and(g[part].view(bits), mask.astype(bits), out=o[part].view(bits))

    def compiled(first, last):
        relu_backward_compiled(g[first:last], r[first:last], o[first:last])

    run = compiled if compiled_relu_backward_applies(xp, g) else masked
    intra_op.parallel_chunks(len(o), run, grain=intra_op.ELEMENTS_PER_CHUNK)
    return out


_MASK_CHUNK = 1 << 18


def compiled_relu_backward_applies(xp, grad):
    """Whether relu_backward_compiled serves relu's backward on these (row-major) arrays: float32 or float64 NumPy
    arrays, numba installed, not reference mode."""
    return (mode.fast and xp is np and grad.dtype in (np.float32, np.float64)
            and optional_kernels("nn_activation_numba") is not None)


@specialisation(replaces="relu_backward_on_arrays's mask (compare, negate, widen, AND: four NumPy passes)",
                when="compiled_relu_backward_applies(xp, grad): float32/float64 NumPy arrays, numba installed",
                parity_test="tests/test_nn_relu_compiled.py::test_compiled_relu_backward_matches_the_mask",
                ops=("relu",))
def relu_backward_compiled(grad, result, out):
    """out = grad where result > 0, else 0, on 1-D ranges in one numba pass (nn_activation_numba.relu_backward):
    the mask version's bits, nan and inf in grad included."""
    optional_kernels("nn_activation_numba").relu_backward(grad, result, out)


def _leaky_relu(xp, x, negative_slope=0.01):
    return xp.where(x > 0, x, x * negative_slope)


def _elu(xp, x, alpha=1, scale=1, input_scale=1):
    return xp.where(x > 0, x * scale, xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale))


def _celu(xp, x, alpha=1.0):
    return _elu(xp, x, alpha, 1, 1 / alpha)


def _gelu(xp, x, approximate="none"):
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + xp.tanh(inner))
    return x * special(xp).ndtr(x)


def _gelu_impl(xp, out, dtype, x, approximate="none"):
    """gelu written into the output: the readable kernel, or gelu_compiled (the same bits) where it applies."""
    if gelu_compiled_applies(xp, out, x, approximate):
        gelu_compiled(x, out)
    else:
        _activation(_gelu)(xp, out, dtype, x, approximate)


def _silu(xp, x):
    if x.dtype.kind == "c":  # expit has no complex loop; x / (1 + e^-x) is the same function
        return x / (1 + xp.exp(-x))
    return x * special(xp).expit(x)


def _silu_meta(self):
    """silu takes floating and complex inputs (PyTorch's silu_cpu has a complex kernel but no complex gradient)."""
    if self.dtype.is_complex:
        return self._size, self.dtype
    return _float_only("silu", "silu_cpu")(self)


def _softplus(xp, x, beta=1, threshold=20):
    scaled = x * beta
    return xp.where(scaled > threshold, x, xp.log1p(xp.exp(scaled)) / beta)


def _hardtanh(xp, x, min_val=-1, max_val=1):
    return xp.minimum(xp.maximum(x, min_val), max_val)


def _hardsigmoid(xp, x):
    return xp.minimum(xp.maximum(x + 3, 0), 6) / 6


def _hardswish(xp, x):
    return x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6


def _mish(xp, x):
    return x * xp.tanh(xp.log1p(xp.exp(x)))


def _softshrink(xp, x, lambd=0.5):
    return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, x * 0))  # x * 0: nan stays nan


def _hardshrink(xp, x, lambd=0.5):
    return xp.where((x >= -lambd) & (x <= lambd), 0, x)


def _threshold(xp, x, threshold, value):
    return xp.where(x <= threshold, value, x)


def _log_sigmoid(xp, x):
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


def _normal_cdf(xp, x):
    return special(xp).ndtr(x)


def _check_lambd(name):
    """softshrink refuses a negative lambda (hardshrink accepts it, as in PyTorch)."""
    meta = _float_only(name, f"{name}_check")

    def check(self, lambd=0.5):
        shape, dtype = meta(self)
        if lambd < 0:
            raise RuntimeError(f"lambda must be in range [0, {dt.finfo(dtype).max:.6g}] for input dtype "
                               f"{dtype.legacy.replace('Tensor', '')}, but found {lambd} ({name}: pass lambd >= 0)")
        return shape, dtype
    return check


def _gelu_meta(self, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh. (gelu: got {approximate!r})")
    return _float_only("gelu", "GeluKernelImpl")(self)


def _celu_meta(self, alpha=1.0):
    shape, dtype = _float_only("celu", "elu_cpu")(self)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError (celu: alpha must not be 0; it divides the input)")
    return shape, dtype


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946

# schema, kernel, meta
ACTIVATIONS = [
    ("relu(Tensor self) -> Tensor", _relu, _real_only("relu")),
    ("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", _leaky_relu,
     _float_only("leaky_relu", "leaky_relu_cpu")),
    ("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor", _elu,
     _float_only("elu", "elu_cpu")),
    ("celu(Tensor self, Scalar alpha=1.0) -> Tensor", _celu, _celu_meta),
    ("gelu(Tensor self, *, str approximate='none') -> Tensor", _gelu, _gelu_meta),
    ("silu(Tensor self) -> Tensor", _silu, _silu_meta),
    ("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", _softplus,
     _float_only("softplus", "softplus_cpu")),
    ("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", _hardtanh, _real_only("hardtanh")),
    ("hardsigmoid(Tensor self) -> Tensor", _hardsigmoid, _float_only("hardsigmoid", "hardsigmoid_cpu")),
    ("hardswish(Tensor self) -> Tensor", _hardswish, _float_only("hardswish", "hardswish_cpu")),
    ("mish(Tensor self) -> Tensor", _mish, _float_only("mish", "mish_cpu")),
    ("softshrink(Tensor self, Scalar lambd=0.5) -> Tensor", _softshrink, _check_lambd("softshrink")),
    ("hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", _hardshrink, _float_only("hardshrink", "hardshrink_cpu")),
    ("threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor", _threshold, _real_only("threshold")),
    ("log_sigmoid(Tensor self) -> Tensor", _log_sigmoid, _float_only("log_sigmoid", "log_sigmoid_cpu")),
    ("_normal_cdf(Tensor self) -> Tensor", _normal_cdf, _float_only("_normal_cdf", "ndtr")),
]

_NO_INPLACE = {"softshrink", "hardshrink", "log_sigmoid", "_normal_cdf"}
_TENSOR_METHODS = {"relu", "hardshrink"}  # the others are functions only in PyTorch (no Tensor.gelu)
for _schema, _fn, _meta in ACTIVATIONS:
    _name = _schema.partition("(")[0]
    _impl = {_relu: _relu_impl, _gelu: _gelu_impl}.get(_fn) or _activation(_fn)
    structured(_schema, _meta, _impl, inplace=_name not in _NO_INPLACE,
               out=_name != "_normal_cdf", pointwise=True, method=_name in _TENSOR_METHODS)


def _elu_grad(grad, self, alpha, scale, input_scale):
    negative = grad * ((self * input_scale).exp() * (input_scale * alpha * scale))
    return _where(self > 0, grad * scale, negative)


def _elu_result_grad(grad, result, alpha, scale, input_scale):
    """elu's gradient from its output (the in-place form has no input left): where y <= 0, dy/dx = s_in (y + a s)."""
    return _where(result > 0, grad * scale, grad * ((result + alpha * scale) * input_scale))


def _gelu_grad(grad, self, approximate):
    if approximate == "tanh":
        x2 = self * self
        t = ((self + x2 * self * 0.044715) * _SQRT_2_OVER_PI).tanh()
        inner_grad = (x2 * (3 * 0.044715) + 1) * _SQRT_2_OVER_PI
        return grad * ((t + 1) * 0.5 + self * 0.5 * (1 - t * t) * inner_grad)
    pdf = (self * self * -0.5).exp() * _INV_SQRT_2PI
    return grad * (_op("_normal_cdf", self) + self * pdf)


def _silu_grad(grad, self):
    s = self.sigmoid()
    return grad * s * (self * (1 - s) + 1)


def _mish_grad(grad, self):
    t = _op("softplus", self, 1, 20).tanh()
    return grad * (t + self * self.sigmoid() * (1 - t * t))


def _hardswish_grad(grad, self):
    middle = grad * (self / 3 + 0.5)
    return _where(self < -3, 0.0, _where(self <= 3, middle, grad))


_HELPERS = {name: globals()[name] for name in (
    "_where", "_elu_grad", "_elu_result_grad", "_gelu_grad", "_silu_grad", "_mish_grad", "_hardswish_grad",
    "_INV_SQRT_2PI",
)}

derivative("relu", self="where_zero(result > 0, grad)")
specialise_derivative("relu", {"where_zero(result > 0, grad)": ("relu_backward_on_arrays(grad, result)",
                                                               "contiguous_floats(grad, result)")},
                      helpers={"relu_backward_on_arrays": relu_backward_on_arrays,
                               "contiguous_floats": contiguous_floats})
derivative("leaky_relu", self="_where(self > 0, grad, grad * negative_slope)", helpers=_HELPERS)
derivative("elu", self="_elu_grad(grad, self, alpha, scale, input_scale)", helpers=_HELPERS)
get("elu_").derivative = Derivative(get("elu_"), {"self": "_elu_result_grad(grad, result, alpha, scale, input_scale)"},
                                   name="EluBackward1", helpers=_HELPERS)  # in place: from the output, as PyTorch
derivative("celu", self="_elu_grad(grad, self, alpha, 1, 1 / alpha)", helpers=_HELPERS)
derivative("gelu", self="_gelu_grad(grad, self, approximate)", helpers=_HELPERS)
specialise_derivative("gelu", {"_gelu_grad(grad, self, approximate)": (
    "gelu_backward_on_arrays(grad, self, approximate)", "gelu_backward_applies(grad, self, approximate)")},
    helpers={**_HELPERS, "gelu_backward_on_arrays": gelu_backward_on_arrays,
             "gelu_backward_applies": gelu_backward_applies})
derivative("silu", self="_silu_grad(grad, self)", helpers=_HELPERS)
derivative("softplus", self="_where(self * beta > threshold, grad, grad * (self * beta).sigmoid())",
           helpers=_HELPERS)
derivative("hardtanh", self="where_zero((self > min_val) & (self < max_val), grad)")
derivative("hardsigmoid", self="where_zero((self > -3) & (self < 3), grad / 6)")
derivative("hardswish", self="_hardswish_grad(grad, self)", helpers=_HELPERS)
derivative("mish", self="_mish_grad(grad, self)", helpers=_HELPERS)
derivative("softshrink", self="where_zero((self.abs() <= lambd).logical_not(), grad)")  # nan passes grad
derivative("hardshrink", self="where_zero(self.abs() > lambd, grad)")
derivative("threshold", self="where_zero(self > threshold, grad)")
derivative("log_sigmoid", self="grad * (-self).sigmoid()")
derivative("_normal_cdf", name="NormalCdfBackward0", self="grad * (self * self * -0.5).exp() * _INV_SQRT_2PI",
           helpers=_HELPERS)


# ---- nn.functional frontends ---------------------------------------------------------------------------------

@overridable
def relu(input, inplace=False):
    """max(input, 0), elementwise."""
    return _op("relu_" if inplace else "relu", input)


def relu_(input):
    return _op("relu_", input)


@overridable
def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _op("leaky_relu_" if inplace else "leaky_relu", input, negative_slope)


@overridable
def leaky_relu_(input, negative_slope=0.01):
    return _op("leaky_relu_", input, negative_slope)


@overridable
def elu(input, alpha=1.0, inplace=False):
    return _op("elu_" if inplace else "elu", input, alpha, 1, 1)


@overridable
def elu_(input, alpha=1.0):
    return _op("elu_", input, alpha, 1, 1)


def selu(input, inplace=False):
    """scale * elu(input, alpha) with the self-normalising constants (PyTorch computes it as elu: EluBackward0)."""
    return _op("elu_" if inplace else "elu", input, _SELU_ALPHA, _SELU_SCALE, 1)


def selu_(input):
    return selu(input, inplace=True)


@overridable
def celu(input, alpha=1.0, inplace=False):
    return _op("celu_" if inplace else "celu", input, alpha)


def celu_(input, alpha=1.0):
    return _op("celu_", input, alpha)


@overridable
def gelu(input, approximate="none"):
    """x * Φ(x), or its tanh approximation with approximate='tanh'."""
    return _op("gelu", input, approximate)


@overridable
def silu(input, inplace=False):
    """x * sigmoid(x), for floating and complex inputs; a complex one has no gradient (as in PyTorch)."""
    if input.dtype.is_complex and input.requires_grad and is_grad_enabled():
        raise RuntimeError("silu does not support automatic differentiation for outputs with complex dtype.")
    return _op("silu_" if inplace else "silu", input)


@overridable
def mish(input, inplace=False):
    return _op("mish_" if inplace else "mish", input)


@overridable
def softplus(input, beta=1.0, threshold=20.0):
    return _op("softplus", input, beta, threshold)


@overridable
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _op("hardtanh_" if inplace else "hardtanh", input, min_val, max_val)


@overridable
def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


@overridable
def relu6(input, inplace=False):
    """hardtanh(input, 0, 6), as PyTorch computes it (HardtanhBackward0)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    return _op("hardsigmoid_" if inplace else "hardsigmoid", input)


def hardswish(input, inplace=False):
    return _op("hardswish_" if inplace else "hardswish", input)


@overridable
def softshrink(input, lambd=0.5):
    return _op("softshrink", input, lambd)


@overridable
def hardshrink(input, lambd=0.5):
    return _op("hardshrink", input, lambd)


@overridable
def threshold(input, threshold, value, inplace=False):
    return _op("threshold_" if inplace else "threshold", input, threshold, value)


def threshold_(input, threshold, value):
    return _op("threshold_", input, threshold, value)


@overridable
def logsigmoid(input):
    """log(sigmoid(input)), computed as min(x, 0) - log1p(exp(-|x|)) so it never overflows."""
    return _op("log_sigmoid", input)


@overridable
def tanhshrink(input):
    """input - tanh(input) (a composite in PyTorch too)."""
    return input - input.tanh()


@overridable
def softsign(input):
    """input / (1 + |input|) (a composite in PyTorch too)."""
    return input / (input.abs() + 1)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


composite("selu", selu, method=False)
for _fn in (selu_, relu_, celu_, threshold_):  # torch.relu_ and friends: in-place forms at top level
    composite(_fn.__name__, _fn, method=False)
