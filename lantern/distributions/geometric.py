"""Geometric (torch.distributions.geometric): the number of failures before the first success (probability probs).

>>> import lantern
>>> from lantern.distributions import Geometric
>>> d = Geometric(lantern.tensor(0.5))
>>> d.log_prob(lantern.tensor(2.0)).exp().item(), d.mean.item()
(0.125, 1.0)
"""
import numbers

import lantern
from lantern.core.size import Size
from lantern.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .distribution import Distribution
from .utils import _probs_or_logits, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """probs in (0, 1] (0 would never succeed), or logits."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        (param,) = _probs_or_logits(self, probs, logits)
        is_scalar = isinstance(probs if probs is not None else logits, numbers.Number)
        super().__init__(Size() if is_scalar else param.size(), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not valid.all():
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to be positive but found invalid values:\n"
                                 f"{value.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return lantern.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=Size()):
        """floor(log u / log(1 - p)) for u ~ U(tiny, 1): the inverse CDF."""
        shape = self._extended_shape(sample_shape)
        tiny = lantern.finfo(self.probs.dtype).tiny
        with lantern.no_grad():
            u = self.probs.new_empty(shape).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.clone(memory_format=lantern.contiguous_format)
        probs[(probs == 1) & (value == 0)] = 0  # certain success: 0 failures has log-probability 0, not 0 * -inf
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
