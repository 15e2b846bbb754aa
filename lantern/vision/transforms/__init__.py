"""lantern.vision.transforms (torchvision.transforms): the transform classes, and `functional` beside them."""
from . import functional  # noqa: F401
from .transforms import *  # noqa: F401,F403
from .transforms import __all__  # noqa: F401
