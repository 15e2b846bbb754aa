"""lantern.masked: torch.masked, reductions and normalisations that see only the elements a boolean mask keeps
(lantern/masked/_ops.py), and MaskedTensor, a tensor that carries its mask with it (lantern/masked/maskedtensor/).

>>> import lantern
>>> x = lantern.tensor([1., 2., 3.])
>>> lantern.masked.mean(x, mask=lantern.tensor([True, False, True]))
tensor(2.)
"""
from ._ops import (amax, amin, argmax, argmin, cumprod, cumsum, log_softmax, logaddexp, logsumexp, mean, median,
                   norm, normalize, prod, softmax, softmin, std, sum, var)
from ._ops import _canonical_dim, _input_mask, _output_mask, _reduction_identity  # noqa: F401  (torch's tests use them)
from . import maskedtensor  # noqa: F401  (torch.masked.maskedtensor)
from .maskedtensor.core import MaskedTensor, is_masked_tensor
from .maskedtensor.creation import as_masked_tensor, masked_tensor

__all__ = ["amax", "amin", "argmax", "argmin", "as_masked_tensor", "cumprod", "cumsum", "is_masked_tensor",
           "log_softmax", "logaddexp", "logsumexp", "masked_tensor", "MaskedTensor", "mean", "median", "norm",
           "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]
