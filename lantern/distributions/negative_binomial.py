"""NegativeBinomial (torch.distributions.negative_binomial): successes before total_count failures, each trial a
success with probability probs. Sampled as a Gamma-Poisson mixture.

>>> import lantern
>>> from lantern.distributions import NegativeBinomial
>>> d = NegativeBinomial(lantern.tensor(3.0), lantern.tensor(0.5))
>>> round(d.log_prob(lantern.tensor(2.0)).exp().item(), 4), d.mean.item()
(0.1875, 3.0)
"""
import lantern
import lantern.nn.functional as F
from lantern.core.size import Size

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import _probs_or_logits, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        total_count, self._param = _probs_or_logits(self, probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(NegativeBinomial, batch_shape, _instance, ("total_count", "probs", "logits"))
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        return new

    @property
    def mean(self):
        return self.total_count * lantern.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / lantern.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=lantern.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=Size()):
        with lantern.no_grad():
            return lantern.poisson(self._gamma.sample(sample_shape=sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = (-lantern.lgamma(self.total_count + value) + lantern.lgamma(1.0 + value)
                             + lantern.lgamma(self.total_count))
        # total_count == value == 0 has probability 1, though lgamma(0) is infinite
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
