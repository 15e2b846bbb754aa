"""kl_divergence and register_kl (torch.distributions.kl): KL(p ‖ q) by a table of (type of p, type of q) rules.

>>> import lantern
>>> from lantern.distributions import Normal, kl_divergence
>>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item()
0.5
"""
import lantern

from .bernoulli import Bernoulli
from .categorical import Categorical
from .normal import Normal

__all__ = ["kl_divergence", "register_kl"]

_KL_RULES = {}


def register_kl(type_p, type_q):
    """Decorator: register fn(p, q) as KL(p ‖ q) for p of type_p and q of type_q (subclasses match too)."""
    def decorator(fn):
        _KL_RULES[type_p, type_q] = fn
        return fn
    return decorator


def _rule(type_p, type_q):
    """The registered rule for the closest pair of base classes (each class's MRO in order), or None."""
    for p_base in type_p.__mro__:
        for q_base in type_q.__mro__:
            if (p_base, q_base) in _KL_RULES:
                return _KL_RULES[p_base, q_base]
    return None


def kl_divergence(p, q):
    fn = _rule(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = t.masked_fill((q.probs == 0).expand_as(t), float("inf"))
    t = t.masked_fill((p.probs == 0).expand_as(t), 0)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (lantern.nn.functional.softplus(-q.logits) - lantern.nn.functional.softplus(-p.logits))
    t1 = t1.masked_fill(q.probs == 0, float("inf")).masked_fill(p.probs == 0, 0)
    t2 = (1 - p.probs) * (lantern.nn.functional.softplus(q.logits) - lantern.nn.functional.softplus(p.logits))
    t2 = t2.masked_fill(q.probs == 1, float("inf")).masked_fill(p.probs == 1, 0)
    return t1 + t2
