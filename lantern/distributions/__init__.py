"""lantern.distributions: probability distributions with torch.distributions' API (the common ones so far).

Categorical, Bernoulli, Normal and Uniform, with sample/rsample, log_prob, entropy, mean/variance, torch's shape
rules and argument validation, and kl_divergence between same-family pairs. The rest of torch.distributions (Beta,
Gamma, MultivariateNormal, the transforms, ...) is not implemented yet: see docs/unsupported-torch-names.md.

>>> import lantern
>>> from lantern.distributions import Categorical
>>> policy = Categorical(logits=lantern.tensor([[0.0, 1.0, 2.0]]))
>>> policy.batch_shape, policy.event_shape, policy.sample().shape
(lantern.Size([1]), lantern.Size([]), lantern.Size([1]))
"""
from . import constraints  # noqa: F401
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "Uniform", "kl_divergence", "register_kl"]
