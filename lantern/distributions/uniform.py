"""Uniform (torch.distributions.uniform): equally likely values in the half-open interval [low, high).

>>> import lantern
>>> from lantern.distributions import Uniform
>>> u = Uniform(0.0, 4.0)
>>> u.log_prob(lantern.tensor(1.0)).exp().item(), u.mean.item(), u.variance.item()
(0.25, 2.0, 1.3333333730697632)
"""
import numbers

import lantern
from lantern.core.size import Size

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """low < high elementwise (checked as low's constraint less_than(high) and high's greater_than(low))."""
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        both_numbers = isinstance(low, numbers.Number) and isinstance(high, numbers.Number)
        super().__init__(Size() if both_numbers else self.low.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return float("nan") * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        rand = lantern.rand(shape, dtype=self.low.dtype)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return lantern.log(lb.mul(ub)) - lantern.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return lantern.log(self.high - self.low)
