"""lantern.vision.models (torchvision.models): ResNets and VGGs with torchvision's parameter names.

Built with random weights only (`weights=None`); load trained weights from a state_dict.
"""
from .resnet import *  # noqa: F401,F403
from .resnet import __all__ as _resnet_names
from .vgg import *  # noqa: F401,F403
from .vgg import __all__ as _vgg_names

__all__ = _resnet_names + _vgg_names
