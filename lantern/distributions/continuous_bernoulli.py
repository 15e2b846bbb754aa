"""ContinuousBernoulli (torch.distributions.continuous_bernoulli): on [0, 1], density ∝ p^x (1 - p)^(1 - x).

Near probs = 0.5 the normaliser and moments are 0/0 forms; inside (lims[0], lims[1]) they are taken from their
Taylor expansions around 0.5 instead.

>>> import lantern
>>> from lantern.distributions import ContinuousBernoulli
>>> d = ContinuousBernoulli(lantern.tensor(0.8))
>>> round(d.log_prob(lantern.tensor(0.5)).item(), 4), round(d.mean.item(), 4)
(-0.0788, 0.612)
"""
import math
import numbers

import lantern
from lantern.core.size import Size
from lantern.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _probs_or_logits, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        (self._param,) = _probs_or_logits(self, probs, logits)
        is_scalar = isinstance(probs if probs is not None else logits, numbers.Number)
        if probs is not None:
            # checked before the clamp below, which would make any value pass
            if validate_args is not None and not self.arg_constraints["probs"].check(self.probs).all():
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(Size() if is_scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(ContinuousBernoulli, batch_shape, _instance, ("probs", "logits"))
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        new._lims = self._lims
        return new

    def _outside_unstable_region(self):
        return lantern.max(lantern.le(self.probs, self._lims[0]), lantern.gt(self.probs, self._lims[1]))

    def _cut_probs(self):
        return lantern.where(self._outside_unstable_region(), self.probs,
                             self._lims[0] * lantern.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log of the normalising constant 2 atanh(1 - 2p) / (1 - 2p)."""
        cut_probs = self._cut_probs()
        below_half = lantern.where(lantern.le(cut_probs, 0.5), cut_probs, lantern.zeros_like(cut_probs))
        above_half = lantern.where(lantern.ge(cut_probs, 0.5), cut_probs, lantern.ones_like(cut_probs))
        log_norm = (lantern.log(lantern.abs(lantern.log1p(-cut_probs) - lantern.log(cut_probs)))
                    - lantern.where(lantern.le(cut_probs, 0.5), lantern.log1p(-2.0 * below_half),
                                    lantern.log(2.0 * above_half - 1.0)))
        x = lantern.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return lantern.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (lantern.log1p(-cut_probs) - lantern.log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * lantern.pow(x, 2)) * x
        return lantern.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return lantern.sqrt(self.variance)

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / lantern.pow(1.0 - 2.0 * cut_probs, 2)
                     + 1.0 / lantern.pow(lantern.log1p(-cut_probs) - lantern.log(cut_probs), 2))
        x = lantern.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return lantern.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=Size()):
        u = lantern.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype, device=self.probs.device)
        with lantern.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        u = lantern.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = ((lantern.pow(cut_probs, value) * lantern.pow(1.0 - cut_probs, 1.0 - value) + cut_probs - 1.0)
                / (2.0 * cut_probs - 1.0))
        unbounded_cdfs = lantern.where(self._outside_unstable_region(), cdfs, value)
        return lantern.where(lantern.le(value, 0.0), lantern.zeros_like(value),
                             lantern.where(lantern.ge(value, 1.0), lantern.ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        return lantern.where(self._outside_unstable_region(),
                             (lantern.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - lantern.log1p(-cut_probs))
                             / (lantern.log(cut_probs) - lantern.log1p(-cut_probs)), value)

    def entropy(self):
        log_probs0 = lantern.log1p(-self.probs)
        log_probs1 = lantern.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = lantern.max(lantern.le(x, self._lims[0] - 0.5), lantern.gt(x, self._lims[1] - 0.5))
        cut_nat_params = lantern.where(outside, x, (self._lims[0] - 0.5) * lantern.ones_like(x))
        log_norm = lantern.log(lantern.abs(lantern.expm1(cut_nat_params))) - lantern.log(lantern.abs(cut_nat_params))
        taylor = 0.5 * x + lantern.pow(x, 2) / 24.0 - lantern.pow(x, 4) / 2880.0
        return lantern.where(outside, log_norm, taylor)
