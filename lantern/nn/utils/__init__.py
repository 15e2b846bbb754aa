"""lantern.nn.utils: gradient clipping, parameter <-> vector, rnn (packed sequences), weight and spectral norm,
parametrizations, pruning and functional_call."""
from . import clip_grad, convert_parameters, fusion, parametrizations, parametrize, prune, rnn, stateless  # noqa: F401
from .clip_grad import *  # noqa: F401,F403
from .convert_parameters import *  # noqa: F401,F403
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401  (the function hides its module, as in torch)
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .fusion import (  # noqa: F401
    fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights,
)
from .init import skip_init  # noqa: F401
