"""Fake quantization against torch 2.13: values and the straight-through gradient on random values and exact ties,
and torch's checks."""
import numpy as np
import pytest
import torch

import lantern


def values_with_ties(scale, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(4000) * 5).astype(np.float32)
    x[:800] = ((rng.integers(-300, 300, 800) + 0.5) * np.float32(scale)).astype(np.float32)
    return x


def run(lib, x, per_channel, scale, zero_point, quant_min, quant_max, dtype):
    t = lib.tensor(x, dtype=getattr(lib, dtype)).view(2, -1).requires_grad_()
    if per_channel:
        zero_points = lib.tensor([zero_point, zero_point], dtype=lib.int32)
        y = lib.fake_quantize_per_channel_affine(t, lib.tensor([scale, scale * 2]), zero_points, 0, quant_min,
                                                 quant_max)
    else:
        y = lib.fake_quantize_per_tensor_affine(t, scale, zero_point, quant_min, quant_max)
    (y * lib.arange(1.0, t.size(1) + 1, dtype=t.dtype)).sum().backward()
    return y.detach().double().numpy(), t.grad.double().numpy(), type(y.grad_fn).__name__


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("scale, zero_point, quant_min, quant_max", [(0.1, 3, 0, 255), (1 / 3, 0, -128, 127),
                                                                      (0.05, 10, 0, 15), (2.0, 1, 0, 255)])
def test_fake_quantize_matches_torch(per_channel, dtype, scale, zero_point, quant_min, quant_max):
    x = values_with_ties(scale)
    expected = run(torch, x, per_channel, scale, zero_point, quant_min, quant_max, dtype)
    got = run(lantern, x, per_channel, scale, zero_point, quant_min, quant_max, dtype)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    assert got[2] == expected[2]


def test_float_zero_points_per_channel():
    x = values_with_ties(0.1)
    results = [lib.fake_quantize_per_channel_affine(lib.tensor(x).view(2, -1), lib.tensor([0.1, 0.3]),
                                                    lib.tensor([0.5, 1.25]), 0, 0, 255).numpy()
               for lib in (torch, lantern)]
    assert np.array_equal(*results)


CHECKS = {
    "quant_min above quant_max": lambda T: T.fake_quantize_per_tensor_affine(T.ones(2), 0.1, 0, 5, 1),
    "zero_point out of range": lambda T: T.fake_quantize_per_tensor_affine(T.ones(2), 0.1, 300, 0, 255),
    "integer input": lambda T: T.fake_quantize_per_tensor_affine(T.tensor([1, 2]), 0.1, 0, 0, 255),
    "int64 zero points": lambda T: T.fake_quantize_per_channel_affine(T.ones(2, 3), T.tensor([0.1, 0.2]),
                                                                      T.tensor([0, 1]), 0, 0, 255),
    "axis out of range": lambda T: T.fake_quantize_per_channel_affine(
        T.ones(2, 3), T.tensor([0.1, 0.2]), T.tensor([0, 1], dtype=T.int32), 2, 0, 255),
    "scale and zero point lengths": lambda T: T.fake_quantize_per_channel_affine(
        T.ones(2, 3), T.tensor([0.1, 0.2, 0.3]), T.tensor([0, 1], dtype=T.int32), 0, 0, 255),
    "per-channel zero point out of range": lambda T: T.fake_quantize_per_channel_affine(
        T.ones(2, 3), T.tensor([0.1, 0.2]), T.tensor([0, 300], dtype=T.int32), 0, 0, 255),
}


@pytest.mark.parametrize("name", CHECKS)
def test_checks_raise_torchs_class(name):
    with pytest.raises(Exception) as expected:
        CHECKS[name](torch)
    with pytest.raises(type(expected.value)):
        CHECKS[name](lantern)


def test_tensor_scale_and_float16():
    for lib in (torch, lantern):
        assert lib.fake_quantize_per_tensor_affine(lib.ones(2), lib.tensor([0.1]), lib.tensor([0]), 0, 255).tolist() \
            == [1.0, 1.0]
    expected = torch.fake_quantize_per_tensor_affine(torch.tensor([0.26, 7.0], dtype=torch.float16), 0.1, 0, 0, 50)
    got = lantern.fake_quantize_per_tensor_affine(lantern.tensor([0.26, 7.0], dtype=lantern.float16), 0.1, 0, 0, 50)
    assert got.dtype is lantern.float16 and got.tolist() == expected.tolist()


def test_second_order_the_backward_is_linear_in_the_gradient():
    """The straight-through backward is grad * mask: differentiable again (in the gradient), with values kept away
    from the clamping bounds so that the numerical check does not cross one."""
    x = lantern.tensor([[-0.31, 0.27, 30.0], [1.02, -20.0, 0.5]], dtype=lantern.float64, requires_grad=True)
    assert lantern.autograd.gradgradcheck(
        lambda t: lantern.fake_quantize_per_tensor_affine(t, 0.1, 0, -128, 127), (x,))
    assert lantern.autograd.gradgradcheck(
        lambda t: lantern.fake_quantize_per_channel_affine(t, lantern.tensor([0.1, 0.05]),
                                                           lantern.tensor([0, 3], dtype=lantern.int32), 0, -128, 127),
        (x,))


def observe_and_fake_quantize(T, seed, per_row, symmetric, quant_min, quant_max):
    """Three steps of torch.ao's fused observer: fake quantization off in the first. Every output and every state
    tensor after each step."""
    rng = np.random.default_rng(seed)
    rows = 4 if per_row else None
    running_min = T.full((rows,), float("inf")) if per_row else T.tensor(float("inf"))
    running_max = T.full((rows,), float("-inf")) if per_row else T.tensor(float("-inf"))
    scale, zero_point = T.ones(rows or 1), T.zeros(rows or 1, dtype=T.int32)
    steps = []
    for step, spread in enumerate((3, 1, 5)):
        x = T.tensor((rng.standard_normal((4, 5)) * spread).astype(np.float32), requires_grad=True)
        y = T.fused_moving_avg_obs_fake_quant(x, T.tensor([1]), T.tensor([int(step > 0)]), running_min, running_max,
                                              scale, zero_point, 0.01, quant_min, quant_max, 0, per_row, symmetric)
        y.sum().backward()
        steps.append([t.detach().numpy().copy() for t in (y, x.grad, running_min, running_max, scale, zero_point)])
    return steps


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("quant_min, quant_max", [(0, 255), (-128, 127)])
def test_fused_moving_average_observer_matches_torch(per_row, symmetric, quant_min, quant_max):
    expected = observe_and_fake_quantize(torch, 1, per_row, symmetric, quant_min, quant_max)
    got = observe_and_fake_quantize(lantern, 1, per_row, symmetric, quant_min, quant_max)
    for want, have in zip(expected, got):
        for a, b in zip(want, have):
            assert np.array_equal(a, b)
