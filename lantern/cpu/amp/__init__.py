"""torch.cpu.amp: the deprecated CPU spellings of torch.amp's autocast and GradScaler.

>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     with lantern.cpu.amp.autocast():
...         (lantern.ones(2, 2) @ lantern.ones(2, 2)).dtype
lantern.bfloat16
"""
from . import autocast_mode, grad_scaler  # noqa: F401
from .autocast_mode import autocast  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "GradScaler"]
