"""lantern.signal: torch.signal, whose one module is `windows` (window functions for spectral analysis)."""
from . import windows

__all__ = ["windows"]
