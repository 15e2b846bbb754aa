"""Distribution (torch.distributions.distribution): the base class, with torch's shapes and argument checks.

A distribution has a batch_shape (independent distributions side by side) and an event_shape (the shape of one
draw); sample(sample_shape) returns sample_shape + batch_shape + event_shape. Parameters and log_prob's values are
checked against arg_constraints and support unless validate_args=False (the default is Python's __debug__, as in
torch; Distribution.set_default_validate_args changes it).
"""
import lantern
from lantern.core.size import Size

__all__ = ["Distribution"]


class Distribution:
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints = {}
    support = None

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if param not in self.__dict__:
                    continue  # given as the other parameterisation (probs vs logits): derived lazily
                value = getattr(self, param)
                if not constraint.check(value).all():
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()):
        with lantern.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler (rsample)")

    def sample_n(self, n):
        return self.sample(Size((n,)))

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=Size()):
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        """log_prob's value must be a tensor that broadcasts with the batch and lies in the support."""
        if not isinstance(value, lantern.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual_shape, expected_shape = value.size(), self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        if not self.support.check(value).all():
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({self.support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def __repr__(self):
        shown = [f"{p}: {_param_repr(self.__dict__[p])}" for p in self.arg_constraints if p in self.__dict__]
        return f"{type(self).__name__}({', '.join(shown)})"


def _param_repr(value):
    """A one-element parameter by its value, a larger one by its size (torch's repr)."""
    return value if value.numel() == 1 else value.size()
