"""Dropout layers (torch.nn.modules.dropout): random zeroing in training, the identity in eval mode.

Dropout zeroes single elements and scales the rest by 1/(1-p); Dropout1d/2d/3d zero whole channels; AlphaDropout
and FeatureAlphaDropout keep SELU's mean and variance.

>>> import lantern
>>> from lantern import nn
>>> layer = nn.Dropout(p=0.25)
>>> layer
Dropout(p=0.25, inplace=False)
>>> layer.eval()(lantern.ones(3)).tolist()
[1.0, 1.0, 1.0]
"""
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """Shared by every dropout layer: p in [0, 1] and inplace."""

    __constants__ = ["p", "inplace"]

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability p and scale the kept ones by 1/(1-p)."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of a (N, C, L) or (C, L) input."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of a (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of a (N, C, D, H, W) or (C, D, H, W) input."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: dropped elements take SELU's negative saturation, then an affine map restores
    the mean and variance."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout over whole channels."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
