"""Laplace (torch.distributions.laplace): the double exponential, density exp(-|x - loc| / scale) / (2 scale).

>>> import lantern
>>> from lantern.distributions import Laplace
>>> d = Laplace(0.0, 1.0)
>>> round(d.log_prob(lantern.tensor(1.0)).item(), 4), d.variance.item()
(-1.6931, 2.0)
"""
import numbers

import lantern
from lantern.core.size import Size

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        both_numbers = isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number)
        super().__init__(Size() if both_numbers else self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Laplace, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=Size()):
        """Inverse CDF at u ~ U(eps - 1, 1): loc - scale · sign(u) · log(1 - |u|)."""
        shape = self._extended_shape(sample_shape)
        finfo = lantern.finfo(self.loc.dtype)
        u = self.loc.new_empty(shape).uniform_(finfo.eps - 1, 1)
        return self.loc - self.scale * u.sign() * lantern.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -lantern.log(2 * self.scale) - lantern.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * lantern.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * lantern.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + lantern.log(2 * self.scale)
