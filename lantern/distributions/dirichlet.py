"""Dirichlet (torch.distributions.dirichlet): distributions over the probability simplex, with concentration α.

rsample normalises Gamma(α_i, 1) draws; the gradient flows through each Gamma draw's implicit-reparameterisation
derivative (lantern._standard_gamma), an unbiased estimator of the same expectation gradients as torch's.

>>> import lantern
>>> from lantern.distributions import Dirichlet
>>> d = Dirichlet(lantern.tensor([1.0, 1.0, 1.0]))
>>> round(d.log_prob(lantern.tensor([0.2, 0.3, 0.5])).item(), 4), round(d.sample().sum().item(), 5)
(0.6931, 1.0)
"""
import lantern
from lantern.core.size import Size

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Dirichlet, batch_shape, _instance, ("concentration",))

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with lantern.no_grad():
            return lantern._sample_dirichlet(self.concentration.expand(shape))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        gammas = lantern._standard_gamma(self.concentration.expand(shape))
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (lantern.xlogy(self.concentration - 1.0, value).sum(-1) + lantern.lgamma(self.concentration.sum(-1))
                - lantern.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        """(α - 1)+ normalised; where every α < 1 that is 0/0 and torch answers a vertex: the argmax of the NaN row,
        the first one."""
        concentration_m1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentration_m1 / concentration_m1.sum(-1, True)
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = lantern.nn.functional.one_hot(mode.argmax(-1), concentration_m1.shape[-1]).to(mode)
        return lantern.where(all_below_one, vertex, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (lantern.lgamma(self.concentration).sum(-1) - lantern.lgamma(a0) - (k - a0) * lantern.digamma(a0)
                - ((self.concentration - 1.0) * lantern.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - lantern.lgamma(x.sum(-1))
