"""Window functions, each sampled at M points from a linspace of its argument, as torch.signal.windows computes them.

`sym=True` (the default) gives a symmetric window for filter design; `sym=False` a periodic one for spectral
analysis (the first M points of the symmetric window of M + 1 points). Windows are float32 or float64; with
`requires_grad=True` the linspace the window is computed from requires grad, so the window has a grad_fn.

>>> bartlett(5).tolist()
[0.0, 0.5, 1.0, 0.5, 0.0]
>>> [round(v, 4) for v in hann(4, sym=False).tolist()]
[0.0, 0.5, 1.0, 0.5]
"""
import math
from collections.abc import Iterable

import lantern
from ...core.layout import strided

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    """The checks every window makes first; returns the dtype (the default float type when None)."""
    dtype = dtype or lantern.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (lantern.float32, lantern.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _points(start, end, M, dtype, device, requires_grad):
    if not isinstance(M, int):
        raise TypeError(f"linspace() received an invalid combination of arguments - got (steps={type(M).__name__}), "
                        "but expected (Number start, Number end, int steps): a window's length M must be an int")
    return lantern.linspace(start, end, M, dtype=dtype, device=device, requires_grad=requires_grad)


def _trivial(M, dtype, device, requires_grad):
    """The window of 0 points, or of 1 point (a single 1), or None for a longer one."""
    if M == 0:
        return lantern.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1:
        return lantern.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _periodic(M, sym):
    """The divisor of the window's span: the periodic window of M points spans M + 1 (but never for M = 1)."""
    return M if not sym and M > 1 else M - 1


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
                requires_grad=False):
    """exp(-|n - center| / tau), center (M - 1) / 2 by default (a Poisson window).

    >>> [round(v, 4) for v in exponential(3).tolist()]
    [0.3679, 1.0, 0.3679]
    """
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = _periodic(M, sym) / 2.0
    scale = 1 / tau
    k = _points(-center * scale, (-center + (M - 1)) * scale, M, dtype, device, requires_grad)
    return lantern.exp(-lantern.abs(k))


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """sin(pi (n + 1/2) / M) (a sine window).

    >>> [round(v, 4) for v in cosine(3).tolist()]
    [0.5, 1.0, 0.5]
    """
    dtype = _checks("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return lantern.sin(_points(0.5 * step, (M - 0.5) * step, M, dtype, device, requires_grad))


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """exp(-(n - (M - 1) / 2)^2 / (2 std^2)).

    >>> [round(v, 4) for v in gaussian(3).tolist()]
    [0.6065, 1.0, 0.6065]
    """
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    start = -_periodic(M, sym) / 2.0
    scale = 1 / (std * math.sqrt(2))
    k = _points(start * scale, (start + M - 1) * scale, M, dtype, device, requires_grad)
    return lantern.exp(-(k * k))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta), I0 the modified Bessel function of order 0.

    >>> [round(v, 4) for v in kaiser(3, beta=1.0).tolist()]
    [0.7898, 1.0, 0.7898]
    """
    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    b = lantern.tensor(beta, dtype=dtype, device=device)  # in the window's dtype: the ends stay within [-b, b]
    step = 2.0 * b / (M if not sym else M - 1)
    end = lantern.minimum(b, -b + (M - 1) * step)
    k = lantern.linspace(-b, end, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return lantern.i0(lantern.sqrt(b * b - k * k)) / lantern.i0(b)


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """1 - |2n / (M - 1) - 1| (a triangular window with zero ends).

    >>> bartlett(3).tolist()
    [0.0, 1.0, 0.0]
    """
    dtype = _checks("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    step = 2 / (M if not sym else M - 1)
    return 1 - lantern.abs(_points(-1, -1 + (M - 1) * step, M, dtype, device, requires_grad))


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """sum_i (-1)^i a[i] cos(2 pi i n / (M - 1)): the family of hann, hamming, blackman and nuttall.

    >>> general_cosine(3, a=[0.5, 0.5]).tolist()
    [0.0, 1.0, 0.0]
    """
    dtype = _checks("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = _points(0, (M - 1) * step, M, dtype, device, requires_grad)
    coefficients = lantern.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
                                  requires_grad=requires_grad)
    orders = lantern.arange(coefficients.shape[0], dtype=dtype, device=device, requires_grad=requires_grad)
    return (coefficients.unsqueeze(-1) * lantern.cos(orders.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / (M - 1)).

    >>> [round(v, 2) for v in general_hamming(3, alpha=0.5).tolist()]
    [0.0, 1.0, 0.0]
    """
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_hamming with alpha = 0.54.

    >>> [round(v, 2) for v in hamming(3).tolist()]
    [0.08, 1.0, 0.08]
    """
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_hamming with alpha = 0.5 (a raised cosine).

    >>> hann(3).tolist()
    [0.0, 1.0, 0.0]
    """
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_cosine with a = [0.42, 0.5, 0.08].

    >>> [round(v, 4) for v in blackman(3).tolist()]
    [-0.0, 1.0, -0.0]
    """
    dtype = _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_cosine with Nuttall's four coefficients (minimal side lobes).

    >>> [round(v, 4) for v in nuttall(3).tolist()]
    [0.0004, 1.0, 0.0004]
    """
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
