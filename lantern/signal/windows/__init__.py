"""lantern.signal.windows: torch.signal.windows' window functions (written in lantern/signal/windows/windows.py).

>>> from lantern.signal import windows
>>> windows.hann(5).tolist()
[0.0, 0.5, 1.0, 0.5, 0.0]
"""
from .windows import (
    bartlett, blackman, cosine, exponential, gaussian, general_cosine, general_hamming, hamming, hann, kaiser,
    nuttall,
)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]
