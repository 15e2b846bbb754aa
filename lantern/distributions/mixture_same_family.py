"""MixtureSameFamily (torch.distributions.mixture_same_family): a mixture whose components are one batched
distribution; the Categorical `mixture_distribution` weighs the rightmost batch dim of `component_distribution`.

>>> import lantern
>>> from lantern.distributions import Categorical, MixtureSameFamily, Normal
>>> mix = MixtureSameFamily(Categorical(lantern.tensor([0.5, 0.5])),
...                         Normal(lantern.tensor([-1.0, 1.0]), lantern.tensor([1.0, 1.0])))
>>> mix.batch_shape, mix.mean.item(), mix.variance.item()
(lantern.Size([]), 0.0, 2.0)
"""
import lantern
from lantern.core.size import Size

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """log p(x) = logsumexp_k (log w_k + log p_k(x)); sampling picks a component, then takes its draw."""
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(self._mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
        if not isinstance(self._component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mixture_batch = self._mixture_distribution.batch_shape
        component_batch = self._component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mixture_batch), reversed(component_batch)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mixture_batch}) is not compatible with "
                                 f"`component_distribution.batch_shape`({component_batch})")
        km = self._mixture_distribution.logits.shape[-1]
        kc = self._component_distribution.batch_shape[-1]
        if km is not None and kc is not None and km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = self._component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=component_batch, event_shape=event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape=batch_shape, event_shape=new._component_distribution.event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return lantern.sum(probs * self.component_distribution.mean, dim=-1 - self._event_ndims)

    @property
    def variance(self):
        """The law of total variance: E[Var(x | k)] + Var(E[x | k])."""
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        mean_cond_var = lantern.sum(probs * self.component_distribution.variance, dim=-1 - self._event_ndims)
        var_cond_mean = lantern.sum(probs * (self.component_distribution.mean - self._pad(self.mean)).pow(2.0),
                                    dim=-1 - self._event_ndims)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return lantern.sum(cdf_x * self.mixture_distribution.probs, dim=-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix_prob = lantern.log_softmax(self.mixture_distribution.logits, dim=-1)
        return lantern.logsumexp(log_prob_x + log_mix_prob, dim=-1)

    def sample(self, sample_shape=Size()):
        with lantern.no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            event_shape = self.event_shape
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_shape = mix_sample.shape
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(mix_shape + Size([1] * (len(event_shape) + 1)))
            index = index.repeat(Size([1] * len(mix_shape)) + Size([1]) + event_shape)
            return lantern.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        """The mixture weights shaped to broadcast against the components' (batch..., k, event...) values."""
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = x.shape
        return x.reshape(xs[:-1] + Size(pad_ndims * [1]) + xs[-1:] + Size(self._event_ndims * [1]))

    def __repr__(self):
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
