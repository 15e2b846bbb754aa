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
from .meta_results import OutputMeta


# ---- Gamma(alpha, 1): Marsaglia and Tsang's squeeze method ------------------------------------------------------

def standard_gamma_draws(generator, alpha):
    """One Gamma(alpha, 1) draw per element of the float64 array `alpha`.

    For alpha >= 1, with d = alpha - 1/3 and c = 1/sqrt(9d): draw x ~ N(0, 1) and u ~ U(0, 1), let v = (1 + cx)^3,
    and accept d·v when v > 0 and log u < x²/2 + d - d·v + d·log v (rejected elements draw again). For alpha < 1,
    Gamma(alpha) = Gamma(alpha + 1) · u^(1/alpha)."""
    boosted = np.where(alpha < 1, alpha + 1, alpha)
    d = boosted - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    result = np.empty_like(alpha)
    pending = np.flatnonzero(alpha > 0)
    while pending.size:
        x = draws.normal_serial(generator, pending.size, 0.0, 1.0)
        u = draws.unit_uniform(generator, pending.size, np.float64)
        v = (1 + c[pending] * x) ** 3
        with np.errstate(invalid="ignore", divide="ignore"):
            accept = (v > 0) & (np.log(u) < 0.5 * x * x + d[pending] - d[pending] * v + d[pending] * np.log(v))
        result[pending[accept]] = d[pending[accept]] * v[accept]
        pending = pending[~accept]
    small = alpha < 1
    if small.any():
        u = draws.unit_uniform(generator, int(small.sum()), np.float64)
        with np.errstate(divide="ignore"):
            result[small] *= u ** (1.0 / alpha[small])
    return np.where(alpha > 0, result, 0.0)


def _gamma_kernel_dtype(name, t):
    if t.dtype not in (dt.float32, dt.float64):
        raise not_implemented_for(name, t.dtype)


def _standard_gamma_kernel(backend, self, generator=None):
    _require_tensor("_standard_gamma", self)
    _gamma_kernel_dtype("gamma_cpu", self)
    out = backend.empty(self._size, self.dtype)
    if backend.xp is None or not self.numel():
        return out
    alpha = backend.array(self).astype(np.float64)
    samples = standard_gamma_draws(_gen(generator), alpha.ravel()).reshape(alpha.shape)
    backend.array(out)[...] = _at_least_tiny(samples, self.dtype)  # as torch: never exactly 0
    return out


def _at_least_tiny(values, dtype):
    return np.maximum(values, np.finfo(dtype.np).tiny).astype(dtype.np)


custom("_standard_gamma(Tensor self, Generator? generator=None) -> Tensor", _standard_gamma_kernel,
       _standard_gamma_kernel, method=False)


# ---- the gradient of a Gamma sample with respect to alpha -----------------------------------------------------

def _standard_gamma_grad_meta(self, output):
    _require_tensor("_standard_gamma_grad", self)
    _require_tensor("_standard_gamma_grad", output, 2, "output")
    return OutputMeta(broadcast_shapes(self._size, output._size), self.dtype)


def _standard_gamma_grad_impl(xp, out, dtype, alpha, x):
    """dx/dalpha at fixed CDF value (implicit reparameterisation): -(dP/dalpha) / (dP/dx), with P(alpha, x) the
    regularised lower incomplete gamma function. dP/dx is the Gamma density; dP/dalpha is a central difference of
    scipy's gammainc in float64 (a relative step of 1e-5 leaves an error near 1e-9)."""
    sp = special(xp)
    a, x = alpha.astype(np.float64), x.astype(np.float64)
    step = 1e-5 * xp.maximum(a, 1e-3)
    dp_dalpha = (sp.gammainc(a + step, x) - sp.gammainc(a - step, x)) / (2 * step)
    log_density = (a - 1) * xp.log(x) - x - sp.gammaln(a)
    with np.errstate(over="ignore", invalid="ignore"):
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
    alpha = backend.array(self).astype(np.float64)
    gammas = standard_gamma_draws(_gen(generator), alpha.ravel()).reshape(alpha.shape)
    gammas = np.maximum(gammas, np.finfo(np.float64).tiny)
    totals = gammas.sum(-1, keepdims=True) if gammas.ndim else gammas
    backend.array(out)[...] = _at_least_tiny(gammas / totals, self.dtype)
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
    n = np.broadcast_to(backend.array(count).astype(np.float64), shape).ravel()
    p = np.broadcast_to(backend.array(prob).astype(np.float64), shape).ravel()
    backend.array(out)[...] = binomial_draws(_gen(generator), n, p).reshape(shape)
    return out


def binomial_draws(generator, n, p):
    """Binomial(n, p) draws: NumPy's BTPE/inversion sampler, seeded with a 64-bit word from the lantern generator
    (so lantern.manual_seed fixes them; the algorithm is NumPy's, the stream is not torch's)."""
    seed = int(generator.engine.random64(1)[0])
    return np.random.default_rng(seed).binomial(n.astype(np.int64), np.clip(p, 0.0, 1.0)).astype(np.float64)


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
