"""InverseGamma (torch.distributions.inverse_gamma): 1 / X for X ~ Gamma(concentration, rate).

>>> import lantern
>>> from lantern.distributions import InverseGamma
>>> d = InverseGamma(lantern.tensor(3.0), lantern.tensor(2.0))
>>> d.mean.item(), d.mode.item()
(1.0, 0.5)
"""
import math

import lantern

from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(InverseGamma, _instance))

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        return lantern.where(self.concentration > 1, self.rate / (self.concentration - 1), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        finite = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return lantern.where(self.concentration > 2, finite, math.inf)

    def entropy(self):
        return (self.concentration + self.rate.log() + self.concentration.lgamma()
                - (1 + self.concentration) * self.concentration.digamma())
