"""torch.amp: automatic mixed precision — autocast regions (autocast_mode) and loss scaling (grad_scaler).

>>> with lantern.amp.autocast("cpu", dtype=lantern.float16):
...     (lantern.ones(2, 2) @ lantern.ones(2, 2)).dtype
lantern.float16
"""
from . import autocast_mode, grad_scaler  # noqa: F401
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler", "is_autocast_available"]
