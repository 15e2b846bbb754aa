"""Backward formulas whose specialisations compute straight on arrays when nothing records their ops
(ops/derivative_specialisation.py): addmm/mm, relu, convolution weights and max pooling give what their op formulas
give (create_graph=True runs the formulas) and what torch gives, in values, shapes and strides."""
import numpy as np
import pytest
import torch

import lantern
from lantern.ops.derivative_specialisation import on_float_arrays, runs_specialised


def _grads(lib, build, inputs, create_graph=False):
    leaves = [lib.tensor(a, requires_grad=True) for a in inputs]
    out = build(lib, *leaves)
    seed = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)).astype(inputs[0].dtype))
    grads = lib.autograd.grad(out, leaves, seed, create_graph=create_graph)
    return [(g.detach().numpy(), g.stride()) for g in grads]


def _linear(lib, x, w, b):
    return lib.nn.functional.relu(lib.nn.functional.linear(x, w, b))


def _mm(lib, a, b):
    return a.t().mm(b)


def _conv(lib, x, w, b):
    y = lib.nn.functional.conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2), groups=2)
    return lib.nn.functional.max_pool2d(y, 2)


def _pool_overlapping(lib, x):
    return lib.nn.functional.max_pool2d(x, 3, stride=1, padding=1)


def _conv_transpose(lib, x, w):
    return lib.nn.functional.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1)


rng = np.random.default_rng(0)
CASES = {
    "linear": (_linear, [rng.standard_normal(s) for s in ((6, 5), (4, 5), (4,))]),
    "mm": (_mm, [rng.standard_normal(s) for s in ((5, 3), (5, 4))]),
    "conv": (_conv, [rng.standard_normal(s) for s in ((2, 4, 9, 9), (6, 2, 3, 3), (6,))]),
    "pool_overlapping": (_pool_overlapping, [rng.standard_normal((2, 3, 5, 5))]),
    "conv_transpose": (_conv_transpose, [rng.standard_normal(s) for s in ((2, 3, 4, 4), (3, 2, 3, 3))]),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_backward_matches_formulas_and_torch(name, dtype):
    build, inputs = CASES[name]
    inputs = [a.astype(dtype) for a in inputs]
    eager = _grads(lantern, build, inputs)
    formulas = _grads(lantern, build, inputs, create_graph=True)
    theirs = _grads(torch, build, inputs)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for (e, es), (f, fs), (t, ts) in zip(eager, formulas, theirs):
        np.testing.assert_allclose(e, f, rtol=tol, atol=tol)
        np.testing.assert_allclose(e, t, rtol=tol, atol=tol)
        assert es == ts


def test_relu_gradient_is_zero_where_the_output_is_not_positive_even_for_nan_grads():
    x = lantern.tensor([-1.0, 0.0, 2.0, 3.0], requires_grad=True)
    y = lantern.relu(x)
    y.backward(lantern.tensor([float("nan"), float("inf"), -2.0, float("nan")]))
    assert str(x.grad.tolist()) == "[0.0, 0.0, -2.0, nan]"


def test_specialised_backward_only_without_recording():
    t = lantern.ones(2)
    with lantern.reference_mode(False):  # this test checks the fast paths, whatever the session runs in
        assert not runs_specialised()  # grad mode on, as in backward with create_graph: formulas record
        with lantern.no_grad():
            assert runs_specialised()
            with lantern.profiler.profile():
                assert not runs_specialised()
            with lantern.reference_mode():
                assert not runs_specialised()
    assert on_float_arrays(t) and not on_float_arrays(t, lantern.ones(2, dtype=lantern.float64))
    assert not on_float_arrays(lantern.ones(2, dtype=lantern.float16))


@pytest.mark.parametrize("budget", [600, 17_000])
@pytest.mark.parametrize("kind", ["grouped", "transposed", "first_layer"])
def test_convolution_in_batch_slices_matches_torch(kind, budget, monkeypatch):
    """Tiny slices give the same forward and gradients as one slice: a sample at a time (budget 600 bytes), and
    slices of 2, 2 and 1 samples (17,000 bytes: 8,000 per sample) whose last one uses only the front of the
    scratch buffers sized by the first."""
    from lantern.ops import nn_conv
    monkeypatch.setattr(nn_conv, "_IM2COL_BYTES", budget)
    x = rng.standard_normal((5, 1, 6, 5) if kind == "first_layer" else (5, 4, 6, 5))
    w = rng.standard_normal({"grouped": (6, 2, 3, 2), "transposed": (4, 3, 3, 2), "first_layer": (8, 1, 3, 3)}[kind])

    def build(lib, x, w):
        if kind == "transposed":
            return lib.nn.functional.conv_transpose2d(x, w, stride=(2, 1), padding=1, output_padding=(1, 0))
        if kind == "first_layer":  # more output channels than taps: each slice's product outgrows its columns
            return lib.nn.functional.conv2d(x, w, padding=1)
        return lib.nn.functional.conv2d(x, w, stride=(1, 2), padding=(2, 1), groups=2)
    ours, theirs = _grads(lantern, build, [x, w]), _grads(torch, build, [x, w])
    for (a, _), (b, _) in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    y = build(lantern, lantern.tensor(x), lantern.tensor(w))
    np.testing.assert_allclose(y.numpy(), build(torch, torch.tensor(x), torch.tensor(w)).numpy(), rtol=1e-10,
                               atol=1e-10)


def test_channels_last_and_3d_convolution_weight_gradients_match_torch():
    x = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    grads = []
    for lib in (lantern, torch):
        xt = lib.tensor(x).to(memory_format=lib.channels_last).requires_grad_()
        wt = lib.tensor(w, requires_grad=True)
        lib.nn.functional.conv2d(xt, wt, padding=1).pow(2).sum().backward()
        grads.append((xt.grad.numpy(), wt.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    x3, w3 = rng.standard_normal((2, 2, 4, 5, 3)), rng.standard_normal((3, 2, 2, 3, 2))
    build = lambda lib, x, w: lib.nn.functional.conv3d(x, w, stride=(1, 2, 1), padding=1)
    for (a, _), (b, _) in zip(_grads(lantern, build, [x3, w3]), _grads(torch, build, [x3, w3])):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
