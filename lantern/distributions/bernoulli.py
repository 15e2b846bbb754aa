"""Bernoulli (torch.distributions.bernoulli): 1 with probability probs, else 0; from probs or logits (log-odds).

>>> import lantern
>>> from lantern.distributions import Bernoulli
>>> b = Bernoulli(probs=lantern.tensor([0.2, 0.9]))
>>> b.log_prob(lantern.tensor([0.0, 1.0])).exp().tolist()
[0.7999999523162842, 0.8999999761581421]
"""
import numbers

import lantern
from lantern.core.size import Size
from lantern.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


class Bernoulli(Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(Size() if is_scalar else self._param.size(), validate_args=validate_args)

    def __getattr__(self, name):  # the parameterisation not given is derived on first use
        if name == "probs":
            value = logits_to_probs(self.__dict__["logits"], is_binary=True)
        elif name == "logits":
            value = probs_to_logits(self.__dict__["probs"], is_binary=True)
        else:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        self.__dict__[name] = value
        return value

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with lantern.no_grad():
            return lantern.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        values = lantern.arange(2, dtype=self._param.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
