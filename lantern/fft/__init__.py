"""lantern.fft: torch.fft's discrete Fourier transforms (written in lantern/fft/_functions.py) under torch's names.

>>> import lantern.fft
>>> lantern.fft.fft(lantern.tensor([1., 0., 0., 0.])).tolist()
[(1+0j), (1+0j), (1+0j), (1+0j)]
>>> lantern.fft.fftshift(lantern.fft.fftfreq(5, d=0.1)).tolist()
[-4.0, -2.0, 0.0, 2.0, 4.0]
"""
from .._tensor import Tensor  # noqa: F401  (torch.fft's __all__ names Tensor)
from ._functions import FFT_FUNCTIONS as _FFT_FUNCTIONS

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift", "Tensor"]
globals().update(_FFT_FUNCTIONS)
