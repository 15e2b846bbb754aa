"""lantern.nn.modules: the layer classes, one file per family as in torch/nn/modules."""
from . import (
    module, container, linear, conv, pooling, batchnorm, normalization, instancenorm, sparse, flatten, pixelshuffle,
    upsampling, distance, padding, activation, loss, dropout, rnn, transformer, fold, channelshuffle, adaptive,
    linear_cross_entropy, linear_cross_entropy_options,
)

_FAMILIES = (module, container, linear, conv, pooling, batchnorm, normalization, instancenorm, sparse, flatten,
             pixelshuffle, upsampling, distance, padding, activation, loss, dropout, rnn, transformer, fold,
             channelshuffle, adaptive, linear_cross_entropy, linear_cross_entropy_options)
__all__ = []
for _family in _FAMILIES:
    globals().update({name: getattr(_family, name) for name in _family.__all__})
    __all__ += _family.__all__
