"""Kumaraswamy (torch.distributions.kumaraswamy): (1 - (1 - U)^(1/b))^(1/a) for U ~ Uniform(0, 1), a Beta-like
distribution on [0, 1] with a closed-form CDF.

>>> import lantern
>>> from lantern.distributions import Kumaraswamy
>>> d = Kumaraswamy(lantern.tensor(2.0), lantern.tensor(2.0))
>>> round(d.log_prob(lantern.tensor(0.5)).item(), 4), round(d.mean.item(), 4)
(0.4055, 0.5333)
"""
import lantern
from lantern.core.size import Size

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X^n] = b · B(1 + n/a, b)."""
    arg1 = 1 + n / a
    log_value = lantern.lgamma(arg1) + lantern.lgamma(b) - lantern.lgamma(arg1 + b)
    return b * lantern.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(lantern.full_like(self.concentration0, 0), lantern.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(Size(batch_shape))
        new.concentration0 = self.concentration0.expand(Size(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """((a - 1) / (ab - 1))^(1/a), undefined (NaN) where a < 1 or b < 1."""
        log_mode = (self.concentration0.reciprocal() * (-self.concentration0).log1p()
                    - (-self.concentration0 * self.concentration1).log1p())
        undefined = (self.concentration0 < 1) | (self.concentration1 < 1)
        return log_mode.masked_fill(undefined, float("nan")).exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = lantern.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - lantern.log(self.concentration1) - lantern.log(self.concentration0)
