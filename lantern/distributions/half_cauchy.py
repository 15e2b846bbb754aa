"""HalfCauchy (torch.distributions.half_cauchy): |X| for X ~ Cauchy(0, scale).

>>> import lantern
>>> from lantern.distributions import HalfCauchy
>>> d = HalfCauchy(1.0)
>>> round(d.log_prob(lantern.tensor(0.0)).item(), 4), d.mean.item()
(-0.4516, inf)
"""
import math

import lantern

from . import constraints
from .cauchy import Cauchy
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(HalfCauchy, _instance))

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return lantern.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def mode(self):
        return lantern.zeros_like(self.scale)

    @property
    def variance(self):
        return self.base_dist.variance

    def log_prob(self, value):
        value = lantern.as_tensor(value, dtype=self.base_dist.scale.dtype, device=self.base_dist.scale.device)
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return lantern.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
