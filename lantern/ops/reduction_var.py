"""Variance and standard deviation: var, std, var_mean, std_mean (correction= / unbiased=), their records,
kernels (two passes, in double precision), frontends and derivatives.

>>> y = lantern.tensor([[1., 5., 3.], [2., 2., 8.]])
>>> y.var(1).tolist(), y.var(1, unbiased=False).tolist()
([4.0, 12.0], [2.6666667461395264, 8.0])
>>> [t.tolist() for t in lantern.std_mean(y, 1, correction=0)][1]
[3.0, 4.0]
"""
import math

import numpy as np

from ..core import dtype as dt
from .meta_util import wrap_dims
from .pointwise_common import _require_tensor
from .dispatcher import call
from .registry import composite, custom, get, structured
from .derivative import derivative
from .derivative_helpers import mean_backward, unsqueeze_reduced
from .reduction import _axes, _dims, _into_out, _no_dims, _where, reduced_shape


# ---- var / std and their mean-returning forms (correction=, unbiased=) --------------------------------------

def _count(sizes, dim):
    """How many elements a reduction over `dim` (None or [] = every dim) combines."""
    n = 1
    for d in range(len(sizes)) if _no_dims(dim) else wrap_dims(dim, len(sizes)):
        n *= sizes[d]
    return n


def _wide(a):
    """a in float64 / complex128: reductions accumulate there (PyTorch's CPU accumulate type for var and norm)."""
    return a.astype(np.complex128 if dt.holds_complex(a.dtype) else np.float64, copy=False)


def _moments(xp, a, dim, correction, keepdim):
    """(variance, mean) of `a` over `dim`, two-pass in double precision; the divisor is max(N - correction, 0)."""
    axis = _axes(a, dim)
    a = _wide(a)
    n = a.size if axis is None else math.prod(a.shape[d] for d in axis)
    mean = xp.sum(a, axis=axis, keepdims=True) / n
    dev = a - mean
    square = dev.real * dev.real + dev.imag * dev.imag if a.dtype.kind == "c" else dev * dev
    c = 1 if correction is None else correction
    var = xp.sum(square, axis=axis, keepdims=keepdim) / max(n - c, 0)
    return var, mean.reshape(var.shape)


def _var_meta(name):
    def meta(self, dim=None, correction=None, keepdim=False):
        _require_tensor(name, self)
        if self.dtype.category < dt.FLOATING:
            raise RuntimeError(f"std and var only support floating point and complex dtypes (in {name}: got "
                               f"{self.dtype}; convert the input with .float() first)")
        return reduced_shape(self._size, _dims(self, dim), keepdim), self.dtype.to_real()
    return meta


def _var_impl(xp, out, dtype, self, dim=None, correction=None, keepdim=False):
    out[...] = _moments(xp, self, dim, correction, keepdim)[0]


def _std_impl(xp, out, dtype, self, dim=None, correction=None, keepdim=False):
    out[...] = xp.sqrt(_moments(xp, self, dim, correction, keepdim)[0])


_VAR_ARGS = "(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)"
structured(f"var.correction{_VAR_ARGS} -> Tensor", _var_meta("var"), _var_impl, inplace=False, out=False)
structured(f"std.correction{_VAR_ARGS} -> Tensor", _var_meta("std"), _std_impl, inplace=False, out=False)


def _var_mean_kernel(name, root):
    meta_of = _var_meta(name)

    def kernel(backend, self, dim=None, correction=None, keepdim=False):
        shape, dtype = meta_of(self, dim, correction, keepdim)
        var, mean = _moments(backend.xp, backend.array(self), dim, correction, keepdim)
        spread, center = backend.empty(shape, dtype), backend.empty(shape, self.dtype)
        spread._nd[...] = backend.xp.sqrt(var) if root else var
        center._nd[...] = mean
        return spread, center

    def meta(backend, self, dim=None, correction=None, keepdim=False):
        shape, dtype = meta_of(self, dim, correction, keepdim)
        return backend.empty(shape, dtype), backend.empty(shape, self.dtype)
    return kernel, meta


custom(f"var_mean.correction{_VAR_ARGS} -> (Tensor, Tensor)", *_var_mean_kernel("var_mean", False))
custom(f"std_mean.correction{_VAR_ARGS} -> (Tensor, Tensor)", *_var_mean_kernel("std_mean", True))


def _correction(name, dim, unbiased, correction):
    """(dim, correction) from PyTorch's overloads: name(x, dim, unbiased, keepdim), name(x, unbiased) and
    name(x, dim, *, correction=, keepdim=)."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"{name}(): pass either unbiased= or correction=, not both (unbiased=True is "
                            "correction=1, unbiased=False is correction=0)")
        correction = 1 if unbiased else 0
    return dim, correction


def _var_frontend(name):
    op = get(name + ".correction")

    def frontend(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        dim, correction = _correction(name, dim, unbiased, correction)
        result = call(op, (input, dim, correction, keepdim))
        return result if out is None else _into_out(name, result, out)
    return frontend


def _var_mean_frontend(name):
    op = get(name + ".correction")

    def frontend(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        dim, correction = _correction(name, dim, unbiased, correction)
        return call(op, (input, dim, correction, keepdim))
    return frontend


for _name, _make in (("var", _var_frontend), ("std", _var_frontend), ("var_mean", _var_mean_frontend),
                     ("std_mean", _var_mean_frontend)):
    _fn = _make(_name)
    _fn.__name__ = _fn.__qualname__ = _name
    _fn.__doc__ = f"{_name}(input, dim=None, unbiased=None, keepdim=False, *, correction=None): see " \
                  f"lantern.ops.registry.get('{_name}.correction')."
    composite(_name, _fn, method=_name in ("var", "std"))


def var_backward(grad, self, dim, correction, keepdim):
    """d var / d x = 2 (x - mean) / (N - correction), the gradient spread back over the reduced dims."""
    sizes = self._size
    dof = max(_count(sizes, dim) - (1 if correction is None else correction), 0)
    scale = 2.0 / dof if dof else float("inf")
    centered = self - self.mean(_dims(self, dim), True)
    return scale * unsqueeze_reduced(grad, sizes, dim, keepdim) * centered


def std_backward(result, grad, self, dim, correction, keepdim):
    """std = sqrt(var): d std = d var / (2 std), taken as 0 where std is 0."""
    return var_backward(_where(result == 0, 0.0, grad / (result * 2)), self, dim, correction, keepdim)


def var_mean_backward(grad_var, grad_mean, self, dim, correction, keepdim):
    grads = []
    if grad_var is not None:
        grads.append(var_backward(grad_var, self, dim, correction, keepdim))
    if grad_mean is not None:
        grads.append(mean_backward(grad_mean, self._size, dim, keepdim))
    return grads[0] if len(grads) == 1 else grads[0] + grads[1]


def std_mean_backward(grad_std, grad_mean, self, std, dim, correction, keepdim):
    grad_var = None if grad_std is None else _where(std == 0, 0.0, grad_std / (std * 2))
    return var_mean_backward(grad_var, grad_mean, self, dim, correction, keepdim)


_HELPERS = {f.__name__: f for f in (var_backward, std_backward, var_mean_backward, std_mean_backward)}

derivative("var.correction", name="VarBackward0", helpers=_HELPERS,
           self="var_backward(grad, self, dim, correction, keepdim)")
derivative("std.correction", name="StdBackward0", helpers=_HELPERS,
           self="std_backward(result, grad, self, dim, correction, keepdim)")
derivative("var_mean.correction", name="VarMeanBackward0", helpers=_HELPERS,
           self="var_mean_backward(grads[0], grads[1], self, dim, correction, keepdim)")
derivative("std_mean.correction", name="StdMeanBackward0", helpers=_HELPERS,
           self="std_mean_backward(grads[0], grads[1], self, result0, dim, correction, keepdim)")
