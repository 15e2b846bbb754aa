"""Multinomial (torch.distributions.multinomial): counts per class of total_count Categorical draws.

>>> import lantern
>>> from lantern.distributions import Multinomial
>>> d = Multinomial(4, lantern.tensor([0.5, 0.5]))
>>> round(d.log_prob(lantern.tensor([2.0, 2.0])).exp().item(), 4), d.sample().sum().item()
(0.375, 4.0)
"""
import lantern
from lantern.core.size import Size

from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """total_count must be one Python int for the whole batch (sampling needs it; log_prob does not)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    total_count: int

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        sample_shape = Size(sample_shape)
        samples = self._categorical.sample(Size((self.total_count,)) + sample_shape)
        samples = samples.permute(*range(1, samples.dim()), 0)  # the trials' dim last
        counts = samples.new_zeros(self._extended_shape(sample_shape))
        counts.scatter_add_(-1, samples, lantern.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        n = lantern.tensor(self.total_count)
        term1 = n * self._categorical.entropy() - lantern.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = lantern.exp(self._binomial.log_prob(support))
        weights = lantern.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum([0, -1])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone(memory_format=lantern.contiguous_format)
        log_factorial_n = lantern.lgamma(value.sum(-1) + 1)
        log_factorial_xs = lantern.lgamma(value + 1).sum(-1)
        logits[(value == 0) & (logits == -float("inf"))] = 0  # 0 draws of an impossible class: 0 * -inf is 0
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
