"""torch's window factories: hann_window, hamming_window, bartlett_window, blackman_window, kaiser_window.

Each samples its formula at window_length points; `periodic=True` (the default) computes window_length + 1 points
of the symmetric window and drops the last (what stft wants), as a view of that longer tensor, as ATen does. Half
precision windows round after each step as ATen's do. The result is a leaf (requires_grad as asked).

>>> hann_window(4).tolist()
[0.0, 0.5, 1.0, 0.5]
>>> bartlett_window(5, periodic=False).tolist()
[0.0, 0.5, 1.0, 0.5, 0.0]
"""
import math

from ..core import dtype as dt
from ..core.layout import strided
from .call_by_name import call_op
from .registry import composite


def _window(name, window_length, periodic, dtype, layout, device, requires_grad, formula, widen_half=False):
    """Checks, the trivial lengths, then formula(points, L) on the arange of L points (L = window_length + 1 when
    periodic), in the window's dtype (kaiser_window's kernel computes half precision in float32)."""
    if isinstance(window_length, bool) or not hasattr(window_length, "__index__"):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    dtype = dtype or dt.get_default_dtype()
    if layout is not None and layout is not strided:
        raise RuntimeError(f"{name} is not implemented for sparse types, got: {layout}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if dtype.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dtype.legacy}'")
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype} (pass dtype=torch.float32)")
    if window_length <= 1:
        return call_op("ones", [window_length], dtype, None, device, None, requires_grad, None)
    length = window_length + 1 if periodic else window_length
    compute = dt.float32 if widen_half and dtype.itemsize < 4 else dtype
    window = formula(call_op("arange", 0, length, 1, compute, None, device, None, False), length).to(dtype)
    if periodic:
        window = window.narrow(0, 0, window_length)
    return window.requires_grad_(requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda n, N: (n * (2 * math.pi / (N - 1))).cos() * -beta + alpha)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1)): the Hamming window with alpha = beta = 0.5."""
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda n, N: (n * (2 * math.pi / (N - 1))).cos() * -0.5 + 0.5)


def _triangle(n, N):
    """2n / (N - 1) rising to the middle, 2 - 2n / (N - 1) after it."""
    rising = n * (2.0 / (N - 1))
    return call_op("where", n < (N - 1) // 2 + 1, rising, 2 - rising)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """A triangle, 0 at both ends of the N points and 1 in the middle."""
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, _triangle)


def _blackman(n, N):
    phase = n * (math.pi / (N - 1))
    return 0.08 * (phase * 4).cos() - 0.5 * (phase * 2).cos() + 0.42


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad, _blackman)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta) with a = (N - 1) / 2, I0 the modified Bessel function."""
    def formula(n, N):
        a = (N - 1) / 2
        ratio = (n - a) / a
        b = call_op("full", [], beta, n.dtype, None, n.device, None, False)
        return (b * (1 - ratio * ratio).sqrt()).i0() / b.i0()
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, formula,
                   widen_half=True)


for _fn in (hamming_window, hann_window, bartlett_window, blackman_window, kaiser_window):
    composite(_fn.__name__, _fn, method=False)
