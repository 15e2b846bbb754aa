"""GELU's compiled backward (lantern/ops/nn_activation_compiled.py) against the readable one and torch.

The kernel computes PyTorch's vectorised formula (erf by Abramowitz and Stegun 7.1.26, absolute error < 1.5e-7);
the readable derivative uses SciPy's exact ndtr. They agree within float32's tolerance in torch's tests (rtol 1.3e-6,
atol 1e-5), as each does with torch.
"""
import numpy as np
import pytest
import torch

import lantern
from lantern.core.reference import reference_mode
from lantern.ops import nn_activation_compiled as compiled

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
def test_the_readable_gelu_backward_runs_where_the_kernel_does_not_apply(case):
    x = lantern.tensor(_inputs((6, 8)), dtype=lantern.float64 if case == "float64" else lantern.float32)
    x = x.t() if case == "strided" else x
    with reference_mode(False):
        applies = compiled.gelu_backward_applies(lantern.ones_like(x), x, "tanh" if case == "tanh" else "none")
    assert applies is (case == "create_graph")
    if case == "create_graph":   # applies, but a backward that builds a graph runs the readable formula
        x.requires_grad_()
        first, = lantern.autograd.grad(lantern.nn.functional.gelu(x).sum(), x, create_graph=True)
        second, = lantern.autograd.grad(first.sum(), x)
        t = torch.tensor(x.detach().numpy(), requires_grad=True)
        t_first, = torch.autograd.grad(torch.nn.functional.gelu(t).sum(), t, create_graph=True)
        t_second, = torch.autograd.grad(t_first.sum(), t)
        np.testing.assert_allclose(second.numpy(), t_second.numpy(), **FLOAT32)
