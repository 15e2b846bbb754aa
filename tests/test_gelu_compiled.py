"""GELU's compiled forward and backward (lantern/ops/nn_activation_compiled.py) against the readable ones and torch.

The forward gives the readable x·ndtr(x)'s bits (SciPy's ndtr ported): checked over a dense sweep of float32 values,
every 7th float32 bit pattern in the slow tier. A nan input gives a nan (which nan NumPy's product returns depends
on its vector loop: the readable kernel's nan bits vary with the position in the array). The backward computes
PyTorch's vectorised formula (erf by Abramowitz and Stegun 7.1.26, absolute error < 1.5e-7); the readable derivative
uses SciPy's exact ndtr. They agree within float32's tolerance in torch's tests (rtol 1.3e-6, atol 1e-5), as each
does with torch.
"""
import functools

import numpy as np
import pytest
import scipy.special
import torch

import lantern
from lantern.core import intra_op
from lantern.core.reference import reference_mode
from lantern.ops import nn_activation_compiled as compiled
from test_ops_specialisations import calls_of

pytest.importorskip("numba")

FLOAT32 = {"rtol": 1.3e-6, "atol": 1e-5}


def _inputs(shape=(33, 70)):
    """Values over GELU's whole range (deep tails, zero, signed zero, infinities, nan) and a random bulk."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 4
    x.flat[:8] = [-np.inf, -30, -9.5, -0.0, 0.0, 1e-30, 12, np.inf]
    x.flat[8] = np.nan
    return x


def _gelu(x, reference):
    with reference_mode(reference):
        t = lantern.tensor(x, requires_grad=True)
        y = lantern.nn.functional.gelu(t)
        y.backward(lantern.tensor(np.linspace(-2, 2, x.size, dtype=np.float32).reshape(x.shape)))
    return y.detach().numpy(), t.grad.numpy()


def _float32s(first, last, stride):
    """Every stride-th float32 from first to last (bit patterns of one sign, so first and last share their sign)."""
    a, b = np.array([first, last], np.float32).view(np.int32)
    return np.arange(min(a, b), max(a, b) + 1, stride, dtype=np.int32).view(np.float32)


@functools.cache
def _sweep():
    """float32s over [-40, 40] (every 97th: GELU's curved part, where Φ takes every path), the tails beyond to the
    largest float32, subnormals, ±0, ±inf, nan, shuffled; odd lengths so that blocks and threads' ranges end
    mid-way."""
    parts = [_float32s(0.0, 40.0, 97), _float32s(-0.0, -40.0, 97), _float32s(40.0, 3.4e38, 10_007),
             _float32s(-40.0, -3.4e38, 10_007), _float32s(0.0, 1.2e-38, 1_009), _float32s(-0.0, -1.2e-38, 1_009),
             np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45], np.float32)]
    x = np.random.default_rng(0).permutation(np.concatenate(parts))
    with reference_mode():
        return x, lantern.nn.functional.gelu(lantern.tensor(x)).numpy()


def _assert_same_bits(fast, readable):
    """Equal bits where the readable value is a number, nan where it is nan."""
    nan = np.isnan(readable)
    assert np.array_equal(np.isnan(fast), nan)
    assert np.array_equal(fast[~nan].view(np.int32), readable[~nan].view(np.int32))


@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_gelu_has_the_readable_bits(threads):
    x, readable = _sweep()
    out, in_place = np.empty_like(x), x.copy()
    before = intra_op.num_threads()
    intra_op.set_num_threads(threads)
    try:
        with reference_mode(False):
            assert compiled.gelu_compiled_applies(np, out, x, "none")
            compiled.gelu_compiled(x, out)
            compiled.gelu_compiled(in_place, in_place)
    finally:
        intra_op.set_num_threads(before)
    _assert_same_bits(out, readable)
    _assert_same_bits(out, x * scipy.special.ndtr(x))
    _assert_same_bits(in_place, readable)


def test_gelu_through_the_dispatcher_has_the_readable_bits():
    x = _inputs((37, 53)) * np.float32(0.3)
    with reference_mode():
        readable = lantern.nn.functional.gelu(lantern.tensor(x)).numpy()
    with reference_mode(False), calls_of(compiled.gelu_compiled) as calls:
        value = lantern.nn.functional.gelu(lantern.tensor(x)).numpy()
    assert calls
    _assert_same_bits(value, readable)


@pytest.mark.slow
def test_compiled_gelu_has_the_readable_bits_on_every_7th_float32():
    kernel = compiled._kernels().gelu_forward
    for start in range(0, 1 << 32, 7 << 24):   # 2**24 values at a time, 7 apart
        x = np.arange(start, min(start + (7 << 24), 1 << 32), 7, dtype=np.int64).astype(np.uint32).view(np.float32)
        out = np.empty_like(x)
        kernel(x, out)
        _assert_same_bits(out, x * scipy.special.ndtr(x))


def test_compiled_gelu_backward_matches_the_readable_one():
    x = _inputs()
    grad = lantern.tensor(np.random.default_rng(1).standard_normal(x.shape).astype(np.float32))
    self = lantern.tensor(x)
    with reference_mode(False):
        assert compiled.gelu_backward_applies(grad, self, "none")
        fast = compiled.gelu_backward_on_arrays(grad, self, "none")
    with reference_mode():
        readable = lantern.ops.nn_activation._gelu_grad(grad, self, "none")
    np.testing.assert_allclose(fast.numpy(), readable.numpy(), **FLOAT32)


@pytest.mark.parametrize("reference", [False, True])
def test_gelu_and_its_gradient_match_torch(reference):
    x = _inputs((40, 129))
    x[np.isposinf(x)] = 50   # torch's vectorised kernel gives nan at +inf; lantern's, as the formula, inf
    value, grad = _gelu(x, reference)
    t = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.gelu(t)
    expected.backward(torch.linspace(-2, 2, x.size).reshape(x.shape))
    np.testing.assert_allclose(value, expected.detach().numpy(), **FLOAT32)
    np.testing.assert_allclose(grad, t.grad.numpy(), **FLOAT32)


@pytest.mark.parametrize("case", ["float64", "tanh", "strided", "create_graph"])
def test_the_readable_gelu_runs_where_the_kernels_do_not_apply(case):
    x = lantern.tensor(_inputs((6, 8)), dtype=lantern.float64 if case == "float64" else lantern.float32)
    x = x.t() if case == "strided" else x
    approximate = "tanh" if case == "tanh" else "none"
    with reference_mode(False):
        forward = compiled.gelu_compiled_applies(np, np.empty(x.shape, x.numpy().dtype), x.numpy(), approximate)
        backward = compiled.gelu_backward_applies(lantern.ones_like(x), x, approximate)
    assert forward is backward is (case == "create_graph")
    if case == "create_graph":   # applies, but a backward that builds a graph runs the readable formula
        x.requires_grad_()
        first, = lantern.autograd.grad(lantern.nn.functional.gelu(x).sum(), x, create_graph=True)
        second, = lantern.autograd.grad(first.sum(), x)
        t = torch.tensor(x.detach().numpy(), requires_grad=True)
        t_first, = torch.autograd.grad(torch.nn.functional.gelu(t).sum(), t, create_graph=True)
        t_second, = torch.autograd.grad(t_first.sum(), t)
        np.testing.assert_allclose(second.numpy(), t_second.numpy(), **FLOAT32)
