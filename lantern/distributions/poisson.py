"""Poisson (torch.distributions.poisson): event counts with mean `rate`.

>>> import lantern
>>> from lantern.distributions import Poisson
>>> d = Poisson(lantern.tensor(2.0))
>>> round(d.log_prob(lantern.tensor(1.0)).exp().item(), 4), d.variance.item()
(0.2707, 2.0)
"""
import numbers

import lantern
from lantern.core.size import Size

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, numbers.Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with lantern.no_grad():
            return lantern.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (lantern.log(self.rate),)

    def _log_normalizer(self, x):
        return lantern.exp(x)
