"""lantern.special: torch.special's functions that lantern has.

Most are lantern's own ops under SciPy's names (expit is sigmoid, gammaln is lgamma, psi is digamma); ndtr, entr
and xlog1py are written here from them. The Bessel functions and orthogonal polynomials are not implemented yet
(see docs/unsupported-torch-names.md).

>>> import lantern
>>> from lantern import special
>>> special.expit(lantern.tensor([0.0])).tolist(), special.ndtr(lantern.tensor([0.0])).tolist()
([0.5], [0.5])
>>> special.entr(lantern.tensor([0.0, 1.0, -1.0])).tolist()
[0.0, -0.0, -inf]
"""
import math

import lantern
from lantern import (  # noqa: F401  (torch.special's names for lantern's ops)
    digamma, erf, erfc, erfinv, exp2, expm1, i0, log1p, log_softmax, logit, logsumexp, polygamma, round, sinc,
    softmax, xlogy,
)

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "log1p",
           "log_softmax", "logit", "logsumexp", "ndtr", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py",
           "xlogy"]

expit = lantern.sigmoid
gammaln = lantern.lgamma
psi = lantern.digamma


def ndtr(input):
    """The standard normal CDF, ½·erfc(-x/√2) (erfc keeps the lower tail accurate)."""
    return 0.5 * lantern.erfc(input * -math.sqrt(0.5))


def entr(input):
    """Elementwise entropy term: -x·ln x for x > 0, 0 at 0, -inf below 0 (NaN stays NaN)."""
    x = input if input.dtype.is_floating_point else input.to(lantern.get_default_dtype())
    positive = x > 0
    safe = lantern.where(positive, x, lantern.ones_like(x))  # keeps log's gradient finite where it is not used
    outside = lantern.where(x == 0, lantern.zeros_like(x), lantern.full_like(x, -math.inf))
    return lantern.where(positive, -safe * safe.log(), lantern.where(x.isnan(), x, outside))


def xlog1py(input, other):
    """input·log1p(other), 0 where input is 0 (unless other is NaN)."""
    x, y = lantern.broadcast_tensors(*_as_float_tensors(input, other))
    result = x * y.log1p()
    return lantern.where((x == 0) & ~y.isnan(), lantern.zeros_like(result), result)


def _as_float_tensors(input, other):
    """Both operands as tensors of their promoted floating type (a Python number joins the tensor's dtype)."""
    tensors = [v if isinstance(v, lantern.Tensor) else lantern.tensor(v) for v in (input, other)]
    dtype = lantern.result_type(input, other)
    if not dtype.is_floating_point:
        dtype = lantern.get_default_dtype()
    return [t.to(dtype) for t in tensors]
