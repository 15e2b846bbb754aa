"""lantern.nn: Modules, Parameters, init and utils (torch.nn).

>>> import lantern.nn as nn
>>> nn.Linear(3, 2).weight.shape
lantern.Size([2, 3])
"""
from . import functional, init, utils, parallel  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import *  # noqa: F401,F403
from .parallel import DataParallel  # noqa: F401
from ._factory_kwargs import factory_kwargs  # noqa: F401
