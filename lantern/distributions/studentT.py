"""StudentT (torch.distributions.studentT): Student's t with df degrees of freedom, location loc and scale.

A draw is loc + scale · X / sqrt(Z / df) with X ~ N(0, 1) and Z ~ Chi2(df), so rsample is differentiable in all
three parameters.

>>> import lantern
>>> from lantern.distributions import StudentT
>>> d = StudentT(lantern.tensor(3.0))
>>> round(d.log_prob(lantern.tensor(0.0)).item(), 4), d.variance.item()
(-1.0009, 3.0)
"""
import math

import lantern
from lantern.core.size import Size

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        """loc, undefined (NaN) for df <= 1."""
        return self.loc.masked_fill(self.df <= 1, float("nan"))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """scale² df / (df - 2) for df > 2; infinite for 1 < df <= 2; undefined (NaN) for df <= 1."""
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        return lantern.where(self.df > 2, finite, lantern.where(self.df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * lantern.rsqrt(z / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        normaliser = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                      + lantern.lgamma(0.5 * self.df) - lantern.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * lantern.log1p(y ** 2.0 / self.df) - normaliser

    def entropy(self):
        lbeta = lantern.lgamma(0.5 * self.df) + math.lgamma(0.5) - lantern.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (lantern.digamma(0.5 * (self.df + 1))
                                                          - lantern.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
