"""The short-time Fourier transform and its inverse (torch.stft, torch.istft and the Tensor methods), composed of
unfold, the FFT primitives of lantern/ops/fft.py and unfold_backward (overlap-add), as ATen composes them.

stft: pad by n_fft // 2 on both sides when `center`; cut frames of n_fft samples every hop_length; multiply each by
the window (zero-padded to n_fft, centred); FFT each frame. The result is (batch?, frequencies, frames).
istft: inverse FFT of each frame, multiply by the window, overlap-add, and divide by the overlap-added squared
window (the least-squares inverse; it needs that envelope to be nonzero everywhere: the NOLA condition).

>>> x = lantern.arange(8.)
>>> w = lantern.hann_window(4)
>>> S = lantern.stft(x, 4, window=w, return_complex=True)
>>> S.shape, [round(v, 4) for v in lantern.istft(S, 4, window=w, length=8).tolist()]
(lantern.Size([3, 9]), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
"""
from ..core.warn_always import warn_once as _warn_once
from .call_by_name import call_op
from .nn_padding import pad
from .registry import composite

_NO_WINDOW = ("A window was not provided. A rectangular window will be applied,which is known to cause spectral "
              "leakage. Other windows such as torch.hann_window or torch.hamming_window are recommended to reduce "
              "spectral leakage.To suppress this warning and use a rectangular window, explicitly set "
              "`window=torch.ones(n_fft, device=<device>)`.")
_NO_WINDOW_ISTFT = ("A window was not provided. A rectangular window will be applied.Please provide the same window "
                    "used by stft to make the inversion lossless.To suppress this warning and use a rectangular "
                    "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")


def _optional(value):
    return "None" if value is None else str(int(value))


def _describe(t):
    return "None" if t is None else f"torch.{t.dtype.legacy}Tensor{{{list(t.shape)}}}"


class _Call:
    """The call as ATen's messages print it: `stft(torch.FloatTensor[2, 56], n_fft=16, ...) : <problem>` (istft
    names its input `CPUComplexFloatType[...]`)."""

    def __init__(self, name, input, **arguments):
        shown = ", ".join(f"{k}={v}" for k, v in arguments.items())
        kind = f"torch.{input.dtype.legacy}Tensor" if name == "stft" else f"CPU{input.dtype.legacy}Type"
        self.text = f"{name}({kind}{list(input.shape)}, {shown})"

    def error(self, problem):
        return RuntimeError(f"{self.text} : {problem}")


def _centred_window(window, win_length, n_fft, dtype, device):
    """The window (ones of `dtype` when None) zero-padded on both sides to n_fft points."""
    if window is None:
        window = call_op("ones", [win_length], dtype, None, device, None, False, None)
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    return call_op("constant_pad_nd", window, [left, n_fft - win_length - left], 0)


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The STFT of a 1-D signal or a batch of them (2-D): complex (batch?, n_fft // 2 + 1 or n_fft, frames)."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        input = _pad_both_ends(input, n_fft // 2, pad_mode)
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    call = _Call("stft", input, n_fft=n_fft, hop_length=hop_length, win_length=win_length,
                 window=_describe(window), normalized=int(normalized), onesided=_optional(onesided),
                 return_complex=_optional(return_complex), align_to_window=_optional(align_to_window))
    if window is None:
        _warn_once(_NO_WINDOW)
    return_complex = _stft_returns_complex(input, window, return_complex)
    signal = _checked_signal(call, input, n_fft, hop_length, win_length, window)
    if align_to_window and win_length < n_fft:  # frames start where the window does, not where its padding does
        left = (n_fft - win_length) // 2
        signal = call_op("constant_pad_nd", signal, [left, n_fft - win_length - left], 0)
    frames = signal.unfold(1, n_fft, hop_length)  # (batch, frames, n_fft): a view
    if window is not None or win_length < n_fft:
        frames = frames * _centred_window(window, win_length, n_fft, input.dtype, input.device)
    normalization = 1 if normalized else 0
    if frames.dtype.is_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        spectrum = call_op("_fft_c2c", frames, [2], normalization, True)
    else:
        spectrum = call_op("_fft_r2c", frames, [2], normalization, True if onesided is None else onesided)
    spectrum = spectrum.transpose(1, 2)
    if input.dim() == 1:
        spectrum = spectrum.squeeze(0)
    return spectrum if return_complex else call_op("view_as_real", spectrum)


def _pad_both_ends(input, amount, pad_mode):
    """`center`: the signal padded by `amount` at both ends (pad wants a batch and a channel dim around it)."""
    signal_dim = input.dim()
    padded = pad(input.view([1] * (3 - signal_dim) + list(input.shape)), [amount, amount], pad_mode)
    return padded.view(padded.shape[-signal_dim:])


def _stft_returns_complex(input, window, return_complex):
    """Whether stft returns complex values: required to be said for real inputs, and False is deprecated."""
    wants_complex = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None and not wants_complex:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    return_complex = wants_complex if return_complex is None else return_complex
    if not return_complex:
        _warn_once("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                   "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                   "still call torch.view_as_real on the complex output to recover the old return format.")
    return return_complex


def _checked_signal(call, input, n_fft, hop_length, win_length, window):
    """stft's argument checks; the signal as a batch (batch, length)."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise call.error("expected a tensor of floating point or complex values")
    if input.dim() not in (1, 2):
        raise call.error("expected a 1D or 2D tensor")
    signal = input.unsqueeze(0) if input.dim() == 1 else input
    length = signal.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise call.error(f"expected 0 < n_fft < {length}, but got n_fft={win_length}")
    if hop_length <= 0:
        raise call.error(f"expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise call.error(f"expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise call.error(f"expected a 1D window tensor of size equal to win_length={win_length}, but got window "
                         f"with size {list(window.shape)}")
    return signal


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of stft: the signal (batch?, length) whose stft is closest to input (least squares)."""
    if window is None:
        _warn_once(_NO_WINDOW_ISTFT)
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    call = _Call("istft", input, n_fft=n_fft, hop_length=hop_length, win_length=win_length,
                 window=_describe(window), center=int(center), normalized=int(normalized),
                 onesided=_optional(onesided), length=_optional(length), return_complex=int(return_complex))
    onesided = _checked_onesided(call, input, n_fft, hop_length, win_length, window, onesided)
    window = _centred_window(window, win_length, n_fft, input.dtype.to_real(), input.device)
    frames = (input.unsqueeze(0) if input.dim() == 2 else input).transpose(1, 2)  # (batch, frames, fft_size)
    frames = _inverse_transforms(frames, n_fft, 1 if normalized else 2, onesided, return_complex, window)
    signal, envelope = _overlap_add(frames, window, hop_length)
    expected_length = signal.shape[1]
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (expected_length - n_fft // 2 if center else expected_length)
    signal, envelope = signal[:, start:end], envelope[:, start:end]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError(f"{call.text} window overlap add min: 1 (the overlap-added squared window is zero "
                           "somewhere, so the signal there cannot be recovered: choose a window and hop_length whose "
                           "overlaps cover every sample, the NOLA condition)")
    signal = signal / envelope
    if input.dim() == 2:
        signal = signal.squeeze(0)
    if end > expected_length:
        _warn_once("The length of signal is shorter than the length parameter. Result is being padded with zeros "
                   "in the tail. Please check your center and hop_length settings.")
        signal = call_op("constant_pad_nd", signal, [0, end - expected_length], 0)
    return signal


def _checked_onesided(call, input, n_fft, hop_length, win_length, window, onesided):
    """istft's argument checks; whether the input holds onesided spectra (by default: unless it has n_fft)."""
    fft_size = input.size(-2)
    if input.numel() == 0:
        raise call.error("input tensor cannot be empty.")
    if input.dim() not in (2, 3):
        raise call.error(f"expected a tensor with 3 or 4 dimensions of complex dtype, but got {input.dim() + 1}")
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        raise call.error("expected the frequency dimension (3rd to the last) of the input tensor to match "
                         f"n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise call.error("expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
                         f"onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        raise call.error("expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise call.error("expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise call.error("Invalid window shape. window has to be 1D and length of `win_length`")
    return onesided


def _inverse_transforms(frames, n_fft, normalization, onesided, return_complex, window):
    """Each frame's inverse FFT: complex (c2c) or real (c2r of the onesided half), n_fft values."""
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        return call_op("_fft_c2c", frames, [2], normalization, False)
    if window.dtype.is_complex:
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    if not onesided:
        frames = frames.narrow(-1, 0, n_fft // 2 + 1)
    return call_op("_fft_c2r", frames, [2], normalization, n_fft)


def _overlap_add(frames, window, hop_length):
    """(the windowed frames overlap-added, the squared window overlap-added): both (batch or 1, full length)."""
    batch, n_frames, n_fft = frames.shape
    full_length = n_fft + hop_length * (n_frames - 1)
    signal = call_op("unfold_backward", frames * window.view(1, 1, n_fft), [batch, full_length], 1, n_fft,
                     hop_length)
    squared = (window * window).view(1, 1, n_fft).expand(1, n_frames, n_fft)
    envelope = call_op("unfold_backward", squared, [1, full_length], 1, n_fft, hop_length)
    return signal, envelope


composite("stft", stft)
composite("istft", istft)
