"""lantern.nn.utils: gradient clipping, parameter <-> vector, and rnn (packed sequences)."""
from . import clip_grad, convert_parameters, rnn  # noqa: F401
from .clip_grad import *  # noqa: F401,F403
from .convert_parameters import *  # noqa: F401,F403
