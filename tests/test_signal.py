"""torch.signal.windows, torch's window factories (hann_window & co.) and stft/istft against torch: every window at
several lengths, symmetric and periodic, in float32 and float64, with its parameters and errors; stft and istft
with their options, warnings, errors and float64 gradients."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import check, noncontig, raises_like, to_lib

WINDOWS = torch.signal.windows.__all__


def test_namespace_matches_torch():
    assert lantern.signal.__all__ == torch.signal.__all__
    assert lantern.signal.windows.__all__ == WINDOWS


def _call(m, name, M, **kwargs):
    if name == "general_cosine":
        kwargs.setdefault("a", [0.46, 0.23, 0.31])
    return getattr(m.signal.windows, name)(M, **kwargs)


@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("name", WINDOWS)
def test_windows(name, sym):
    check(lambda m: [_call(m, name, M, sym=sym) for M in (0, 1, 2, 5, 8)])
    check(lambda m: _call(m, name, 7, sym=sym, dtype=m.float64))


@pytest.mark.parametrize("name", WINDOWS)
def test_requires_grad(name):
    check(lambda m: (_call(m, name, 6, requires_grad=True), _call(m, name, 1, requires_grad=True)))


PARAMETERS = {
    "exponential tau": lambda m: m.signal.windows.exponential(6, tau=2.5),
    "exponential center": lambda m: m.signal.windows.exponential(6, center=1.5, sym=False),
    "gaussian std": lambda m: m.signal.windows.gaussian(7, std=0.7, dtype=m.float64),
    "kaiser beta": lambda m: m.signal.windows.kaiser(9, beta=3.0),
    "kaiser beta 0": lambda m: m.signal.windows.kaiser(4, beta=0.0, sym=False),
    "general_hamming alpha": lambda m: m.signal.windows.general_hamming(6, alpha=0.6),
    "general_cosine tuple": lambda m: m.signal.windows.general_cosine(5, a=(0.5, 0.5), sym=False),
    "default dtype float64": lambda m: _with_default_dtype(m, lambda: m.signal.windows.hann(4)),
}


def _with_default_dtype(m, fn):
    saved = m.get_default_dtype()
    m.set_default_dtype(m.float64)
    try:
        return fn()
    finally:
        m.set_default_dtype(saved)


@pytest.mark.parametrize("name", PARAMETERS)
def test_parameters(name):
    check(PARAMETERS[name])


ERRORS = {
    "negative length": lambda m: m.signal.windows.hann(-1),
    "integer dtype": lambda m: m.signal.windows.bartlett(4, dtype=m.int64),
    "float16": lambda m: m.signal.windows.kaiser(4, dtype=m.float16),
    "sparse layout": lambda m: m.signal.windows.cosine(4, layout=m.sparse_coo),
    "tau not positive": lambda m: m.signal.windows.exponential(4, tau=0.0),
    "center with sym": lambda m: m.signal.windows.exponential(4, center=1.0),
    "std not positive": lambda m: m.signal.windows.gaussian(4, std=-1.0),
    "negative beta": lambda m: m.signal.windows.kaiser(4, beta=-1.0),
    "coefficients not iterable": lambda m: m.signal.windows.general_cosine(4, a=0.5),
    "no coefficients": lambda m: m.signal.windows.general_cosine(4, a=[]),
    "blackman checks first": lambda m: m.signal.windows.blackman(-2),
    "length not an int": lambda m: m.signal.windows.hann(3.0),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors(name):
    theirs, mine = raises_like(ERRORS[name])
    assert mine.startswith(theirs.split(" - ")[0].split(",")[0])  # the gist: the window's name and the problem


# ---- torch's window factories (torch.hann_window & co.) -------------------------------------------------------

FACTORIES = ["hann_window", "hamming_window", "bartlett_window", "blackman_window", "kaiser_window"]


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("name", FACTORIES)
def test_window_factories(name, periodic):
    check(lambda m: [getattr(m, name)(n, periodic) for n in (0, 1, 2, 5, 8)])
    check(lambda m: getattr(m, name)(7, periodic, dtype=m.float64))
    check(lambda m: getattr(m, name)(6, periodic, dtype=m.float16))
    check(lambda m: getattr(m, name)(6, requires_grad=True))


def test_window_factory_parameters():
    check(lambda m: (m.hamming_window(7, False, 0.6), m.hamming_window(6, True, 0.6, 0.3),
                     m.hamming_window(5, periodic=False, alpha=0.6), m.kaiser_window(9, False, 3.0),
                     m.kaiser_window(8, True, 0.0)))


WINDOW_FACTORY_ERRORS = {
    "negative length": lambda m: m.hann_window(-1),
    "integer dtype": lambda m: m.bartlett_window(4, dtype=m.int64),
    "complex dtype": lambda m: m.blackman_window(4, dtype=m.complex64),
    "length not an int": lambda m: m.hamming_window(4.0),
    "sparse layout": lambda m: m.kaiser_window(4, layout=m.sparse_coo),
}


@pytest.mark.parametrize("name", WINDOW_FACTORY_ERRORS)
def test_window_factory_errors(name):
    theirs, mine = raises_like(WINDOW_FACTORY_ERRORS[name])
    assert mine.split(",")[0].split(":")[0] == theirs.split(",")[0].split(":")[0]


# ---- stft / istft ----------------------------------------------------------------------------------------------

rng = np.random.default_rng(0)
SIGNAL = noncontig(rng.standard_normal((2, 40)).astype(np.float32))
SIGNAL64 = noncontig(rng.standard_normal((2, 24)))
COMPLEX_SIGNAL = noncontig((rng.standard_normal(30) + 1j * rng.standard_normal(30)).astype(np.complex64))

STFT = {
    "batch": (lambda m, x: m.stft(x, 16, window=m.hann_window(16), return_complex=True), SIGNAL),
    "one signal": (lambda m, x: m.stft(x[0], 16, window=m.hann_window(16), return_complex=True), SIGNAL),
    "method": (lambda m, x: x.stft(16, 5, window=m.hann_window(16), return_complex=True), SIGNAL),
    "hop and win_length": (lambda m, x: m.stft(x, 16, hop_length=3, win_length=10, window=m.hamming_window(10),
                                               return_complex=True), SIGNAL),
    "win_length without window": (lambda m, x: m.stft(x, 12, win_length=7, window=None, return_complex=True),
                                  SIGNAL),
    "not centred": (lambda m, x: m.stft(x, 16, window=m.hann_window(16), center=False, return_complex=True),
                    SIGNAL),
    "constant padding": (lambda m, x: m.stft(x, 16, window=m.hann_window(16), pad_mode="constant",
                                             return_complex=True), SIGNAL),
    "normalized": (lambda m, x: m.stft(x, 16, window=m.hann_window(16), normalized=True, return_complex=True),
                   SIGNAL),
    "two-sided": (lambda m, x: m.stft(x, 8, window=m.hann_window(8), onesided=False, return_complex=True),
                  SIGNAL),
    "complex input": (lambda m, x: m.stft(x, 8, window=m.hann_window(8)), COMPLEX_SIGNAL),
    "float64 window": (lambda m, x: m.stft(x, 16, window=m.hann_window(16, dtype=m.float64),
                                           return_complex=True), SIGNAL),
    "float64 window, shorter": (lambda m, x: m.stft(x, 16, win_length=8, window=m.hann_window(8, dtype=m.float64),
                                                    return_complex=True), SIGNAL),
    "aligned to the window": (lambda m, x: m.stft(x, 16, hop_length=4, win_length=8, window=m.hann_window(8),
                                                  center=False, align_to_window=True, return_complex=True), SIGNAL),
    "float64": (lambda m, x: m.stft(x, 8, window=m.hann_window(8, dtype=m.float64), return_complex=True), SIGNAL64),
    "real pairs (return_complex=False)": (lambda m, x: m.stft(x, 16, window=m.hann_window(16), return_complex=False),
                                          SIGNAL),
}


@pytest.mark.parametrize("name", STFT)
def test_stft(name):
    fn, x = STFT[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the no-window warning; test_stft_warnings checks it
        check(fn, x)


_STFT_WARNINGS = """
import warnings
import {lib} as m
x = m.ones(2, 40)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    m.stft(x, 8, return_complex=True)
    m.istft(m.stft(x, 8, window=m.ones(8), return_complex=True), 8)
print([str(w.message)[:60] for w in caught])
"""


def test_stft_warnings():
    """The same warnings as torch's. Each shows once per process, so whether one still shows in this process
    depends on what ran before: each library runs in a fresh interpreter."""
    def run(lib):
        result = subprocess.run([sys.executable, "-c", _STFT_WARNINGS.format(lib=lib)], capture_output=True,
                                text=True, timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)))
        assert result.returncode == 0, result.stderr
        return result.stdout
    assert run("lantern") == run("torch")


STFT_ERRORS = {
    "return_complex missing": lambda m, x: m.stft(x, 16, window=m.hann_window(16)),
    "integer input": lambda m, x: m.stft(x.long(), 16, window=m.hann_window(16), return_complex=True),
    "3-d input": lambda m, x: m.stft(x.expand(2, 2, 40), 16, window=m.hann_window(16), return_complex=True),
    "n_fft too large": lambda m, x: m.stft(x, 100, center=False, window=m.ones(100), return_complex=True),
    "hop_length 0": lambda m, x: m.stft(x, 16, 0, window=m.hann_window(16), return_complex=True),
    "win_length above n_fft": lambda m, x: m.stft(x, 16, win_length=20, return_complex=True),
    "window of the wrong size": lambda m, x: m.stft(x, 16, window=m.ones(10), return_complex=True),
    "onesided complex": lambda m, x: m.stft(x.to(m.complex64), 8, window=m.ones(8), onesided=True),
    "align_to_window with center": lambda m, x: m.stft(x, 16, window=m.ones(16), return_complex=True,
                                                       align_to_window=True),
}


@pytest.mark.parametrize("name", STFT_ERRORS)
def test_stft_errors(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, mine = raises_like(STFT_ERRORS[name], SIGNAL)
    assert theirs.split(" : ")[-1][:50] == mine.split(" : ")[-1][:50]


def _spectrum(m, x, n_fft=16, window="hann_window", **kwargs):
    return m.stft(x, n_fft, window=getattr(m, window)(n_fft), return_complex=True, **kwargs)


ISTFT = {
    "round trip": lambda m, x: m.istft(_spectrum(m, x), 16, window=m.hann_window(16)),
    "length": lambda m, x: m.istft(_spectrum(m, x), 16, window=m.hann_window(16), length=33),
    "one signal": lambda m, x: m.istft(_spectrum(m, x[1]), 16, window=m.hann_window(16)),
    "method": lambda m, x: _spectrum(m, x).istft(16, window=m.hann_window(16)),
    "not centred": lambda m, x: m.istft(_spectrum(m, x, window="hamming_window", center=False), 16,
                                        window=m.hamming_window(16), center=False, length=20),
    "normalized": lambda m, x: m.istft(_spectrum(m, x, normalized=True), 16, window=m.hann_window(16),
                                       normalized=True),
    "two-sided": lambda m, x: m.istft(_spectrum(m, x, onesided=False), 16, window=m.hann_window(16),
                                      onesided=False),
    "complex result": lambda m, x: m.istft(_spectrum(m, x.to(m.complex64)), 16, window=m.hann_window(16),
                                           return_complex=True),
    "win_length": lambda m, x: m.istft(m.stft(x, 16, 4, 12, m.hann_window(12), return_complex=True), 16, 4, 12,
                                       m.hann_window(12)),
}


@pytest.mark.parametrize("name", ISTFT)
def test_istft(name):
    check(ISTFT[name], SIGNAL)


def test_istft_longer_length_pads_with_a_warning():
    def run(m, x):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = m.istft(_spectrum(m, x, window="hamming_window", center=False), 16, window=m.hamming_window(16),
                        center=False, length=48)
        return y, [str(w.message)[:50] for w in caught]
    check(run, SIGNAL)


ISTFT_ERRORS = {
    "real input": lambda m, x: m.istft(_spectrum(m, x).real, 16, window=m.hann_window(16)),
    "hop above win_length": lambda m, x: m.istft(_spectrum(m, x), 16, 20, window=m.hann_window(16)),
    "window zero (NOLA)": lambda m, x: m.istft(_spectrum(m, x), 16, window=m.zeros(16)),
    "onesided mismatch": lambda m, x: m.istft(_spectrum(m, x), 16, window=m.hann_window(16), onesided=False),
    "empty": lambda m, x: m.istft(_spectrum(m, x)[:, :, :0], 16, window=m.hann_window(16)),
    "1-d input": lambda m, x: m.istft(_spectrum(m, x)[0, 0], 16, window=m.hann_window(16)),
    "onesided complex result": lambda m, x: m.istft(_spectrum(m, x), 16, window=m.hann_window(16),
                                                    return_complex=True),
    "window of the wrong size": lambda m, x: m.istft(_spectrum(m, x), 16, window=m.ones(10)),
}


@pytest.mark.parametrize("name", ISTFT_ERRORS)
def test_istft_errors(name):
    theirs, mine = raises_like(ISTFT_ERRORS[name], SIGNAL)
    assert theirs.split(" : ")[-1][:40] == mine.split(" : ")[-1][:40]


def test_stft_istft_gradients_match_torch():
    def run(m, x):
        x = x.detach().requires_grad_()
        window = m.hann_window(8, dtype=m.float64).requires_grad_()
        spectrum = m.stft(x, 8, 3, window=window, return_complex=True)
        signal = m.istft(spectrum * (1 + 0.5j), 8, 3, window=window, length=24)
        (spectrum.abs().sum() + (signal * signal).sum()).backward()
        return x.grad, window.grad
    check(run, SIGNAL64)


def test_stft_istft_gradcheck():
    x = to_lib(lantern, SIGNAL64[0]).requires_grad_()
    spectrum = lantern.stft(x.detach(), 8, 2, window=lantern.hann_window(8, dtype=lantern.float64),
                            return_complex=True).requires_grad_()
    window = lantern.hann_window(8, dtype=lantern.float64)
    assert lantern.autograd.gradcheck(lambda x: lantern.stft(x, 8, 2, window=window, return_complex=True), (x,))
    assert lantern.autograd.gradcheck(lambda s: lantern.istft(s, 8, 2, window=window), (spectrum,))
