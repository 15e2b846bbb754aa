"""ExponentialFamily (torch.distributions.exp_family): densities p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)).

A subclass gives its natural parameters θ (`_natural_params`), the log-normalizer F (`_log_normalizer`) and the
carrier measure's expectation E[k(x)] (`_mean_carrier_measure`); entropy then follows from F and its gradient
(H = F(θ) - <θ, ∇F(θ)> - E[k(x)]), computed with autograd, and so does the KL divergence between two members of
one family (a Bregman divergence of F; see kl.py).

>>> import lantern
>>> from lantern.distributions import Exponential
>>> d = Exponential(lantern.tensor([2.0]))
>>> lantern.allclose(d.entropy(), lantern.distributions.ExponentialFamily.entropy(d))
True
"""
import lantern

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self):
        """The natural parameters θ, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """F(θ), the log of the normalising constant, from the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[k(x)], the expected carrier measure."""
        raise NotImplementedError

    def entropy(self):
        """F(θ) - <θ, ∇F(θ)> - E[k(x)], with ∇F from autograd (kept in the graph)."""
        result = -self._mean_carrier_measure
        natural_params = [p.detach().requires_grad_() for p in self._natural_params]
        log_normalizer = self._log_normalizer(*natural_params)
        gradients = lantern.autograd.grad(log_normalizer.sum(), natural_params, create_graph=True)
        result = result + log_normalizer
        for param, gradient in zip(natural_params, gradients):
            result = result - (param * gradient).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
