"""torch.nn.functional outside convolution and pooling: activations, softmax family, linear/bilinear, losses,
normalization, dropout, embedding, distances and attention. Op records with derivatives, plus the Python frontends
(`relu(input, inplace=False)`, `cross_entropy(...)`) that lantern.nn.functional exports.

- Activations are pointwise structured ops (so `relu_`, `elu.out`, ... exist) whose NumPy kernels compute float16
  and bfloat16 in float32, as PyTorch's CPU kernels do; their derivatives are formulas in lantern ops (double
  backward works).
- softmax/log_softmax subtract the row maximum first; losses are kernels in their stable forms (log-sum-exp,
  log1p(exp(-|x|))) or, where PyTorch composes them too (cross_entropy, l1, kl_div, the margin losses), composites.
  cross_entropy of 2-D logits with class indices, no weight and no smoothing is one fused op (log-sum-exp minus the
  target logit; backward softmax - one_hot), its node named NllLossBackward0 as PyTorch's graph top is.
- native_layer_norm's backward is one kernel from the saved mean and rstd (_layer_norm_input_backward), whose own
  derivative recomputes the statistics from the input (so it is differentiable again); native_batch_norm's backward
  formulas recompute them too; group_norm and instance_norm compose these.

>>> import lantern.nn.functional as F
>>> x = lantern.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
>>> F.softmax(x, dim=1).sum(1).tolist()
[1.0, 1.0]
>>> round(F.cross_entropy(x, lantern.tensor([2, 0])).item(), 4)
0.7531
"""
import math
import warnings

import numpy as np
from scipy import sparse, special

from ..core import dtype as dt
from ..core.tensor_impl import TensorImpl
from .dispatcher import call
from .meta_util import pointwise_binary, shape_str, wrap_dim
from .pointwise import _require_tensor
from .registry import COMPOSITES as _COMPOSITES, composite, custom, get, structured
from .derivative import Derivative, derivative, nondifferentiable

__all__ = [
    "relu", "relu_", "softmax", "log_softmax", "softmin", "linear", "gelu", "silu", "leaky_relu", "leaky_relu_",
    "elu", "elu_", "selu", "selu_", "celu", "celu_", "softplus", "softsign", "hardtanh", "hardtanh_", "relu6",
    "hardsigmoid", "hardswish", "mish", "tanhshrink", "softshrink", "hardshrink", "threshold", "threshold_", "glu",
    "logsigmoid", "sigmoid", "tanh", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
    "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "prelu", "layer_norm",
    "batch_norm", "group_norm", "instance_norm", "normalize", "dropout", "embedding", "one_hot",
    "cosine_similarity", "pairwise_distance", "scaled_dot_product_attention", "alpha_dropout", "dropout1d",
    "dropout2d", "dropout3d", "feature_alpha_dropout", "rrelu", "rrelu_", "gumbel_softmax", "bilinear",
    "poisson_nll_loss", "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
    "cosine_embedding_loss", "triplet_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
    "multilabel_margin_loss", "ctc_loss", "triplet_margin_with_distance_loss",
]

_HALF = (np.dtype(np.float16), np.dtype(dt.bfloat16.np))


def _op(name, *args):
    return call(get(name), args)


def _wide(x):
    """float16/bfloat16 arrays widened to float32, where PyTorch's CPU kernels compute them."""
    return x.astype(np.float32) if x.dtype in _HALF else x


def _where(cond, a, b):
    return _op("where", cond, a, b)


# ---- pointwise activations ---------------------------------------------------------------------------------

def _float_only(name, kernel):
    """Meta of an activation defined for floating inputs only (PyTorch's dtype dispatch refuses the rest)."""
    def meta(self, *params):
        _require_tensor(name, self)
        if self.dtype.category != dt.FLOATING:
            raise NotImplementedError(f'"{kernel}" not implemented for \'{self.dtype.legacy}\'')
        return self._size, self.dtype
    return meta


def _real_only(name):
    """Meta of an activation that also runs on integers (relu, hardtanh, threshold), but not bool or complex."""
    def meta(self, *params):
        _require_tensor(name, self)
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
    return x * special.ndtr(x)


def _silu(xp, x):
    return x * special.expit(x)


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
    return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, 0))


def _hardshrink(xp, x, lambd=0.5):
    return xp.where((x >= -lambd) & (x <= lambd), 0, x)


def _threshold(xp, x, threshold, value):
    return xp.where(x <= threshold, value, x)


def _log_sigmoid(xp, x):
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


def _normal_cdf(xp, x):
    return special.ndtr(x)


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
    ("silu(Tensor self) -> Tensor", _silu, _float_only("silu", "silu_cpu")),
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
    structured(_schema, _meta, _activation(_fn), inplace=_name not in _NO_INPLACE, out=_name != "_normal_cdf",
               pointwise=True, method=_name in _TENSOR_METHODS)


# ---- softmax and log_softmax: the row maximum is subtracted first ------------------------------------------

def _softmax_meta(name):
    def meta(self, dim, dtype=None):
        _require_tensor(name, self)
        wrap_dim(dim, self.dim())
        result = dtype or self.dtype
        if result.category != dt.FLOATING:
            raise NotImplementedError(f'"{name}_lastdim_kernel_impl" not implemented for \'{result.legacy}\'')
        return self._size, result
    return meta


def _shifted(xp, out, x, dim, np_dtype):
    """(x - max along dim) in the compute dtype, with x seen as at least 1-D, written into `out` when the compute
    dtype is out's (saving a temporary and a copy); (None, 0) when x has no elements."""
    x = _wide(x.astype(np_dtype, copy=False)).reshape(x.shape or (1,))
    if x.size == 0:
        return None, 0
    axis = dim % x.ndim
    target = out.reshape(x.shape) if out.dtype == x.dtype and out.flags.c_contiguous else None
    return xp.subtract(x, x.max(axis=axis, keepdims=True), out=target), axis


def _sums_along(xp, a, axis):
    """Σ along axis, kept as a size-1 dim: einsum's loop for the last axis (~2× add.reduce's on rows of 1000)."""
    if axis == a.ndim - 1:
        return xp.einsum("...i->...", a)[..., None]
    return xp.add.reduce(a, axis=axis, keepdims=True)


def _softmax_impl(xp, out, dtype, x, dim, dtype_arg=None):
    shifted, axis = _shifted(xp, out, x, dim, dtype)
    if shifted is not None:
        e = xp.exp(shifted, out=shifted)
        e *= 1 / _sums_along(xp, e, axis)
        if not xp.shares_memory(e, out):
            xp.copyto(out, e.reshape(out.shape), casting="unsafe")


def _log_softmax_impl(xp, out, dtype, x, dim, dtype_arg=None):
    shifted, axis = _shifted(xp, out, x, dim, dtype)
    if shifted is not None:
        shifted -= xp.log(_sums_along(xp, xp.exp(shifted), axis))
        if not xp.shares_memory(shifted, out):
            xp.copyto(out, shifted.reshape(out.shape), casting="unsafe")


structured("softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", _softmax_meta("softmax"),
           _softmax_impl, inplace=False)
structured("log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", _softmax_meta("log_softmax"),
           _log_softmax_impl, inplace=False)


def _backward_data_meta(name):
    def meta(grad_output, output, dim, input_dtype):
        if grad_output._size != output._size:
            raise RuntimeError(f"{name}: grad_output of shape {shape_str(grad_output._size)} does not match the "
                               f"output's shape {shape_str(output._size)}")
        return output._size, input_dtype
    return meta


def _softmax_backward_impl(xp, out, dtype, grad_output, output, dim, input_dtype):
    """output * (grad - Σ grad * output) along dim."""
    g, y = _wide(grad_output), _wide(output)
    axis = dim % y.ndim if y.ndim else None
    product = g * y
    product -= y * xp.add.reduce(product, axis=axis, keepdims=True)
    xp.copyto(out, product, casting="unsafe")


def _log_softmax_backward_impl(xp, out, dtype, grad_output, output, dim, input_dtype):
    """grad - exp(output) * Σ grad along dim, the exponentials written straight into out when it can hold them."""
    g, y = _wide(grad_output), _wide(output)
    axis = dim % y.ndim if y.ndim else None
    result = xp.exp(y, out=out if out.dtype == y.dtype else None)
    result *= -_sums_along(xp, g, axis)
    result += g
    if result is not out:
        xp.copyto(out, result, casting="unsafe")


structured("_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
           _backward_data_meta("_softmax_backward_data"), _softmax_backward_impl, inplace=False, out=False)
structured("_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> "
           "Tensor",
           _backward_data_meta("_log_softmax_backward_data"), _log_softmax_backward_impl, inplace=False, out=False)


# ---- nn.functional frontends ---------------------------------------------------------------------------------

def relu(input, inplace=False):
    """max(input, 0), elementwise."""
    return _op("relu_" if inplace else "relu", input)


def relu_(input):
    return _op("relu_", input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _op("leaky_relu_" if inplace else "leaky_relu", input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _op("leaky_relu_", input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _op("elu_" if inplace else "elu", input, alpha, 1, 1)


def elu_(input, alpha=1.0):
    return _op("elu_", input, alpha, 1, 1)


def selu(input, inplace=False):
    """scale * elu(input, alpha) with the self-normalising constants (PyTorch computes it as elu: EluBackward0)."""
    return _op("elu_" if inplace else "elu", input, _SELU_ALPHA, _SELU_SCALE, 1)


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    return _op("celu_" if inplace else "celu", input, alpha)


def celu_(input, alpha=1.0):
    return _op("celu_", input, alpha)


def gelu(input, approximate="none"):
    """x * Φ(x), or its tanh approximation with approximate='tanh'."""
    return _op("gelu", input, approximate)


def silu(input, inplace=False):
    return _op("silu_" if inplace else "silu", input)


def mish(input, inplace=False):
    return _op("mish_" if inplace else "mish", input)


def softplus(input, beta=1.0, threshold=20.0):
    return _op("softplus", input, beta, threshold)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _op("hardtanh_" if inplace else "hardtanh", input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """hardtanh(input, 0, 6), as PyTorch computes it (HardtanhBackward0)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    return _op("hardsigmoid_" if inplace else "hardsigmoid", input)


def hardswish(input, inplace=False):
    return _op("hardswish_" if inplace else "hardswish", input)


def softshrink(input, lambd=0.5):
    return _op("softshrink", input, lambd)


def hardshrink(input, lambd=0.5):
    return _op("hardshrink", input, lambd)


def threshold(input, threshold, value, inplace=False):
    return _op("threshold_" if inplace else "threshold", input, threshold, value)


def threshold_(input, threshold, value):
    return _op("threshold_", input, threshold, value)


def logsigmoid(input):
    """log(sigmoid(input)), computed as min(x, 0) - log1p(exp(-|x|)) so it never overflows."""
    return _op("log_sigmoid", input)


def tanhshrink(input):
    """input - tanh(input) (a composite in PyTorch too)."""
    return input - input.tanh()


def softsign(input):
    """input / (1 + |input|) (a composite in PyTorch too)."""
    return input / (input.abs() + 1)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim, computed as exp(x - max) / sum(exp(x - max))."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim())
    return _op("softmax", input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along dim."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim())
    return _op("log_softmax", input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) along dim."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim())
    if dtype is not None:
        input = input.to(dtype)
    return _op("softmax", -input, dim, None)


def _glu_meta(self, dim=-1):
    _require_tensor("glu", self)
    if self.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, self.dim())
    n = self._size[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n} (glu of shape "
                           f"{shape_str(self._size)})")
    if self.dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"glu_cpu" not implemented for \'{self.dtype.legacy}\'')
    return self._size[:d] + (n // 2,) + self._size[d + 1:], self.dtype


def _glu_impl(xp, out, dtype, self, dim=-1):
    a, b = xp.split(_wide(self), 2, axis=dim % self.ndim)
    xp.copyto(out, a * special.expit(b), casting="unsafe")


structured("glu(Tensor self, int dim=-1) -> Tensor", _glu_meta, _glu_impl, inplace=False, method=False)


def glu(input, dim=-1):
    """a * sigmoid(b), where a and b are the two halves of input along dim."""
    return _op("glu", input, dim)


def bilinear(input1, input2, weight, bias=None):
    """y_o = x1ᵀ W_o x2 + b_o, with weight of shape (out_features, in1_features, in2_features)."""
    for name, t, k in (("input1", input1, 1), ("input2", input2, 2)):
        if weight.dim() != 3 or t._size[-1] != weight._size[k]:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {t._size[-1]} but "
                               f"expected {weight._size[k] if weight.dim() == 3 else '(a 3-D weight)'}")
    if input1._size[:-1] != input2._size[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {shape_str(input1._size[:-1])} "
                           f"and {shape_str(input2._size[:-1])}")
    left = input1.unsqueeze(-2).unsqueeze(-3).matmul(weight).squeeze(-2)  # (..., out, in2)
    out = (left * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


def linear(input, weight, bias=None):
    """input @ weight.T + bias, with weight of shape (out_features, in_features); one addmm for 2-D input, as
    PyTorch computes it."""
    if input.dim() == 2 and bias is not None and weight.dim() == 2:
        return _op("addmm", bias, input, weight.t(), 1, 1)
    out = input.matmul(weight.t())
    return out if bias is None else out + bias


composite("selu", selu, method=False)
for _fn in (selu_, relu_, celu_, threshold_):  # torch.relu_ and friends: in-place forms at top level
    composite(_fn.__name__, _fn, method=False)



# ---- losses ------------------------------------------------------------------------------------------------

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction_enum(reduction, size_average=None, reduce=None):
    """'none'/'mean'/'sum' as the int the ops take; the legacy size_average/reduce flags win when given."""
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                      f"{_legacy_reduction(size_average, reduce)}' instead.", UserWarning, stacklevel=3)
        reduction = _legacy_reduction(size_average, reduce)
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def _reduce_into(xp, out, losses, reduction):
    """Write the per-element losses, their mean (nan when empty, as in PyTorch) or their sum into out."""
    if reduction == 0:
        xp.copyto(out, losses.reshape(out.shape), casting="unsafe")
    else:
        total = losses.sum()
        out[...] = total / losses.size if reduction == 1 else total


def _pair_loss_meta(name):
    """(shape, dtype) of an elementwise loss of self against target (broadcast), reduced or not."""
    def meta(self, target, reduction=1, *params):
        _require_tensor(name, self)
        _require_tensor(name, target, 2, "target")
        shape, dtype = pointwise_binary(self, target)
        if dtype.category != dt.FLOATING:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{dtype.legacy}\'')
        return (shape if reduction == 0 else ()), dtype
    return meta


def _pair_loss(fn):
    def impl(xp, out, dtype, self, target, reduction=1, *params):
        diff = _wide(self.astype(dtype, copy=False)) - _wide(target.astype(dtype, copy=False))
        _reduce_into(xp, out, fn(xp, diff, *params), reduction)
    impl.__name__ = fn.__name__
    return impl


def _mse(xp, d):
    return d * d


def _smooth_l1(xp, d, beta=1.0):
    a = xp.abs(d)
    return xp.where(a < beta, 0.5 * d * d / (beta if beta else 1), a - 0.5 * beta)


def _huber(xp, d, delta=1.0):
    a = xp.abs(d)
    return xp.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


structured("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", _pair_loss_meta("mse"),
           _pair_loss(_mse), inplace=False, out=False, method=False)
structured("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.0) -> Tensor",
           _pair_loss_meta("smooth_l1"), _pair_loss(_smooth_l1), inplace=False, out=False, method=False)
structured("huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.0) -> Tensor",
           _pair_loss_meta("huber"), _pair_loss(_huber), inplace=False, out=False, method=False)


def _bce_meta(self, target, weight=None, reduction=1):
    shape, dtype = _pair_loss_meta("binary_cross_entropy")(self, target, reduction)
    if weight is not None:
        pointwise_binary(self, weight)
    return shape, dtype


def _bce_impl(xp, out, dtype, self, target, weight=None, reduction=1):
    x, t = _wide(self), _wide(target.astype(dtype, copy=False))
    if ((x < 0) | (x > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1 (binary_cross_entropy takes "
                           "probabilities: apply sigmoid first, or use binary_cross_entropy_with_logits)")
    losses = -(t * xp.maximum(xp.log(x), -100) + (1 - t) * xp.maximum(xp.log1p(-x), -100))
    if weight is not None:
        losses = losses * _wide(weight)
    _reduce_into(xp, out, losses, reduction)


structured("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor",
           _bce_meta, _bce_impl, inplace=False, out=False, method=False)


def _bce_logits_meta(self, target, weight=None, pos_weight=None, reduction=1):
    shape, dtype = _bce_meta(self, target, weight, reduction)
    if pos_weight is not None:
        pointwise_binary(self, pos_weight)
    return shape, dtype


def _bce_logits_impl(xp, out, dtype, self, target, weight=None, pos_weight=None, reduction=1):
    """(1 - t) x + (1 + (pw - 1) t) softplus(-x), with softplus(-x) = log1p(exp(-|x|)) + max(-x, 0): stable."""
    x, t = _wide(self), _wide(target.astype(dtype, copy=False))
    softplus_neg = xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, 0)
    coefficient = 1 if pos_weight is None else 1 + (_wide(pos_weight) - 1) * t
    losses = (1 - t) * x + coefficient * softplus_neg
    if weight is not None:
        losses = losses * _wide(weight)
    _reduce_into(xp, out, losses, reduction)


structured("binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
           "Tensor? pos_weight=None, int reduction=1) -> Tensor", _bce_logits_meta, _bce_logits_impl,
           inplace=False, out=False, method=False)


def _nll_loss_meta(self, target, weight=None, reduction=1, ignore_index=-100):
    _require_tensor("nll_loss", self)
    _require_tensor("nll_loss", target, 2, "target")
    if self.dim() == 0:
        raise ValueError("Expected 1 or more dimensions (got 0) (nll_loss: input is (C,) or (N, C, ...))")
    if target.dtype not in (dt.int64, dt.uint8):
        got = target.dtype.legacy.replace("Tensor", "")
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {got} (nll_loss: pass class indices "
                           "as target.long())")
    batch = self._size[:1] + self._size[2:] if self.dim() > 1 else ()
    if target._size != batch:
        what = (f"Expected input batch_size ({self._size[0]}) to match target batch_size ({target._size[0]})"
                if self.dim() > 1 and target.dim() and target._size[0] != self._size[0] else
                f"Expected target of shape {shape_str(batch)}, got {shape_str(target._size)}")
        raise ValueError(f"{what}. (nll_loss of input shape {shape_str(self._size)})")
    classes = self._size[1 if self.dim() > 1 else 0]
    if weight is not None and (weight.dim() != 1 or weight._size[0] != classes):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but got "
                           f"weight tensor of shape: {shape_str(weight._size)}")
    if self.dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"nll_loss_out_frame" not implemented for \'{self.dtype.legacy}\'')
    return (batch if reduction == 0 else ()), self.dtype


def _nll_loss_impl(xp, out, dtype, self, target, weight=None, reduction=1, ignore_index=-100):
    x = _wide(self)
    axis = 1 if x.ndim > 1 else 0
    valid = target != ignore_index
    picked_class = xp.where(valid, target, 0).astype(np.int64)
    bad = (picked_class < 0) | (picked_class >= x.shape[axis])
    if bad.any():
        raise IndexError(f"Target {int(picked_class[bad].flat[0])} is out of bounds.")
    picked = xp.take_along_axis(x, xp.expand_dims(picked_class, axis), axis).squeeze(axis)
    w = valid.astype(x.dtype) if weight is None else _wide(weight)[picked_class] * valid
    losses = -picked * w
    if reduction == 1:
        out[...] = losses.sum() / w.sum()
    else:
        _reduce_into(xp, out, losses, reduction)


structured("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, int ignore_index=-100) "
           "-> Tensor", _nll_loss_meta, _nll_loss_impl, inplace=False, out=False, method=False)


def _nll_loss_backward_meta(grad_output, self, target, weight=None, reduction=1, ignore_index=-100):
    return self._size, self.dtype


def _nll_loss_backward_impl(xp, out, dtype, grad_output, self, target, weight=None, reduction=1, ignore_index=-100):
    """-grad * w[target] (over the total weight for 'mean') at each target class, 0 elsewhere."""
    out[...] = 0
    axis = 1 if out.ndim > 1 else 0
    kept = target != ignore_index
    picked = xp.where(kept, target, 0).astype(np.int64)
    w = kept.astype(out.dtype) if weight is None else weight[picked] * kept
    if reduction == 1:
        w = w / w.sum()
    values = -grad_output * w
    xp.put_along_axis(out, xp.expand_dims(picked, axis), xp.expand_dims(values, axis).astype(out.dtype), axis)


structured("nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
           "int ignore_index=-100) -> Tensor", _nll_loss_backward_meta, _nll_loss_backward_impl, inplace=False,
           out=False)


def _checked_classes(xp, target, ignore_index, classes):
    """(target with ignored entries as class 0, the kept mask); IndexError for a class out of range."""
    kept = target != ignore_index
    picked = xp.where(kept, target, 0).astype(np.int64)
    bad = (picked < 0) | (picked >= classes)
    if bad.any():
        raise IndexError(f"Target {int(picked[bad].flat[0])} is out of bounds.")
    return picked, kept


def _row_scale(grad, kept, reduction, dtype):
    """Each row's factor on its loss gradient: grad (per row for 'none'), masked, over the kept count for 'mean'
    (all rows ignored: zero, as PyTorch's gradient is)."""
    scale = kept.astype(dtype)
    if reduction == 1:
        scale /= scale.sum() or 1
    return scale * grad


def _cross_entropy_index_meta(self, target, reduction=1, ignore_index=-100):
    return _nll_loss_meta(self, target, None, reduction, ignore_index)


def _cross_entropy_index(backend, self, target, reduction=1, ignore_index=-100):
    """(log-sum-exp of each row minus its target's logit, reduced; softmax(self), saved for backward) without
    materialising log_softmax: one exp over the logits serves forward and backward."""
    shape, dtype = _cross_entropy_index_meta(self, target, reduction, ignore_index)
    loss, probs = backend.empty(shape, dtype), backend.empty(self._size, dtype)
    if backend.xp is None:
        return loss, probs
    xp = backend.xp
    x, p = _wide(backend.array(self)), backend.array(probs)
    picked, kept = _checked_classes(xp, backend.array(target), ignore_index, x.shape[1])
    top = x.max(axis=1, keepdims=True)
    e = xp.subtract(x, top, out=p if p.dtype == x.dtype else None)
    xp.exp(e, out=e)
    sums = _row_sums(xp, e)
    losses = (xp.log(sums[:, 0]) + top[:, 0] - x[xp.arange(len(x)), picked]) * kept
    e *= 1 / sums
    if e is not p:
        xp.copyto(p, e, casting="unsafe")
    total = backend.array(loss)
    if reduction == 1:
        total[...] = losses.sum() / kept.sum()
    else:
        _reduce_into(xp, total, losses, reduction)
    return loss, probs


custom("_cross_entropy_index(Tensor self, Tensor target, int reduction=1, int ignore_index=-100) -> "
       "(Tensor, Tensor)", _cross_entropy_index, _cross_entropy_index)


def _cross_entropy_index_backward_meta(grad_output, probs, target, reduction=1, ignore_index=-100):
    return probs._size, probs.dtype


def _cross_entropy_index_backward_impl(xp, out, dtype, grad_output, probs, target, reduction=1, ignore_index=-100):
    """(probs - one_hot(target)) times each row's gradient factor."""
    p = _wide(probs)
    picked, kept = _checked_classes(xp, target, ignore_index, p.shape[1])
    scale = _row_scale(_wide(grad_output), kept, reduction, p.dtype)
    result = xp.multiply(p, scale[:, None], out=out if out.dtype == p.dtype else None)
    result[xp.arange(len(p)), picked] -= scale
    if result is not out:
        xp.copyto(out, result, casting="unsafe")


structured("_cross_entropy_index_backward(Tensor grad_output, Tensor probs, Tensor target, int reduction=1, "
           "int ignore_index=-100) -> Tensor", _cross_entropy_index_backward_meta, _cross_entropy_index_backward_impl,
           inplace=False, out=False)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """The negative log likelihood of the target classes, given log-probabilities (N, C, d1, ...)."""
    return _op("nll_loss", input, target, weight, _reduction_enum(reduction, size_average, reduce), ignore_index)


def _apply_reduction(losses, reduction):
    return losses if reduction == 0 else losses.mean() if reduction == 1 else losses.sum()


def _class_shape(input, weight):
    """weight viewed to broadcast along the class dim of input."""
    shape = [1] * input.dim()
    shape[1 if input.dim() > 1 else 0] = weight.numel()
    return weight.view(shape)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for unbatched input) then nll_loss; target holds class indices or,
    shaped like input, class probabilities. label_smoothing mixes in the uniform distribution, as PyTorch does."""
    _require_tensor("cross_entropy", input)
    _require_tensor("cross_entropy", target, 2, "target")
    reduction = _reduction_enum(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 1 if input.dim() > 1 else 0
    if (input.dim() == 2 and weight is None and label_smoothing == 0.0 and target._size != input._size
            and input.dtype in (dt.float32, dt.float64)):  # float16 rounds log_softmax first in PyTorch's path
        return _op("_cross_entropy_index", input, target, reduction, ignore_index)[0]
    logp = _op("log_softmax", input, class_dim, None)
    classes = input._size[class_dim] if input.dim() else 1
    if target._size == input._size:
        return _cross_entropy_probabilities(logp, target, weight, reduction, label_smoothing, classes, class_dim)
    loss = _op("nll_loss", logp, target, weight, reduction, ignore_index)
    if label_smoothing == 0.0:
        return loss
    smooth = -(logp * _class_shape(logp, weight) if weight is not None else logp).sum(class_dim)
    ignored = target == ignore_index
    smooth = _where(ignored, 0.0, smooth)
    if reduction == 1:
        kept = ignored.logical_not()
        if weight is None:
            denominator = kept.sum()
        else:
            denominator = (_op("index.Tensor", weight, [_where(kept, target, 0)]) * kept.to(weight.dtype)).sum()
        smooth = smooth.sum() / denominator
    elif reduction == 2:
        smooth = smooth.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _cross_entropy_probabilities(logp, target, weight, reduction, label_smoothing, classes, class_dim):
    if target.dtype.category != dt.FLOATING:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{target.dtype.legacy.replace('Tensor', '')}")
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = logp * target
    if weight is not None:
        terms = terms * _class_shape(logp, weight)
    if reduction == 0:
        return -terms.sum(class_dim)
    total = -terms.sum()
    return total if reduction == 2 else total / (logp.numel() // classes)


def _same_size_warning(name, input, target):
    if input.shape != target.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", UserWarning, stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean (or sum, or each) of the squared differences."""
    _same_size_warning("mse_loss", input, target)
    reduction = _reduction_enum(reduction, size_average, reduce)
    if weight is not None:
        return _apply_reduction(_op("mse_loss", input, target, 0) * weight, reduction)
    return _op("mse_loss", input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean (or sum, or each) of the absolute differences (a composite in PyTorch too)."""
    _same_size_warning("l1_loss", input, target)
    losses = (input - target).abs()
    if weight is not None:
        losses = losses * weight
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d² / beta where |d| < beta, else |d| - 0.5 beta; beta=0 is the L1 loss."""
    _same_size_warning("smooth_l1_loss", input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction=_legacy_or(reduction, size_average, reduce))
    return _op("smooth_l1_loss", input, target, _reduction_enum(reduction, size_average, reduce), float(beta))


def _legacy_or(reduction, size_average, reduce):
    return reduction if size_average is None and reduce is None else _legacy_reduction(size_average, reduce)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d² where |d| < delta, else delta (|d| - 0.5 delta)."""
    _same_size_warning("huber_loss", input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    reduction = _reduction_enum(reduction)
    if weight is not None:
        return _apply_reduction(_op("huber_loss", input, target, 0, float(delta)) * weight, reduction)
    return _op("huber_loss", input, target, reduction, float(delta))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), the logs clamped at -100 as in PyTorch."""
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    reduction = _reduction_enum(reduction, size_average, reduce)
    return _op("binary_cross_entropy", input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) computed from the logits without overflow; pos_weight
    scales the positive term."""
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    reduction = _reduction_enum(reduction, size_average, reduce)
    return _op("binary_cross_entropy_with_logits", input, target, weight, pos_weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input), input holding log-probabilities; 'batchmean' divides the sum by the batch."""
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if log_target:
        losses = target.exp() * (target - input)
    else:
        losses = target * _where(target == 0, 1.0, target).log() - target * input  # xlogy(t, t) - t * input
    if reduction == "batchmean":
        total = losses.sum()
        return total / input._size[0] if input.dim() else total
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), or input - target * log(input + eps); full adds Stirling's term."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    losses = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = _where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        losses = losses + _where(target > 1, stirling, 0.0)
    return _apply_reduction(losses, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log var + (input - target)² / var), var clamped at eps without changing its gradient (as PyTorch).
    A float var is one shared variance; a var with one size-1 dim where input has more broadcasts."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * input.new_ones(input._size)
    elif (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    if var._size != input._size:
        if input._size[:-1] == var._size:
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim()
                  and sum(v for i, v in zip(input._size, var._size) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    from ..autograd.grad_mode import no_grad
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    diff = input - target
    losses = (var.log() + diff * diff / var) * 0.5
    if full:
        losses = losses + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(losses, _REDUCTIONS[reduction])


def _same_dims(name, *tensors):
    if len({t.dim() for t in tensors}) > 1:
        sizes = ", ".join(f"{n}: {shape_str(t._size)}" for n, t in zip(("input1", "input2", "target"), tensors))
        raise RuntimeError(f"{name} : All input tensors should have same dimension but got sizes: {sizes}")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target (input1 - input2) + margin)."""
    _same_dims("margin_ranking_loss", input1, input2, target)
    losses = (-target * (input1 - input2) + margin).clamp(min=0)
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1 (PyTorch's formula for other values too)."""
    margin_term = _where(target != 1, (margin - input).clamp(min=0), 0.0)
    losses = margin_term + _where(target != -1, input, 0.0)
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    losses = (-input * target).exp().log1p()
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1."""
    if input1.dim() not in (1, 2) or input1._size != input2._size or target.dim() != input1.dim() - 1:
        raise RuntimeError(f"cosine_embedding_loss: expected 1-D or 2-D inputs of one shape and a target with one "
                           f"dimension fewer, got input1 {shape_str(input1._size)}, input2 "
                           f"{shape_str(input2._size)} and target {shape_str(target._size)}")
    d = input1.dim() - 1
    product = (input1 * input2).sum(d)
    cos = product / (((input1 * input1).sum(d) + 1e-12) * ((input2 * input2).sum(d) + 1e-12)).sqrt()
    losses = _where(target == 1, 1 - cos, 0.0) + _where(target == -1, (cos - margin).clamp(min=0), 0.0)
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the p-norm pairwise distance; swap uses the
    smaller of d(anchor, negative) and d(positive, negative)."""
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) > 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           "inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _op("minimum", d_neg, pairwise_distance(positive, negative, p, eps))
    losses = (d_pos - d_neg + margin).clamp(min=0)
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """triplet_margin_loss with any distance_function(x1, x2) (pairwise_distance when None)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) > 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           "inputs")
    distance = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = _op("minimum", d_neg, distance(positive, negative))
    losses = (d_pos - d_neg + margin).clamp(min=0)
    return _apply_reduction(losses, _REDUCTIONS[reduction])


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The mean over classes of the binary logistic losses of each class."""
    losses = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        losses = losses * weight
    losses = losses.sum(input.dim() - 1) / input._size[-1]
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Σ_{i ≠ y} max(0, margin - x[y] + x[i])^p / C per sample (times weight[y])."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    batch = input._size[0] if input.dim() == 2 else 1
    if input.dim() > 2 or target.dim() > 1 or target.numel() != batch:
        raise RuntimeError(f"inconsistent target size: {shape_str(target._size)} for input of size: "
                           f"{shape_str(input._size)}")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    classes = x._size[1]
    positions = _op("arange", classes, None, 1, dt.int64, None, x.device, None, False).view(1, classes)
    is_target = positions == t.unsqueeze(1)
    x_target = _where(is_target, x, 0.0).sum(1, True)
    terms = (x - x_target + margin).clamp(min=0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * _op("index.Tensor", weight, [t]).unsqueeze(1)
    losses = _where(is_target, 0.0, terms).sum(1) / classes
    if input.dim() < 2:
        losses = losses.reshape(target._size)
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Σ_j Σ_{i not a target} max(0, 1 - (x[y_j] - x[i])) / C, the targets y_j being the entries of target before
    its first -1."""
    _require_tensor("multilabel_margin_loss", input)
    if target._size != input._size or input.dim() > 2:
        raise RuntimeError(f"inconsistent target size: {shape_str(target._size)} for input of size: "
                           f"{shape_str(input._size)}")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(x._size)
    classes = x._size[1]
    valid = (t >= 0).long().cumprod(1).bool()  # the entries before the first -1
    positions = _op("arange", classes, None, 1, dt.int64, None, x.device, None, False)
    is_target = ((t.unsqueeze(-1) == positions) & valid.unsqueeze(-1)).any(1)
    x_target = x.gather(1, t.clamp(min=0))
    terms = (1 - (x_target.unsqueeze(-1) - x.unsqueeze(-2))).clamp(min=0)
    counted = valid.unsqueeze(-1) & is_target.logical_not().unsqueeze(-2)
    losses = _where(counted, terms, 0.0).sum((1, 2)) / classes
    if input.dim() < 2:
        losses = losses.reshape(())
    return _apply_reduction(losses, _reduction_enum(reduction, size_average, reduce))


_CTC_NEG = -1e30  # log(0) stand-in: -inf would make the gradient nan on unreachable paths


def _logsumexp(x, dim):
    """log Σ exp(x) along dim, shifted by the (constant) maximum; written with elementary ops so that its double
    backward is exact (lantern's logsumexp fails gradgradcheck when its output feeds an expression of its input)."""
    peak = x.amax(dim, True).detach()
    return (x - peak).exp().sum(dim).log() + peak.squeeze(dim)


def _as_lengths(like, lengths):
    if isinstance(lengths, TensorImpl):
        return lengths.long()
    if not isinstance(lengths, (list, tuple)):
        raise TypeError(f"ctc_loss(): input_lengths and target_lengths must be tuples of ints or Tensors, not "
                        f"{type(lengths).__name__}")
    return like.new_tensor(list(lengths), dtype=dt.int64)


def _padded_targets(targets, target_lengths, batch):
    """(N, S) targets: as given, or cut from the 1-D concatenation of every sample's targets."""
    if targets.dim() == 2 or batch == 0:
        return targets.long()
    longest = max(int(target_lengths.max().item()), 1)
    starts = target_lengths.cumsum(0) - target_lengths
    positions = _op("arange", longest, None, 1, dt.int64, None, targets.device, None, False)
    index = (starts.unsqueeze(1) + positions).clamp(max=max(targets.numel() - 1, 0))
    return targets.long().reshape(-1)[index.reshape(-1)].reshape(batch, longest)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The Connectionist Temporal Classification loss: -log of the total probability of every alignment of the
    targets to the (T, N, C) log_probs, by the forward (alpha) recursion in log space, batched over samples and
    label positions (a loop over time steps only)."""
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0)
    steps, batch, _ = log_probs._size
    input_lengths = _as_lengths(targets, input_lengths).reshape(-1)
    target_lengths = _as_lengths(targets, target_lengths).reshape(-1)
    labels = _padded_targets(targets, target_lengths, batch)
    extended = labels.new_full((batch, 2 * labels._size[1] + 1), blank)  # blank, y1, blank, y2, ..., blank
    extended[:, 1::2] = labels
    width = extended._size[1]
    emissions = log_probs.gather(2, extended.unsqueeze(0).expand(steps, batch, width))
    skip = extended != blank
    skip[:, 2:] &= extended[:, 2:] != extended[:, :-2]
    skip[:, :2] = False
    alpha = _where(_op("arange", width, None, 1, dt.int64, None, log_probs.device, None, False) < 2,
                   emissions[0], _CTC_NEG)
    neg = alpha.new_full((batch, 2), _CTC_NEG)
    for t in range(1, steps):
        shift1 = _op("cat", [neg[:, :1], alpha[:, :-1]], 1)
        shift2 = _where(skip, _op("cat", [neg, alpha[:, :-2]], 1), _CTC_NEG)
        step = _logsumexp(_op("stack", [alpha, shift1, shift2], 0), 0) + emissions[t]
        alpha = _where((input_lengths > t).unsqueeze(1), step, alpha)
    last = alpha.gather(1, (2 * target_lengths).unsqueeze(1))
    before = _where((target_lengths > 0).unsqueeze(1),
                    alpha.gather(1, (2 * target_lengths - 1).clamp(min=0).unsqueeze(1)), _CTC_NEG)
    losses = -_logsumexp(_op("cat", [last, before], 1), 1)
    impossible = losses > -_CTC_NEG / 2
    losses = _where(impossible, 0.0 if zero_infinity else float("inf"), losses)
    if unbatched:
        losses = losses.squeeze(0)
    reduction = _reduction_enum(reduction)
    if reduction == 1:
        return (losses / target_lengths.clamp(min=1).to(losses.dtype).reshape(losses._size)).mean()
    return _apply_reduction(losses, reduction)


# ---- prelu ---------------------------------------------------------------------------------------------------

def _prelu_kernel_meta(self, weight):
    shape, dtype = pointwise_binary(self, weight)
    if dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"prelu_cpu" not implemented for \'{dtype.legacy}\'')
    return shape, dtype


def _prelu_kernel_impl(xp, out, dtype, self, weight):
    x = _wide(self)
    xp.copyto(out, xp.where(x > 0, x, x * _wide(weight)), casting="unsafe")


structured("_prelu_kernel(Tensor self, Tensor weight) -> Tensor", _prelu_kernel_meta, _prelu_kernel_impl,
           inplace=False, out=False, pointwise=True)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), with one weight, or one per channel (dim 1)."""
    _require_tensor("prelu", input)
    _require_tensor("prelu", weight, 2, "weight")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    channels = input._size[1] if input.dim() >= 2 else 1
    if weight.numel() != 1:
        if input.dim() == 0 or weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
        shape = [1] * input.dim()
        shape[1 if input.dim() >= 2 else 0] = channels
        weight = weight.view(shape)
    return _op("_prelu_kernel", input, weight)


composite("prelu", prelu)


# ---- normalization ---------------------------------------------------------------------------------------------

def _normalize_rows(xp, x, axes, eps):
    """(x - mean) / sqrt(var + eps) over `axes`, with the mean, the (biased) var and 1/sqrt(var + eps)."""
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    rstd = 1 / xp.sqrt(var + eps)
    return centered * rstd, mean, var, rstd


def _layer_norm_shapes(input, normalized_shape, weight, bias):
    _require_tensor("layer_norm", input)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or input._size[input.dim() - k:] != normalized_shape or input.dim() < k:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
                           f"{shape_str(input._size)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._size != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{shape_str(t._size)} and normalized_shape = {shape_str(normalized_shape)}")
    if input.dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"LayerNormKernelImpl" not implemented for \'{input.dtype.legacy}\'')
    stats = input._size[:input.dim() - k] + (1,) * k
    return input._size, stats


def _rows(array, size):
    """array seen as (rows, size): the normalized dims flattened into one."""
    return array.reshape(-1, size)


def _compute_buffer(xp, out, shape):
    """out (a fresh contiguous output) seen as `shape` for kernels to write directly; for float16/bfloat16 outputs,
    a float32 buffer to compute in."""
    if out.dtype in _HALF:
        return xp.empty(shape, np.float32)
    return out.reshape(shape)


_BLOCK = 1 << 16  # elements per block of rows: a block's arrays stay in the L2 cache between passes


def _row_blocks(rows, size):
    """Slices covering range(rows) in blocks of about _BLOCK elements."""
    step = max(1, _BLOCK // max(size, 1))
    return [slice(start, start + step) for start in range(0, rows, step)]


def _row_sums(xp, x):
    """Σ along each row of the 2-D x, as a (rows, 1) column."""
    return _sums_along(xp, x, 1)


def _layer_norm_rows(xp, y, x, weight, bias, eps):
    """y = (x - mean) * rstd * weight + bias for each row of the 2-D x, written into y; returns (mean, rstd)."""
    size = x.shape[1]
    mean = _row_sums(xp, x)
    mean /= size
    xp.subtract(x, mean, out=y)
    rstd = xp.einsum("ij,ij->i", y, y)[:, None]  # the sum of squares in one pass, with no squared temporary
    rstd /= size
    rstd += eps
    rstd = xp.reciprocal(xp.sqrt(rstd, out=rstd), out=rstd)
    y *= rstd
    if weight is not None:
        y *= weight
    if bias is not None:
        y += bias
    return mean, rstd


def _native_layer_norm(backend, input, normalized_shape, weight, bias, eps):
    shape, stats = _layer_norm_shapes(input, normalized_shape, weight, bias)
    out, mean, rstd = (backend.empty(s, input.dtype) for s in (shape, stats, stats))
    if backend.xp is None or input.numel() == 0:
        return out, mean, rstd
    xp = backend.xp
    size = math.prod(normalized_shape)
    x = _rows(_wide(backend.array(input)), size)
    affine = [None if t is None else _wide(backend.array(t)).reshape(-1) for t in (weight, bias)]
    y = _compute_buffer(xp, backend.array(out), x.shape)
    m, r = _layer_norm_rows(xp, y, x, *affine, eps)
    for t, value in ((out, y), (mean, m), (rstd, r)):
        target = backend.array(t)
        if not xp.shares_memory(target, value):
            xp.copyto(target, value.reshape(target.shape), casting="unsafe")
    return out, mean, rstd


custom("native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> "
       "(Tensor, Tensor, Tensor)", _native_layer_norm, _native_layer_norm)


def _layer_norm_backward_meta(grad_out, input, normalized_shape, mean, rstd, weight, eps):
    if grad_out._size != input._size:
        raise RuntimeError(f"_layer_norm_input_backward: grad_out of shape {shape_str(grad_out._size)} does not "
                           f"match the input's shape {shape_str(input._size)}")
    return input._size, input.dtype


def _layer_norm_backward_impl(xp, out, dtype, grad_out, input, normalized_shape, mean, rstd, weight, eps):
    """rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, g = grad_out * weight, from the saved mean and rstd.

    As PyTorch's CPU kernel: rstd * g + c1 * x + c0 with per-row c1, c0 from Σ g and Σ g x. g lives in the result
    buffer and the last passes run a block of rows at a time through one small temporary: a full-size one would
    cost more in fresh pages than in arithmetic. eps is unused here: the derivative recomputes the statistics."""
    if out.size == 0:
        return
    size = math.prod(normalized_shape)
    x = _rows(_wide(input), size)
    m, r = _wide(mean).reshape(-1, 1), _wide(rstd).reshape(-1, 1)
    g = xp.broadcast_to(_wide(grad_out), input.shape).reshape(-1, size)
    result = _compute_buffer(xp, out, x.shape)
    if weight is not None:
        g = xp.multiply(g, _wide(weight).reshape(-1), out=result)
    total = _row_sums(xp, g)
    c1 = (total * m - xp.einsum("ij,ij->i", g, x)[:, None]) * (r * r * r / size)
    c0 = -c1 * m - total * (r / size)
    scratch = xp.empty((min(len(x), max(1, _BLOCK // size)), size), x.dtype)
    for rows in _row_blocks(len(x), size):
        block = result[rows]
        xp.multiply(g[rows], r[rows], out=block)
        block += xp.multiply(x[rows], c1[rows], out=scratch[:len(block)])
        block += c0[rows]
    if not xp.shares_memory(result, out):
        xp.copyto(out, result.reshape(out.shape), casting="unsafe")


structured("_layer_norm_input_backward(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor mean, "
           "Tensor rstd, Tensor? weight, float eps) -> Tensor", _layer_norm_backward_meta, _layer_norm_backward_impl,
           inplace=False, out=False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last len(normalized_shape) dims, then scale by weight and shift by bias."""
    if not isinstance(normalized_shape, (list, tuple)):
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    return _op("native_layer_norm", input, tuple(normalized_shape), weight, bias, eps)[0]


def _batch_norm_check(input, weight, bias, running_mean, running_var, training):
    _require_tensor("batch_norm", input)
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got 1) (batch_norm: "
                         f"input is (N, C, ...), got {input.dim()}-D)")
    channels = input._size[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()} (batch_norm of input "
                               f"shape {shape_str(input._size)})")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    if input.dtype.category != dt.FLOATING:
        raise NotImplementedError(f'"batch_norm_cpu" not implemented for \'{input.dtype.legacy}\'')


def _native_batch_norm(backend, input, weight, bias, running_mean, running_var, training, momentum, eps):
    _batch_norm_check(input, weight, bias, running_mean, running_var, training)
    channels = input._size[1]
    out = backend.empty(input._size, input.dtype)
    # the statistics used, for backward: the batch's when training, the running ones in evaluation (where PyTorch
    # returns empty tensors; saving them keeps running_mean/var out of the graph, free to be updated again)
    save_mean, save_rstd = (backend.empty((channels,), input.dtype) for _ in range(2))
    if backend.xp is None:
        return out, save_mean, save_rstd
    xp = backend.xp
    x = _wide(backend.array(input))
    axes = (0,) + tuple(range(2, x.ndim))
    per_channel = (1, channels) + (1,) * (x.ndim - 2)
    if training:
        count = x.size // channels
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{shape_str(input._size)}")
        y, m, v, r = _normalize_rows(xp, x, axes, eps)
        _update_running_stats(backend, running_mean, running_var, m.reshape(-1), v.reshape(-1), count, momentum)
    else:
        m = _wide(backend.array(running_mean)).reshape(per_channel)
        r = 1 / xp.sqrt(_wide(backend.array(running_var)).reshape(per_channel) + eps)
        y = (x - m) * r
    xp.copyto(backend.array(save_mean), m.reshape(-1), casting="unsafe")
    xp.copyto(backend.array(save_rstd), r.reshape(-1), casting="unsafe")
    if weight is not None:
        y = y * _wide(backend.array(weight)).reshape(per_channel)
    if bias is not None:
        y = y + _wide(backend.array(bias)).reshape(per_channel)
    xp.copyto(backend.array(out), y, casting="unsafe")
    return out, save_mean, save_rstd


def _update_running_stats(backend, running_mean, running_var, mean, biased_var, count, momentum):
    """running = (1 - momentum) * running + momentum * batch statistic (the variance unbiased), in place."""
    if running_mean is not None:
        rm = backend.array(running_mean)
        backend.xp.copyto(rm, (1 - momentum) * rm + momentum * mean, casting="unsafe")
        running_mean._vc[0] += 1
    if running_var is not None:
        rv = backend.array(running_var)
        backend.xp.copyto(rv, (1 - momentum) * rv + momentum * biased_var * count / (count - 1), casting="unsafe")
        running_var._vc[0] += 1


custom("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
       "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", _native_batch_norm,
       _native_batch_norm)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) by the batch's statistics when training (updating the running ones in
    place), or by running_mean/running_var in evaluation."""
    return _op("native_batch_norm", input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def _channel_affine(y, weight, bias):
    shape = (1, y._size[1]) + (1,) * (y.dim() - 2)
    if weight is not None:
        y = y * weight.view(shape)
    if bias is not None:
        y = y + bias.view(shape)
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each group of num_groups channel groups over its channels and spatial dims, then the per-channel
    affine."""
    _require_tensor("group_norm", input)
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, channels = input._size[:2]
    if channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {shape_str(input._size)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {shape_str(t._size)} and input of shape "
                               f"{shape_str(input._size)}")
    grouped = input.reshape(n, num_groups, -1)
    y = _op("native_layer_norm", grouped, (grouped._size[-1],), None, None, eps)[0].reshape(input._size)
    return _channel_affine(y, weight, bias)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial dims; running stats, when given, are updated with the
    mean over the batch of the instances' statistics."""
    _require_tensor("instance_norm", input)
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or more input (got {input.dim()}D input) (instance_norm: (N, C, ...))")
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    n, channels = input._size[:2]
    flat = input.reshape(n, channels, -1)
    if flat._size[-1] <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{shape_str(input._size)}")
    if running_mean is not None or running_var is not None:
        rm = None if running_mean is None else running_mean.repeat(n)
        rv = None if running_var is None else running_var.repeat(n)
        y = batch_norm(flat.reshape(1, n * channels, -1), rm, rv, None, None, True, momentum, eps)
        _fold_running_stats(running_mean, rm, running_var, rv, n, channels)
        return _channel_affine(y.reshape(input._size), weight, bias)
    y = _op("native_layer_norm", flat, (flat._size[-1],), None, None, eps)[0].reshape(input._size)
    return _channel_affine(y, weight, bias)


def _fold_running_stats(running_mean, rm, running_var, rv, n, channels):
    """Per-instance running stats (n * channels) averaged back into the per-channel buffers, in place."""
    from ..autograd.grad_mode import no_grad
    with no_grad():
        for buffer, expanded in ((running_mean, rm), (running_var, rv)):
            if buffer is not None:
                buffer.copy_(expanded.view(n, channels).mean(0))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(‖input‖_p along dim, eps)."""
    norm = _op("linalg_vector_norm", input, p, [dim], True, None).clamp(min=eps).expand_as(input)
    if out is None:
        return input / norm
    return _op("div.out", input, norm, None, out)


# ---- dropout, embedding, one_hot -----------------------------------------------------------------------------

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input, p, training, inplace, feature=False, alpha=False):
    """ATen's _dropout_impl: a bernoulli(1 - p) keep-mask (one per channel for feature dropout) drawn from lantern's
    generator, scaled by 1 / (1 - p); alpha dropout instead keeps SELU's mean and variance (a * mask * x + b)."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    if feature:
        if input.dim() < 2:
            raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input (got shape "
                               f"{shape_str(input._size)})")
        shape = input._size[:2] + (1,) * (input.dim() - 2)
        noise = _op("empty", shape, input.dtype, None, input.device, None, None)
    else:
        noise = _COMPOSITES["empty_like"](input)
    noise.bernoulli_(1 - p)
    if not alpha:
        noise.div_(1 - p)
        return input.mul_(noise) if inplace else input * noise
    a = 1 / math.sqrt((_ALPHA_DROPOUT * _ALPHA_DROPOUT * p + 1) * (1 - p))
    b = (noise - 1) * (_ALPHA_DROPOUT * a) + _ALPHA_DROPOUT * a * p
    noise.mul_(a)
    return (input.mul_(noise) if inplace else input * noise).add_(b)


_ALPHA_DROPOUT = 1.7580993408473766


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p (drawn from lantern's generator) and scale the rest by 1 / (1 - p)."""
    _check_p(p)
    return _dropout(input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped elements take SELU's negative saturation, and an affine map keeps the
    mean and variance."""
    _check_p(p)
    return _dropout(input, p, training, inplace, alpha=True)


def _warn_channel_dims(name, input, dims):
    if input.dim() not in dims:
        warnings.warn(f"{name}: Received a {input.dim()}-D input to {name}, which is deprecated and will result in an "
                      f"error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with "
                      f"{dims[0] - 1} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{dims[0]}D or {dims[1]}D inputs).", UserWarning, stacklevel=3)


def _unbatched_feature_dropout(input, p, training, inplace):
    """Channel dropout of one unbatched sample: as a batch of one."""
    out = _dropout(input.unsqueeze(0), p, training, inplace, feature=True)
    return input if inplace else out.squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) input with probability p."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.dim() == 2:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _dropout(input, p, training, inplace, feature=True)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability p (3-D input is read as (N, C, L), as PyTorch)."""
    _check_p(p)
    _warn_channel_dims("dropout2d", input, (3, 4))
    return _dropout(input, p, training, inplace, feature=True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p."""
    _check_p(p)
    _warn_channel_dims("dropout3d", input, (4, 5))
    if input.dim() != 5:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _dropout(input, p, training, inplace, feature=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout over whole channels."""
    _check_p(p)
    return _dropout(input, p, training, inplace, feature=True, alpha=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """leaky_relu with a random slope in [lower, upper] per element when training, their mean otherwise."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slopes = _COMPOSITES["empty_like"](input).uniform_(lower, upper)
    scaled = _where(input >= 0, 1.0, slopes)
    return input.mul_(scaled) if inplace else input * scaled


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau); hard=True returns one-hot samples whose gradient is the soft one's
    (the straight-through estimator)."""
    gumbels = -_COMPOSITES["empty_like"](logits).exponential_().log()
    y_soft = _op("softmax", (logits + gumbels) / tau, dim, None)
    if not hard:
        return y_soft
    d = wrap_dim(dim, logits.dim())
    index = y_soft.max(d, True)[1]
    shape = [1] * logits.dim()
    shape[d] = logits._size[d]
    positions = _op("arange", logits._size[d], None, 1, dt.int64, None, logits.device, None, False).view(shape)
    y_hard = (positions == index).to(logits.dtype)
    return y_hard - y_soft.detach() + y_soft


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """The rows of weight at the indices in input; the row at padding_idx gets no gradient."""
    _require_tensor("embedding", input)
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx >= weight._size[0] or padding_idx < -weight._size[0]:
        raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        padding_idx += weight._size[0]
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    return _op("embedding", weight, input, padding_idx, scale_grad_by_freq, sparse)


def _renorm_rows(weight, indices, max_norm, norm_type):
    """embedding's max_norm: the looked-up rows whose norm exceeds max_norm are rescaled in place (no grad)."""
    from ..autograd.grad_mode import no_grad
    with no_grad():
        rows = indices.reshape(-1)
        norms = _op("linalg_vector_norm", weight[rows], norm_type, [1], True, None)
        scale = _where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = weight[rows] * scale


def _embedding_kernel(backend, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if indices.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{indices.dtype.legacy} instead (while checking arguments for "
                           "embedding)")
    if weight.dim() != 2:
        raise RuntimeError(f"'weight' must be 2-D (embedding got weight of shape {shape_str(weight._size)})")
    out = backend.empty(indices._size + weight._size[1:], weight.dtype)
    if backend.xp is not None and out.numel():
        rows = backend.array(indices)
        if ((rows < 0) | (rows >= weight._size[0])).any():
            raise IndexError("index out of range in self")
        backend.xp.take(backend.array(weight), rows, axis=0, out=backend.array(out))
    return out


custom("embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, "
       "bool sparse=False) -> Tensor", _embedding_kernel, _embedding_kernel)


def _embedding_dense_backward(backend, grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """The rows of grad_output summed into the rows of a (num_weights, dim) gradient, as one sparse-dense product
    (np.add.at is several times slower); padding_idx's row gets nothing, scale_grad_by_freq divides each
    contribution by its index's count in the batch."""
    dim = grad_output._size[-1]
    out = backend.empty((num_weights, dim), grad_output.dtype)
    if backend.xp is None:
        return out
    xp = backend.xp
    rows = backend.array(indices).reshape(-1)
    contributions = _wide(backend.array(grad_output)).reshape(-1, dim)
    weights = xp.ones(rows.shape, contributions.dtype)
    if padding_idx >= 0:
        weights[rows == padding_idx] = 0
    if scale_grad_by_freq:
        weights /= xp.bincount(rows, minlength=num_weights)[rows]
    scatter = sparse.csr_matrix((weights, (rows, xp.arange(rows.size))), shape=(num_weights, rows.size))
    xp.copyto(backend.array(out), scatter @ contributions, casting="unsafe")
    return out


custom("embedding_dense_backward(Tensor grad_output, Tensor indices, int num_weights, int padding_idx, "
       "bool scale_grad_by_freq) -> Tensor", _embedding_dense_backward, _embedding_dense_backward)


def _one_hot_kernel(backend, self, num_classes=-1):
    if self.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    values = None if backend.xp is None else backend.array(self)
    if values is not None and values.size and values.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if values is None:
            raise RuntimeError("one_hot: num_classes must be given for meta tensors (the size depends on the data)")
        if not values.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(values.max()) + 1
    elif values is not None and values.size and values.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = backend.empty(self._size + (num_classes,), dt.int64)
    if values is not None:
        backend.xp.equal(values[..., None], backend.xp.arange(num_classes), out=backend.array(out),
                         casting="unsafe")
    return out


custom("one_hot(Tensor self, int num_classes=-1) -> Tensor", _one_hot_kernel, _one_hot_kernel, method=False)


def one_hot(tensor, num_classes=-1):
    """int64 tensor with a trailing dim of num_classes (default: max + 1), 1 at each value's class."""
    return _op("one_hot", tensor, num_classes)


# ---- distances and attention -----------------------------------------------------------------------------------

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Σ (x1 / max(‖x1‖, eps)) (x2 / max(‖x2‖, eps)) along dim, the inputs broadcast together."""
    _require_tensor("cosine_similarity", x1)
    _require_tensor("cosine_similarity", x2, 2, "x2")
    norm1 = _op("linalg_vector_norm", x1, 2, [dim], True, None).clamp(min=eps)
    norm2 = _op("linalg_vector_norm", x2, 2, [dim], True, None).clamp(min=eps)
    return ((x1 / norm1) * (x2 / norm2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """‖x1 - x2 + eps‖_p along the last dim."""
    _require_tensor("pairwise_distance", x1)
    _require_tensor("pairwise_distance", x2, 2, "x2")
    last = max(x1.dim(), x2.dim()) - 1
    return _op("linalg_vector_norm", x1 - x2 + eps, p, [last], keepdim, None)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q kᵀ * scale + mask) v; a bool mask keeps where True, a float mask is added; is_causal masks the
    future. dropout_p applies dropout to the attention weights (pass 0 in evaluation, as modules do)."""
    length, source = query._size[-2], key._size[-2]
    if enable_gqa and query.dim() >= 3 and key._size[-3] != query._size[-3]:
        groups = query._size[-3] // key._size[-3]
        key = key.repeat_interleave(groups, -3)
        value = value.repeat_interleave(groups, -3)
    scale = 1 / math.sqrt(query._size[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        causal = _op("ones", (length, source), dt.bool, None, query.device, None, False, None).tril()
        scores = _where(causal, scores, float("-inf"))
    elif attn_mask is not None:
        scores = _where(attn_mask, scores, float("-inf")) if attn_mask.dtype is dt.bool else scores + attn_mask
    weights = _op("softmax", scores, -1, None)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)

# ---- torch.<name> forms: the ATen signatures PyTorch exposes at top level ------------------------------------

def _top_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return layer_norm(input, normalized_shape, weight, bias, eps)


def _top_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _top_group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(input, num_groups, weight, bias, eps)


def _top_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                       cudnn_enabled):
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def _top_dropout(input, p, train):
    return dropout(input, p, train)


def _top_alpha_dropout(input, p, train):
    return alpha_dropout(input, p, train)


def _top_kl_div(input, target, reduction=1, *, log_target=False):
    return kl_div(input, target, reduction={0: "none", 1: "mean", 2: "sum"}[reduction], log_target=log_target)


for _name, _fn in (("layer_norm", _top_layer_norm), ("batch_norm", _top_batch_norm), ("group_norm", _top_group_norm),
                   ("instance_norm", _top_instance_norm), ("dropout", _top_dropout),
                   ("alpha_dropout", _top_alpha_dropout), ("kl_div", _top_kl_div),
                   ("cosine_similarity", cosine_similarity), ("pairwise_distance", pairwise_distance)):
    composite(_name, _fn, method=False)

# ==== derivatives (derivatives.yaml's entries for the ops above; see ops/derivative.py) ====

def _elu_grad(grad, self, alpha, scale, input_scale):
    negative = grad * ((self * input_scale).exp() * (input_scale * alpha * scale))
    return _where(self > 0, grad * scale, negative)


def _glu_grad(grad, self, dim):
    half = self._size[dim] // 2
    a, b = self.narrow(dim, 0, half), self.narrow(dim, half, half)
    s = b.sigmoid()
    return _op("cat", [grad * s, grad * a * s * (1 - s)], dim)


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


def _loss_grad(grad, values, reduction):
    """The gradient of a reduced (or not) loss whose per-element derivatives are `values`."""
    return grad * values / values.numel() if reduction == 1 else grad * values


def _weighted(values, weight):
    return values if weight is None else values * weight


def _smooth_l1_grad(grad, self, target, reduction, beta):
    d = self - target
    return _loss_grad(grad, d.sign() if beta == 0 else (d / beta).clamp(-1, 1), reduction)


def _bce_logits_grad(grad, self, target, weight, pos_weight, reduction):
    s = self.sigmoid()
    values = s - target if pos_weight is None else (pos_weight * target + 1 - target) * s - pos_weight * target
    return _loss_grad(grad, _weighted(values, weight), reduction)


def _bce_logits_target_grad(grad, self, target, weight, pos_weight, reduction):
    values = -self if pos_weight is None else -self - (pos_weight - 1) * _op("log_sigmoid", self)
    return _loss_grad(grad, _weighted(values, weight), reduction)


def _kept_rows(target, reduction, ignore_index, dtype):
    """(kept mask as dtype, over the kept count for 'mean'; target with ignored entries as class 0)."""
    kept = target != ignore_index
    factor = kept.to(dtype)
    return (factor / factor.sum() if reduction == 1 else factor), _where(kept, target, 0)


def _cross_entropy_index_grad(grads, probs, target, reduction, ignore_index):
    """The loss's gradient, plus softmax's for a gradient that reached the saved probabilities (double backward)."""
    loss_grad, probs_grad = grads
    total = None if loss_grad is None else _op("_cross_entropy_index_backward", loss_grad, probs, target, reduction,
                                                ignore_index)
    if probs_grad is not None:
        through_softmax = _op("_softmax_backward_data", probs_grad, probs, 1, probs.dtype)
        total = through_softmax if total is None else total + through_softmax
    return total


def _cross_entropy_backward_grad_output(grad, probs, target, reduction, ignore_index):
    """The backward is linear in grad_output: its adjoint sums (probs - one_hot(target)) * grad over each row."""
    factor, safe = _kept_rows(target, reduction, ignore_index, grad.dtype)
    rows = ((probs * grad).sum(1) - grad.gather(1, safe.unsqueeze(1)).squeeze(1)) * factor
    return rows if reduction == 0 else rows.sum()


def _standardized(input, dims, eps):
    """((input - mean) * rstd, rstd) over dims, recomputed from input so that double backward sees through them."""
    centered = input - input.mean(dims, True)
    rstd = ((centered * centered).mean(dims, True) + eps).rsqrt()
    return centered * rstd, rstd


def _normalization_input_grad(g, xhat, rstd, dims):
    """The gradient through (x - mean(x)) / std(x) over dims, for g the gradient of the standardized values."""
    return rstd * (g - g.mean(dims, True) - xhat * (g * xhat).mean(dims, True))


def _layer_dims(input, normalized_shape):
    return tuple(range(input.dim() - len(normalized_shape), input.dim()))


def _layer_norm_input_grad(grad, input, normalized_shape, weight, eps, result):
    if grad is None:  # only the mean / rstd outputs were used: PyTorch gives them no gradient either
        return None
    return _op("_layer_norm_input_backward", grad, input, tuple(normalized_shape), result[1], result[2], weight, eps)


def _layer_norm_backward_grad_out(grad, input, normalized_shape, mean, rstd, weight, eps):
    """The input gradient is linear in g = grad_out * weight through a symmetric map: its adjoint is itself."""
    projected = _op("_layer_norm_input_backward", grad, input, tuple(normalized_shape), mean, rstd, None, eps)
    return projected if weight is None else projected * weight


def _layer_norm_backward_weight(grad, grad_out, input, normalized_shape, mean, rstd, eps):
    return grad_out * _op("_layer_norm_input_backward", grad, input, tuple(normalized_shape), mean, rstd, None, eps)


def _layer_norm_backward_input(grad, grad_out, input, normalized_shape, weight, eps):
    """d/dx of <v, dx> with v = grad, for dx = r (g - mean(g) - xhat mean(g xhat)), xhat and r functions of x:
    -r² (xhat (mean(vg) - mean(g) mean(v) - 3 mean(g xhat) mean(v xhat)) + (g - mean(g)) mean(v xhat)
    + mean(g xhat) (v - mean(v))), recomputed from input so that it differentiates again."""
    dims = _layer_dims(input, normalized_shape)
    xhat, rstd = _standardized(input, dims, eps)
    g = grad_out if weight is None else grad_out * weight
    g_mean, v_mean = g.mean(dims, True), grad.mean(dims, True)
    gx, vx = (g * xhat).mean(dims, True), (grad * xhat).mean(dims, True)
    inner = xhat * ((grad * g).mean(dims, True) - g_mean * v_mean - 3 * gx * vx) + (g - g_mean) * vx
    return -(rstd * rstd) * (inner + gx * (grad - v_mean))


def _layer_norm_weight_grad(grad, input, normalized_shape, eps):
    if grad is None:
        return None
    return grad * _standardized(input, _layer_dims(input, normalized_shape), eps)[0]


def _channel_dims(input):
    return (0,) + tuple(range(2, input.dim())), (1, input._size[1]) + (1,) * (input.dim() - 2)


def _batch_norm_xhat(input, stats, training, eps):
    """(standardized input, rstd): the batch's statistics recomputed from input when training; in evaluation the
    running ones the forward saved (its outputs 1 and 2), constants with respect to input."""
    dims, shape = _channel_dims(input)
    if training:
        return _standardized(input, dims, eps)
    rstd = stats[2].view(shape)
    return (input - stats[1].view(shape)) * rstd, rstd


def _batch_norm_input_grad(grad, input, weight, stats, training, eps):
    if grad is None:  # only the saved statistics (outputs 1, 2) were used: they carry no gradient to the input
        return None
    dims, shape = _channel_dims(input)
    g = grad if weight is None else grad * weight.view(shape)
    xhat, rstd = _batch_norm_xhat(input, stats, training, eps)
    return _normalization_input_grad(g, xhat, rstd, dims) if training else g * rstd


def _batch_norm_weight_grad(grad, input, stats, training, eps):
    if grad is None:
        return None
    return (grad * _batch_norm_xhat(input, stats, training, eps)[0]).sum(_channel_dims(input)[0])


def _embedding_double_backward(grad, indices, padding_idx, scale_grad_by_freq, num_weights):
    """embedding_dense_backward is linear in grad_output: its gradient reads grad's rows back, weighted alike."""
    rows = _op("embedding", grad, indices, -1, False, False)
    if padding_idx >= 0:
        rows = _where((indices != padding_idx).unsqueeze(-1), rows, 0.0)
    if scale_grad_by_freq:
        counts = _op("one_hot", indices.reshape(-1).long(), num_weights).sum(0)
        rows = rows / _op("index.Tensor", counts, [indices]).unsqueeze(-1).to(rows.dtype)
    return rows


_HELPERS = {name: globals()[name] for name in (
    "_where", "_elu_grad", "_glu_grad", "_elu_result_grad", "_gelu_grad", "_silu_grad", "_mish_grad",
    "_hardswish_grad", "_op", "_loss_grad", "_weighted", "_smooth_l1_grad", "_bce_logits_grad",
    "_bce_logits_target_grad", "_layer_norm_input_grad", "_layer_norm_weight_grad", "_layer_norm_backward_grad_out",
    "_layer_norm_backward_weight", "_layer_norm_backward_input", "_cross_entropy_index_grad",
    "_cross_entropy_backward_grad_output", "_kept_rows", "_batch_norm_input_grad",
    "_batch_norm_weight_grad", "_channel_dims", "_embedding_double_backward", "_INV_SQRT_2PI",
)}

derivative("relu", self="where_zero(result > 0, grad)")
derivative("leaky_relu", self="_where(self > 0, grad, grad * negative_slope)", helpers=_HELPERS)
derivative("elu", self="_elu_grad(grad, self, alpha, scale, input_scale)", helpers=_HELPERS)
get("elu_").derivative = Derivative(get("elu_"), {"self": "_elu_result_grad(grad, result, alpha, scale, input_scale)"},
                                   name="EluBackward1", helpers=_HELPERS)  # in place: from the output, as PyTorch
derivative("celu", self="_elu_grad(grad, self, alpha, 1, 1 / alpha)", helpers=_HELPERS)
derivative("gelu", self="_gelu_grad(grad, self, approximate)", helpers=_HELPERS)
derivative("silu", self="_silu_grad(grad, self)", helpers=_HELPERS)
derivative("softplus", self="_where(self * beta > threshold, grad, grad * (self * beta).sigmoid())",
           helpers=_HELPERS)
derivative("hardtanh", self="where_zero((self > min_val) & (self < max_val), grad)")
derivative("hardsigmoid", self="where_zero((self > -3) & (self < 3), grad / 6)")
derivative("hardswish", self="_hardswish_grad(grad, self)", helpers=_HELPERS)
derivative("mish", self="_mish_grad(grad, self)", helpers=_HELPERS)
derivative("softshrink", self="where_zero(self.abs() > lambd, grad)")
derivative("hardshrink", self="where_zero(self.abs() > lambd, grad)")
derivative("threshold", self="where_zero(self > threshold, grad)")
derivative("log_sigmoid", self="grad * (-self).sigmoid()")
derivative("_normal_cdf", name="NormalCdfBackward0", self="grad * (self * self * -0.5).exp() * _INV_SQRT_2PI",
           helpers=_HELPERS)
derivative("glu", self="_glu_grad(grad, self, dim)", helpers=_HELPERS)
derivative("softmax", self="_op('_softmax_backward_data', grad, result, dim, self_meta.dtype)", helpers=_HELPERS)
derivative("log_softmax", self="_op('_log_softmax_backward_data', grad, result, dim, self_meta.dtype)",
           helpers=_HELPERS)
derivative("_softmax_backward_data", grad_output="_op('_softmax_backward_data', grad, output, dim, output.dtype)",
           output="grad * (grad_output - (grad_output * output).sum(dim, True)) - grad_output * (grad * output).sum("
                  "dim, True)", helpers=_HELPERS)
derivative("_log_softmax_backward_data", grad_output="grad - (grad * output.exp()).sum(dim, True)",
           output="-grad * output.exp() * grad_output.sum(dim, True)")
derivative("mse_loss", self="_loss_grad(grad, (self - target) * 2, reduction)",
           target="_loss_grad(grad, (target - self) * 2, reduction)", helpers=_HELPERS)
derivative("smooth_l1_loss", self="_smooth_l1_grad(grad, self, target, reduction, beta)",
           target="_smooth_l1_grad(grad, target, self, reduction, beta)", helpers=_HELPERS)
derivative("huber_loss", self="_loss_grad(grad, (self - target).clamp(-delta, delta), reduction)",
           target="_loss_grad(grad, (target - self).clamp(-delta, delta), reduction)", helpers=_HELPERS)
derivative("binary_cross_entropy",
           self="_loss_grad(grad, _weighted((self - target) / ((1 - self) * self).clamp(min=1e-12), weight), "
                "reduction)",
           target="_loss_grad(grad, _weighted((1 - self).log().clamp(min=-100) - self.log().clamp(min=-100), "
                  "weight), reduction)", helpers=_HELPERS)
derivative("binary_cross_entropy_with_logits",
           self="_bce_logits_grad(grad, self, target, weight, pos_weight, reduction)",
           target="_bce_logits_target_grad(grad, self, target, weight, pos_weight, reduction)", helpers=_HELPERS)
derivative("nll_loss", name=lambda args: "NllLoss2DBackward0" if args[0].dim() == 4 else "NllLossBackward0",
           self="_op('nll_loss_backward', grad, self, target, weight, reduction, ignore_index)", helpers=_HELPERS)
derivative("nll_loss_backward", grad_output="_op('nll_loss', grad, target, weight, reduction, ignore_index)",
           helpers=_HELPERS)
derivative("_cross_entropy_index", name="NllLossBackward0",
           self="_cross_entropy_index_grad(grads, result[1], target, reduction, ignore_index)", helpers=_HELPERS)
derivative("_cross_entropy_index_backward",
           grad_output="_cross_entropy_backward_grad_output(grad, probs, target, reduction, ignore_index)",
           probs="grad * (_kept_rows(target, reduction, ignore_index, grad.dtype)[0] * grad_output).unsqueeze(1)",
           helpers=_HELPERS)
derivative("_prelu_kernel", name="PreluKernelBackward0", self="_where(self > 0, grad, grad * weight)",
           weight="_where(self > 0, 0.0, grad * self)", helpers=_HELPERS)
derivative("native_layer_norm", input="_layer_norm_input_grad(grad, input, normalized_shape, weight, eps, result)",
           weight="_layer_norm_weight_grad(grad, input, normalized_shape, eps)", bias="grad", helpers=_HELPERS)
derivative("_layer_norm_input_backward",
           grad_out="_layer_norm_backward_grad_out(grad, input, normalized_shape, mean, rstd, weight, eps)",
           input="_layer_norm_backward_input(grad, grad_out, input, normalized_shape, weight, eps)",
           weight="_layer_norm_backward_weight(grad, grad_out, input, normalized_shape, mean, rstd, eps)",
           helpers=_HELPERS)
derivative("native_batch_norm",
           input="_batch_norm_input_grad(grad, input, weight, result, training, eps)",
           weight="_batch_norm_weight_grad(grad, input, result, training, eps)",
           bias="None if grad is None else grad.sum(_channel_dims(grad)[0])", helpers=_HELPERS)
derivative("embedding", weight="_op('embedding_dense_backward', grad, indices, weight_meta.size[0], padding_idx, "
                              "scale_grad_by_freq)", helpers=_HELPERS)
derivative("embedding_dense_backward", grad_output="_embedding_double_backward(grad, indices, padding_idx, "
                                                   "scale_grad_by_freq, num_weights)", helpers=_HELPERS)
nondifferentiable("one_hot")
