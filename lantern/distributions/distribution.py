"""Distribution (torch.distributions.distribution): the base class, with torch's shapes and argument checks.

A distribution has a batch_shape (independent distributions side by side) and an event_shape (the shape of one
draw); sample(sample_shape) returns sample_shape + batch_shape + event_shape, and log_prob(value) has value's shape
less the event dims. Parameters are checked against arg_constraints, and log_prob's values against support, unless
validate_args=False (the default is Python's __debug__, as in torch; Distribution.set_default_validate_args changes
it). A subclass with a reparameterised sampler sets has_rsample and defines rsample; sample is rsample without grad.

>>> import lantern
>>> from lantern.distributions import Normal
>>> d = Normal(lantern.zeros(3), 1.0)
>>> d.batch_shape, d.event_shape, d.sample((2,)).shape, d.expand((4, 3)).batch_shape
(lantern.Size([3]), lantern.Size([]), lantern.Size([2, 3]), lantern.Size([4, 3]))
"""

import lantern
from lantern.core.size import Size

from . import constraints
from .utils import lazy_property
from ..core import user_warnings

__all__ = ["Distribution"]


class Distribution:
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for every distribution made after (validate_args=None)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._validate_parameters()
        super().__init__()

    def _validate_parameters(self):
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            user_warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                          "or initialize the distribution with `validate_args=False` to turn off validation.")
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                continue  # the parameterisation not given (probs for logits=...) is derived, not checked
            value = getattr(self, param)
            if not constraint.check(value).all():
                raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to satisfy the constraint {constraint!r}, but found "
                                 f"invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        """A new distribution with parameters expanded (views, no copies) to `batch_shape`."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        """{parameter name: Constraint} that each parameter must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The Constraint that samples (and log_prob's values) satisfy."""
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()):
        """A draw of shape sample_shape + batch_shape + event_shape, outside autograd."""
        with lantern.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        """A reparameterised draw: differentiable in the parameters (only where has_rsample)."""
        raise NotImplementedError

    def sample_n(self, n):
        user_warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        """Every value of a discrete support, along a new leading dim (expanded over the batch if `expand`)."""
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return lantern.exp(self.entropy())

    def _extended_shape(self, sample_shape=Size()):
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        return Size(sample_shape + self._batch_shape + self._event_shape)

    def _validate_sample(self, value):
        """log_prob's value must be a tensor that broadcasts with the batch and lies in the support."""
        if not isinstance(value, lantern.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual_shape, expected_shape = value.size(), self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            user_warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.")
            return
        if not support.check(value).all():
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        """The blank instance expand() fills in: a subclass with its own __init__ must define its own expand."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _expand_parameters(self, cls, batch_shape, _instance, names):
        """expand()'s common case: a new `cls` whose tensors `names` (those set) are expanded to `batch_shape`,
        keeping their trailing non-batch dims (a Categorical's classes, a MultivariateNormal's event)."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        for name in names:
            if name in self.__dict__:
                value = self.__dict__[name]
                new.__dict__[name] = value.expand(batch_shape + value.shape[len(self._batch_shape):])
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self):
        shown = [f"{p}: {_param_repr(self.__dict__[p])}" for p in self.arg_constraints if p in self.__dict__]
        return f"{type(self).__name__}({', '.join(shown)})"


def _param_repr(value):
    """A one-element parameter by its value, a larger one by its size (torch's repr)."""
    return value if value.numel() == 1 else value.size()
