"""Cauchy (torch.distributions.cauchy): the Lorentz distribution; its mean and variance do not exist.

>>> import lantern
>>> from lantern.distributions import Cauchy
>>> d = Cauchy(0.0, 1.0)
>>> round(d.cdf(lantern.tensor(1.0)).item(), 4), d.mean.item()
(0.75, nan)
"""
import math
import numbers

import lantern
from lantern.core.size import Size

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        both_numbers = isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number)
        super().__init__(Size() if both_numbers else self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return lantern.full(self._extended_shape(), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return lantern.full(self._extended_shape(), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.loc + self.loc.new_empty(shape).cauchy_() * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return lantern.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return lantern.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
