"""lantern.special: torch.special, every function of it.

Most are lantern's registered ops under torch.special's names: the `special_*` ops of ops/special_functions.py
(Bessel, Airy, erfcx, i0e/i1e, log_ndtr, ndtri, entr, zeta, xlog1py) and ops/special_polynomials.py (the
orthogonal polynomials), and the torch functions SciPy names differently (expit is sigmoid, gammaln is lgamma,
psi is digamma, gammainc is igamma, multigammaln is mvlgamma). ndtr is written here from erf, as PyTorch writes it.
See docs/special.md.

>>> import lantern
>>> from lantern import special
>>> special.expit(lantern.tensor([0.0])).tolist(), special.ndtr(lantern.tensor([0.0])).tolist()
([0.5], [0.5])
>>> special.entr(lantern.tensor([0.0, 1.0, -1.0])).tolist()
[0.0, -0.0, -inf]
>>> special.chebyshev_polynomial_t(lantern.tensor([0.5]), 2).tolist()
[-0.5]
"""
import math

import lantern
from lantern import (  # noqa: F401  (torch.special's names for lantern's ops)
    digamma, erf, erfc, erfinv, exp2, expm1, i0, log1p, log_softmax, logit, logsumexp, polygamma, round, sinc,
    softmax, xlogy,
)
from .core.overridable import overridable as _overridable

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
    "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0",
    "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax",
    "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0",
    "xlog1py", "xlogy", "zeta",
]

expit = lantern.sigmoid
gammaln = lantern.lgamma
psi = lantern.digamma
gammainc = lantern.igamma
gammaincc = lantern.igammac
multigammaln = lantern.mvlgamma

# the registered special_<name> ops, under their torch.special names
globals().update({name: getattr(lantern, "special_" + name) for name in __all__ if name not in globals()
                  and hasattr(lantern, "special_" + name)})


@_overridable
def ndtr(input, *, out=None):
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2, computed as PyTorch computes it (so its lower tail
    underflows to 0 where erfc would keep it: ndtr(-9) is 0 in float64)."""
    return lantern.mul(lantern.erf(input * math.sqrt(0.5)) + 1, 0.5, out=out)
