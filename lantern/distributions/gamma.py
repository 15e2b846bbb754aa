"""Gamma (torch.distributions.gamma): shape `concentration` (α) and inverse scale `rate` (β).

rsample is Gamma(α, 1) / β with the implicit-reparameterisation gradient of lantern._standard_gamma.

>>> import lantern
>>> from lantern.distributions import Gamma
>>> d = Gamma(lantern.tensor(2.0), lantern.tensor(1.0))
>>> round(d.log_prob(lantern.tensor(1.0)).item(), 4), d.mean.item(), d.variance.item()
(-1.0, 2.0, 2.0)
"""
import numbers

import lantern
from lantern.core.size import Size

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        both_numbers = isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number)
        super().__init__(Size() if both_numbers else self.concentration.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        value = lantern._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=lantern.finfo(value.dtype).tiny)  # never exactly 0, whose log is -inf
        return value

    def log_prob(self, value):
        value = lantern.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (lantern.xlogy(self.concentration, self.rate) + lantern.xlogy(self.concentration - 1, value)
                - self.rate * value - lantern.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - lantern.log(self.rate) + lantern.lgamma(self.concentration)
                + (1.0 - self.concentration) * lantern.digamma(self.concentration))

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return lantern.lgamma(x + 1) + (x + 1) * lantern.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return lantern.special.gammainc(self.concentration, self.rate * value)
