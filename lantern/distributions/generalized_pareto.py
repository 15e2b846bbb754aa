"""GeneralizedPareto (torch.distributions.generalized_pareto): the tail model with location loc, scale and shape
`concentration` ξ; ξ = 0 is the shifted Exponential, ξ > 0 a Pareto, ξ = -1 a Uniform. Where ξ is (close to) 0 the
ξ-formulas are 0/0 and the Exponential's are used instead.

>>> import lantern
>>> from lantern.distributions import GeneralizedPareto
>>> d = GeneralizedPareto(lantern.tensor(0.0), lantern.tensor(1.0), lantern.tensor(0.0))   # Exponential(1)
>>> round(d.log_prob(lantern.tensor(2.0)).item(), 4), round(d.cdf(lantern.tensor(1.0)).item(), 4)
(-2.0, 0.6321)
"""
import math
import numbers

import lantern
from lantern.core.size import Size

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        all_numbers = all(isinstance(v, numbers.Number) for v in (loc, scale, concentration))
        super().__init__(Size() if all_numbers else self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def _near_zero_and_safe_concentration(self):
        """(where ξ ≈ 0, ξ with those entries replaced by 1 so the ξ-formulas stay finite there)."""
        near_zero = lantern.isclose(self.concentration, lantern.zeros_like(self.concentration))
        return near_zero, lantern.where(near_zero, lantern.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=Size()):
        u = lantern.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        near_zero, safe = self._near_zero_and_safe_concentration()
        y = 1 / safe + lantern.ones_like(z)
        where_nonzero = lantern.where(y == 0, y, y * lantern.log1p(safe * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, numbers.Real) else self.scale.log()
        return -log_scale - lantern.where(near_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        near_zero, safe = self._near_zero_and_safe_concentration()
        return lantern.where(near_zero, -z, -lantern.log1p(safe * z) / safe)

    def log_cdf(self, value):
        return lantern.log1p(-lantern.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return lantern.exp(self.log_cdf(value))

    def icdf(self, value):
        near_zero, safe = self._near_zero_and_safe_concentration()
        log_u = lantern.log1p(-value)
        where_nonzero = self.loc + self.scale / safe * lantern.expm1(-safe * log_u)
        return lantern.where(near_zero, self.loc - self.scale * log_u, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe = lantern.where(valid, self.concentration, 0.5)
        return lantern.where(valid, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe = lantern.where(valid, self.concentration, 0.25)
        return lantern.where(valid, self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe)), math.nan)

    def entropy(self):
        return lantern.broadcast_to(lantern.log(self.scale) + self.concentration + 1, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = lantern.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)
