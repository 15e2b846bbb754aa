"""Samplers the distributions need beyond the elementary ones (torch.distributions' Gamma, Dirichlet, Beta,
Binomial): _standard_gamma with its implicit-reparameterisation gradient _standard_gamma_grad, _sample_dirichlet and
binomial. Each draws from a lantern.Generator (the `generator=` one, else the default), so lantern.manual_seed makes
them reproducible; the streams are lantern's own, not torch's (only the distributions' statistics match).

>>> g = lantern.Generator().manual_seed(0)
>>> x = lantern._standard_gamma(lantern.full((20000,), 3.0, dtype=lantern.float64), generator=g)
>>> abs(x.mean().item() - 3) < 0.05, abs(x.var().item() - 3) < 0.15     # Gamma(3, 1): mean 3, variance 3
(True, True)
"""
import numpy as np

from ..core import dtype as dt
from .derivative import derivative
from .factory import not_implemented_for
from .meta_util import broadcast_shapes
from .pointwise_common import _require_tensor, special
from .random import _gen
from . import random_draws as draws
from .dispatcher import call
from .registry import custom, get, structured


# ---- Gamma(alpha, 1): Marsaglia and Tsang's squeeze method, drawn on the host (random_draws.standard_gamma) -----

def _gamma_kernel_dtype(name, t):
    if t.dtype not in (dt.float32, dt.float64):
        raise not_implemented_for(name, t.dtype)


def _standard_gamma_kernel(backend, self, generator=None):
    _require_tensor("_standard_gamma", self)
    _gamma_kernel_dtype("gamma_cpu", self)
    out = backend.empty(self._size, self.dtype)
    if backend.xp is None or not self.numel():
        return out
    alpha = backend.host_array(self).astype(np.float64)  # the draws run on the host
    samples = backend.from_host(draws.standard_gamma(_gen(generator), alpha.ravel()).reshape(alpha.shape))
    backend.array(out)[...] = _at_least_tiny(backend.xp, samples, self.dtype)  # as torch: never exactly 0
    return out


def _at_least_tiny(xp, values, dtype):
    return xp.maximum(values, np.finfo(dtype.np).tiny).astype(dtype.np)


custom("_standard_gamma(Tensor self, Generator? generator=None) -> Tensor", _standard_gamma_kernel,
       _standard_gamma_kernel, method=False)


# ---- the gradient of a Gamma sample with respect to alpha -----------------------------------------------------

def _standard_gamma_grad_meta(self, output):
    _require_tensor("_standard_gamma_grad", self)
    _require_tensor("_standard_gamma_grad", output, 2, "output")
    return broadcast_shapes(self._size, output._size), self.dtype


def _standard_gamma_grad_impl(xp, out, dtype, alpha, x):
    """dx/dalpha at fixed CDF value (implicit reparameterisation): -(dP/dalpha) / (dP/dx), with P(alpha, x) the
    regularised lower incomplete gamma function. dP/dx is the Gamma density; dP/dalpha is a central difference of
    scipy's gammainc in float64 (a relative step of 1e-5 leaves an error near 1e-9)."""
    sp = special(xp)
    a, x = alpha.astype(np.float64), x.astype(np.float64)
    step = 1e-5 * xp.maximum(a, 1e-3)
    dp_dalpha = (sp.gammainc(a + step, x) - sp.gammainc(a - step, x)) / (2 * step)
    log_density = (a - 1) * xp.log(x) - x - sp.gammaln(a)
    with xp.errstate(over="ignore", invalid="ignore"):
        xp.copyto(out, -dp_dalpha * xp.exp(-log_density), casting="unsafe")


structured("_standard_gamma_grad(Tensor self, Tensor output) -> Tensor", _standard_gamma_grad_meta,
           _standard_gamma_grad_impl, inplace=False, out=False, pointwise=True, method=False)


# ---- Dirichlet: normalised Gamma draws ---------------------------------------------------------------------------

def _sample_dirichlet_kernel(backend, self, generator=None):
    _require_tensor("_sample_dirichlet", self)
    _gamma_kernel_dtype("dirichlet", self)
    out = backend.empty(self._size, self.dtype)
    if backend.xp is None or not self.numel():
        return out
    xp, alpha = backend.xp, backend.host_array(self).astype(np.float64)  # the draws run on the host
    gammas = backend.from_host(draws.standard_gamma(_gen(generator), alpha.ravel()).reshape(alpha.shape))
    gammas = xp.maximum(gammas, np.finfo(np.float64).tiny)
    totals = gammas.sum(-1, keepdims=True) if gammas.ndim else gammas
    backend.array(out)[...] = _at_least_tiny(xp, gammas / totals, self.dtype)
    return out


custom("_sample_dirichlet(Tensor self, Generator? generator=None) -> Tensor", _sample_dirichlet_kernel,
       _sample_dirichlet_kernel,
       method=False)


# ---- Binomial ---------------------------------------------------------------------------------------------------

def _binomial(backend, count, prob, generator=None):
    _require_tensor("binomial", count)
    _require_tensor("binomial", prob, 2, "prob")
    if count.dtype.category != dt.FLOATING:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {count.dtype.legacy}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {prob.dtype.legacy} but expected {count.dtype.legacy}")
    shape = broadcast_shapes(count._size, prob._size)
    out = backend.empty(shape, count.dtype)
    if backend.xp is None or not out.numel():
        return out
    xp, host = backend.xp, backend.to_host  # the draws run on the host
    n = host(xp.broadcast_to(backend.array(count).astype(np.float64), shape).ravel())
    p = host(xp.broadcast_to(backend.array(prob).astype(np.float64), shape).ravel())
    backend.array(out)[...] = backend.from_host(draws.binomial(_gen(generator), n, p).reshape(shape))
    return out


custom("binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor", _binomial, _binomial,
       method=False)




# ---- torch's private functions torch.distributions calls (lantern does not bind underscore ops by itself) ------

def _standard_gamma(input, generator=None):
    """Gamma(input, 1) draws, differentiable in input (implicit reparameterisation)."""
    return call(get("_standard_gamma"), (input, generator))


def _standard_gamma_grad(input, output):
    """d output / d input for output = _standard_gamma(input), elementwise."""
    return call(get("_standard_gamma_grad"), (input, output))


def _sample_dirichlet(input, generator=None):
    """Dirichlet(input) draws over the last dimension."""
    return call(get("_sample_dirichlet"), (input, generator))


derivative("_standard_gamma", name="StandardGammaBackward0", self="grad * _standard_gamma_grad(self, result)",
           helpers={"_standard_gamma_grad": _standard_gamma_grad})
