"""torch.backends.opt_einsum: einsum's contraction-order optimiser (the opt-einsum package). lantern's einsum
contracts as NumPy's does and does not use it, so it reads as unavailable, as in PyTorch without opt-einsum.

>>> import lantern.backends.opt_einsum as opt_einsum
>>> opt_einsum.is_available(), opt_einsum.enabled, opt_einsum.get_opt_einsum()
(False, False, None)
"""
from .flags import flags_context as _flags_context

enabled = False
strategy = None


def is_available():
    return False


def get_opt_einsum():
    """The opt_einsum module if this build uses it: None."""
    return None


def set_flags(_enabled=None, _strategy=None):
    """Returns the old (enabled, strategy); turning either on is refused, as PyTorch refuses it without opt-einsum."""
    if _enabled:
        raise ValueError("opt_einsum is not available, so setting `enabled` to True will not reap the benefits of "
                         "calculating an optimal path for einsum. torch.einsum will fall back to contracting from "
                         "left to right. To enable this optimal path calculation, please install opt-einsum.")
    if _strategy is not None:
        raise ValueError(f"opt_einsum is not available, so setting `strategy` to {_strategy} will not be "
                         "meaningful. torch.einsum will bypass path calculation and simply contract from left to "
                         "right. Please install opt_einsum or unset `strategy`.")
    return (enabled, strategy)


def flags(enabled=None, strategy=None):
    return _flags_context(globals(), ("enabled", "strategy"), (enabled, strategy))
