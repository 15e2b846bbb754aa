"""Activations along a dim or with a weight: softmax, log_softmax and softmin (the row maximum is subtracted
first), their backward-data ops, glu and prelu; op records with derivatives, and the frontends lantern.nn.functional
exports.

>>> import lantern.nn.functional as F
>>> x = lantern.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
>>> F.softmax(x, dim=1).sum(1).tolist(), F.glu(lantern.tensor([1.0, 0.0]), 0).tolist()
([1.0, 1.0], [0.5])
>>> F.prelu(lantern.tensor([-2.0, 2.0]), lantern.tensor([0.25])).tolist()
[-0.5, 2.0]
"""

import numpy as np

from ..core import dtype as dt
from ..core import intra_op
from ..core.reference import mode, specialisation
from .meta_util import pointwise_binary, shape_str, wrap_dim
from .nn_common import _op, _sums_along, _where, _wide
from .numba_kernels import optional_kernels
from .pointwise_common import _require_tensor, special
from .registry import composite, structured
from .derivative import derivative
from ..core.overridable import overridable
from ..core import user_warnings


__all__ = [
    "softmax", "log_softmax", "softmin", "glu", "prelu",
]


# ---- softmax and log_softmax: the row maximum is subtracted first ------------------------------------------

def _softmax_meta(name):
    def meta(self, dim, dtype=None):
        _require_tensor(name, self)
        wrap_dim(dim, self.dim())
        result = dtype or self.dtype
        if result.category != dt.FLOATING and self.numel():  # an empty tensor of any dtype passes, as in PyTorch
            raise NotImplementedError(f'"{name}_lastdim_kernel_impl" not implemented for \'{result.legacy}\'')
        return self._size, result
    return meta


def _rows_of(x, dim):
    """x seen as at least 1-D, and the axis of dim in it."""
    x = x.reshape(x.shape or (1,))
    return x, dim % x.ndim


def _by_rows(x, axis, kernel):
    """kernel(rows) for blocks of x's leading dim, on the intra-op threads where that pays: each softmax along a
    later axis sees one leading index, so any split gives the bits of one call. Along the leading axis, one call."""
    if axis == 0:
        kernel(slice(None))
    else:
        intra_op.parallel_chunks(len(x), lambda start, stop: kernel(slice(start, stop)),
                                 grain=intra_op.grain(x.size // len(x)))


def _into(target, like):
    """target, where a kernel may compute straight into it (same dtype); else None (a temporary, copied after)."""
    return target if target.dtype == like.dtype else None


def _written(xp, target, result):
    """result copied into target, unless the kernel computed it there."""
    if result is not target:
        xp.copyto(target, result, casting="unsafe")


def _shifted(xp, target, x, axis):
    """x - max along axis, written into target when it holds x's dtype."""
    return xp.subtract(x, x.max(axis=axis, keepdims=True), out=_into(target, x))


def _compiled_kernels():
    """lantern.ops.nn_softmax_numba, or None without numba (numba_kernels.py)."""
    return optional_kernels("nn_softmax_numba")


def compiled_rows_apply(xp, axis, *arrays):
    """Whether the compiled softmax kernels serve these arrays: along their last axis, float32 or float64 NumPy
    arrays of one dtype, numba installed, and not reference mode."""
    dtype = arrays[0].dtype
    return (mode.fast and xp is np and axis == arrays[0].ndim - 1 and dtype in (np.float32, np.float64)
            and all(a.dtype == dtype for a in arrays) and _compiled_kernels() is not None)


def _last_axis_rows(a):
    """a seen as 2-D rows of its last axis (a copy where its strides do not allow a view)."""
    return a.reshape(-1, a.shape[-1])


def _softmax_rows(xp, t, x, axis):
    """The softmax of x along axis, written into t."""
    e = _shifted(xp, t, x, axis)
    e = xp.exp(e, out=e)
    e *= 1 / _sums_along(xp, e, axis)
    _written(xp, t, e)


@specialisation(replaces="nn_activation_softmax._softmax_rows's NumPy max along the rows, subtraction and scaling",
                when="softmax along the last axis; compiled_rows_apply: float32/float64 NumPy arrays, numba "
                     "installed (float32 rows of _FUSED_ROW or more take _softmax_rows_fused)",
                parity_test="tests/test_nn_softmax_compiled.py::test_compiled_forward_gives_the_readable_bits",
                ops=("softmax",))
def _softmax_rows_compiled(xp, t, x, axis):
    """_softmax_rows with the shift by the row maximum and the scaling by 1 / Σ in numba loops
    (nn_softmax_numba), exp and the sums NumPy's as there: the same bits."""
    kernels = _compiled_kernels()
    e = t if t.dtype == x.dtype else xp.empty(x.shape, x.dtype)
    rows = _last_axis_rows(e)
    kernels.shift_rows(_last_axis_rows(x), rows)
    xp.exp(rows, out=rows)
    kernels.scale_rows(rows, 1 / _sums_along(xp, rows, 1))
    _written(xp, t, e)


@specialisation(replaces="nn_activation_softmax._softmax_rows (NumPy's max, subtract, exp, sum and scaling passes)",
                when="softmax along a last axis of at least _FUSED_ROW float32 elements; _fused_rows_apply: NumPy "
                     "arrays, numba installed",
                parity_test="tests/test_nn_softmax_compiled.py::test_fused_float32_rows_match_numpy",
                ops=("softmax",))
def _softmax_rows_fused(xp, t, x, axis):
    """_softmax_rows in numba loops (nn_softmax_numba.softmax_rows_float32), within rounding of it."""
    _fused_rows(xp, t, x, _compiled_kernels().softmax_rows_float32)


def _fused_rows(xp, t, x, kernel):
    """kernel(x's rows, rows of an array of x's dtype) written into t."""
    e = t if t.dtype == x.dtype else xp.empty(x.shape, x.dtype)
    kernel(_last_axis_rows(x), _last_axis_rows(e))
    _written(xp, t, e)


# Only rows at least this long (float32) take the fused kernels. They agree with the readable kernel to rounding,
# not in bits (float32_numba's exp is within ~2 ulp, NumPy's 1), and over short rows that difference is what a
# real program sees: word_language_model's log_softmax over its test's 193-word vocabulary trained one epoch to a
# last loss of 2.27 against the readable kernel's (and torch's) 2.22. Shorter rows keep the exact path.
_FUSED_ROW = 256


def _fused_rows_apply(xp, axis, *arrays):
    """Whether the fused float32 kernels serve these arrays: compiled_rows_apply, float32, rows of _FUSED_ROW or
    more."""
    return arrays[0].dtype == np.float32 and arrays[0].shape[-1] >= _FUSED_ROW and compiled_rows_apply(xp, axis,
                                                                                                        *arrays)


def _softmax_rows_kernel(xp, axis, x):
    """The function that computes softmax over rows of x along axis: fused, compiled or readable."""
    if _fused_rows_apply(xp, axis, x):
        return _softmax_rows_fused
    return _softmax_rows_compiled if compiled_rows_apply(xp, axis, x) else _softmax_rows


def _softmax_impl(xp, out, dtype, x, dim, dtype_arg=None):
    x, axis = _rows_of(_wide(x.astype(dtype, copy=False)), dim)
    target = out.reshape(x.shape)
    softmax_rows = _softmax_rows_kernel(xp, axis, x)
    if x.size:
        _by_rows(x, axis, lambda block: softmax_rows(xp, target[block], x[block], axis))


def _log_softmax_rows(xp, t, x, axis):
    """The log_softmax of x along axis, written into t."""
    shifted = _shifted(xp, t, x, axis)
    shifted -= xp.log(_sums_along(xp, xp.exp(shifted), axis))
    _written(xp, t, shifted)


@specialisation(replaces="nn_activation_softmax._log_softmax_rows (NumPy's max, subtract, exp, sum, log and "
                         "subtract passes)",
                when="log_softmax along a last axis of at least _FUSED_ROW float32 elements; _fused_rows_apply: "
                     "NumPy arrays, numba installed",
                parity_test="tests/test_nn_softmax_compiled.py::test_fused_float32_rows_match_numpy",
                ops=("log_softmax",))
def _log_softmax_rows_fused(xp, t, x, axis):
    """_log_softmax_rows in numba loops per row (nn_softmax_numba.log_softmax_rows_float32), within rounding."""
    _fused_rows(xp, t, x, _compiled_kernels().log_softmax_rows_float32)


def _log_softmax_impl(xp, out, dtype, x, dim, dtype_arg=None):
    x, axis = _rows_of(_wide(x.astype(dtype, copy=False)), dim)
    target = out.reshape(x.shape)
    log_softmax_rows = _log_softmax_rows_fused if _fused_rows_apply(xp, axis, x) else _log_softmax_rows
    if x.size:
        _by_rows(x, axis, lambda block: log_softmax_rows(xp, target[block], x[block], axis))


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


def _dots_along(xp, a, b, axis):
    """Σ a * b along axis, kept as a size-1 dim: along the last axis einsum's loop, with no product array."""
    if axis == a.ndim - 1:
        return xp.einsum("...i,...i->...", a, b)[..., None]
    return xp.add.reduce(a * b, axis=axis, keepdims=True)


@specialisation(replaces="_softmax_backward_data's NumPy passes along the rows (dot, subtract, multiply)",
                when="along the last axis; compiled_rows_apply: float32/float64 NumPy arrays of one dtype (the "
                     "output's too), numba installed",
                parity_test="tests/test_nn_softmax_compiled.py::test_compiled_backward_matches_numpy",
                ops=("_softmax_backward_data", "softmax"))
def _softmax_backward_rows_compiled(g, y, target):
    """(g - Σ g * y) * y along the last axis in one numba loop per row (nn_softmax_numba.softmax_backward_rows)."""
    _compiled_kernels().softmax_backward_rows(_last_axis_rows(g), _last_axis_rows(y), _last_axis_rows(target))


def _softmax_backward_impl(xp, out, dtype, grad_output, output, dim, input_dtype):
    """(grad - Σ grad * output) * output along dim, as PyTorch's kernel computes it."""
    g, axis = _rows_of(_wide(grad_output), dim)
    y, target = _wide(output).reshape(g.shape), out.reshape(g.shape)
    if g.size and compiled_rows_apply(xp, axis, g, y, target):
        _by_rows(g, axis, lambda block: _softmax_backward_rows_compiled(g[block], y[block], target[block]))
        return

    def rows(block):
        g_rows, y_rows, t = g[block], y[block], target[block]
        result = xp.subtract(g_rows, _dots_along(xp, g_rows, y_rows, axis), out=_into(t, y))
        result *= y_rows
        _written(xp, t, result)
    if g.size:
        _by_rows(g, axis, rows)


@specialisation(replaces="_log_softmax_backward_data's NumPy passes along the rows (exp, sum, multiply, add)",
                when="along a last axis of at least _FUSED_ROW float32 elements; _fused_rows_apply: NumPy arrays "
                     "of one dtype (the output's too), numba installed",
                parity_test="tests/test_nn_softmax_compiled.py::test_fused_log_softmax_backward_matches_numpy",
                ops=("_log_softmax_backward_data", "log_softmax"))
def _log_softmax_backward_rows_fused(g, y, target):
    """g - exp(y) * Σ g along the last axis in numba loops per row (log_softmax_backward_rows_float32), within
    rounding."""
    _compiled_kernels().log_softmax_backward_rows_float32(_last_axis_rows(g), _last_axis_rows(y),
                                                          _last_axis_rows(target))


def _log_softmax_backward_impl(xp, out, dtype, grad_output, output, dim, input_dtype):
    """grad - exp(output) * Σ grad along dim, the exponentials written straight into out when it can hold them."""
    g, axis = _rows_of(_wide(grad_output), dim)
    y, target = _wide(output).reshape(g.shape), out.reshape(g.shape)
    if g.size and _fused_rows_apply(xp, axis, g, y, target):
        _by_rows(g, axis, lambda block: _log_softmax_backward_rows_fused(g[block], y[block], target[block]))
        return

    def rows(block):
        t = target[block]
        result = xp.exp(y[block], out=_into(t, y))
        result *= -_sums_along(xp, g[block], axis)
        result += g[block]
        _written(xp, t, result)
    if g.size:
        _by_rows(g, axis, rows)


structured("_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
           _backward_data_meta("_softmax_backward_data"), _softmax_backward_impl, inplace=False, out=False)
structured("_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> "
           "Tensor",
           _backward_data_meta("_log_softmax_backward_data"), _log_softmax_backward_impl, inplace=False, out=False)


_HELPERS = {"_op": _op}
derivative("softmax", self="_op('_softmax_backward_data', grad, result, dim, self_meta.dtype)", helpers=_HELPERS)
derivative("log_softmax", self="_op('_log_softmax_backward_data', grad, result, dim, self_meta.dtype)",
           helpers=_HELPERS)
derivative("_softmax_backward_data", grad_output="_op('_softmax_backward_data', grad, output, dim, output.dtype)",
           output="grad * (grad_output - (grad_output * output).sum(dim, True)) - grad_output * (grad * output).sum("
                  "dim, True)", helpers=_HELPERS)
derivative("_log_softmax_backward_data", grad_output="grad - (grad * output.exp()).sum(dim, True)",
           output="-grad * output.exp() * grad_output.sum(dim, True)")


def _softmax_dim(name, ndim):
    user_warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


@overridable
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim, computed as exp(x - max) / sum(exp(x - max))."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim())
    return _op("softmax", input, dim, dtype)


@overridable
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along dim."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim())
    return _op("log_softmax", input, dim, dtype)


@overridable
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
    xp.copyto(out, a * special(xp).expit(b), casting="unsafe")


structured("glu(Tensor self, int dim=-1) -> Tensor", _glu_meta, _glu_impl, inplace=False, method=False)


@overridable
def glu(input, dim=-1):
    """a * sigmoid(b), where a and b are the two halves of input along dim."""
    return _op("glu", input, dim)


def _glu_grad(grad, self, dim):
    half = self._size[dim] // 2
    a, b = self.narrow(dim, 0, half), self.narrow(dim, half, half)
    s = b.sigmoid()
    return _op("cat", [grad * s, grad * a * s * (1 - s)], dim)


derivative("glu", self="_glu_grad(grad, self, dim)", helpers={"_glu_grad": _glu_grad})


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
    elif input.dim() == 0:
        weight = weight.reshape(())  # a 0-d input keeps its 0-d shape (a weight of shape [1] would broadcast it)
    return _op("_prelu_kernel", input, weight)


composite("prelu", prelu)


derivative("_prelu_kernel", name="PreluKernelBackward0", self="_where(self > 0, grad, grad * weight)",
           weight="_where(self > 0, 0.0, grad * self)", helpers={"_where": _where})
