"""lantern.nn.functional: the functional forms of layers, activations and losses (torch.nn.functional).

Each function is declared in lantern/ops/nn_conv.py, nn_padding.py, nn_pooling.py, nn_fold.py, nn_sampling.py,
nn_activation.py, nn_activation_softmax.py, nn_loss.py, nn_loss_classification.py, nn_loss_margin.py, nn_norm.py,
nn_misc.py, nn_extra.py, nn_attention.py or nn_linear_cross_entropy.py (op records with derivatives, or
composites) and exported here by name.

>>> import lantern.nn.functional as F
>>> F.conv2d(lantern.arange(16.).view(1, 1, 4, 4), lantern.ones(1, 1, 2, 2)).view(3, 3).tolist()
[[10.0, 14.0, 18.0], [26.0, 30.0, 34.0], [42.0, 46.0, 50.0]]
>>> round(F.cross_entropy(lantern.zeros(2, 4), lantern.tensor([0, 3])).item(), 4)  # log(4): uniform over 4
1.3863
"""

from ..ops import (
    nn_activation as _nn_activation, nn_attention as _nn_attention, nn_conv as _nn_conv, nn_extra as _nn_extra,
    nn_fold as _nn_fold, nn_loss as _nn_loss, nn_misc as _nn_misc, nn_norm as _nn_norm, nn_padding as _nn_padding,
    nn_pooling as _nn_pooling, nn_sampling as _nn_sampling, registry as _registry,
    nn_loss_classification as _nn_loss_classification, nn_loss_margin as _nn_loss_margin,
    nn_activation_softmax as _nn_activation_softmax, nn_linear_cross_entropy as _nn_linear_cross_entropy,
    autocast as _autocast, autocast_policy as _autocast_policy,
)

for _module in (_nn_conv, _nn_padding, _nn_pooling, _nn_fold, _nn_sampling, _nn_activation,
                _nn_activation_softmax, _nn_loss, _nn_loss_classification, _nn_loss_margin, _nn_norm,
                _nn_misc, _nn_extra, _nn_attention, _nn_linear_cross_entropy):
    globals().update({name: getattr(_module, name) for name in getattr(_module, "__all__", ())})

# the forms the profiler and the dispatch trace see as one op over the ops they run, as torch profiles aten::linear
# over aten::t and aten::addmm: the registered composites, and the functions torch implements as one aten op
globals().update({name: fn for name, fn in _registry.COMPOSITES.items()
                  if getattr(fn, "__wrapped__", None) is globals().get(name)})
for _name in ("linear", "dropout", "layer_norm", "batch_norm", "group_norm", "instance_norm"):
    globals()[_name] = _registry.observed(_name, globals()[_name])

from ..ops import nn_shuffle_pool as _nn_shuffle_pool  # noqa: E402  (channel_shuffle, fractional_max_pool, pdist)
from ..core import user_warnings
globals().update({_name: getattr(_nn_shuffle_pool, _name) for _name in _nn_shuffle_pool.__all__})

# the plain functions with an autocast policy (cross_entropy, pad, ...) get the Autocast stage in front; composites
# have it in their wrappers already, and ops that are registered meet it in the dispatcher
for _name in _autocast_policy.FUNCTIONS:
    _fn = globals().get(_name)
    if _fn is not None and _name not in _registry.REGISTRY and (hasattr(_fn, "unchecked")
                                                                or not hasattr(_fn, "__wrapped__")):
        globals()[_name] = _autocast.stage(_name, _fn)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The old name of interpolate; warns as torch does."""
    _warn_upsample("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)  # noqa: F821 (defined by the loop above)


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(mode='nearest') under its old name; warns as torch does."""
    _warn_upsample("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")  # noqa: F821


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(mode='bilinear', align_corners=True) under its old name; warns as torch does."""
    _warn_upsample("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)  # noqa: F821


def _warn_upsample(name):
    user_warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=3)
