"""interpolate(..., antialias=True) (PIL-style resampling, lantern/ops/nn_sampling_antialias.py) against torch:
values in float32 and float64, down- and upsampling, align_corners, scale_factor, channels-last input, the
gradient and its node, the refused cases; and the float32 source coordinate of plain bilinear downsampling (one
rounding, as ATen's fused multiply-add)."""
import numpy as np
import pytest
from oracle import check, raises_like

import lantern


def _image(shape, dtype=np.float32, seed=0):
    return (np.random.default_rng(seed).random(shape) * 255).astype(dtype)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size, align_corners", [((9, 7), False), ((5, 23), False), ((12, 31), True), ((40, 3), None)])
def test_antialias_matches_torch(mode, dtype, size, align_corners):
    check(lambda m, x: m.nn.functional.interpolate(x, size=size, mode=mode, align_corners=align_corners,
                                                   antialias=True), _image((2, 3, 21, 30), dtype))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_scale_factor_and_channels_last(mode):
    check(lambda m, x: m.nn.functional.interpolate(x.contiguous(memory_format=m.channels_last), scale_factor=0.37,
                                                   mode=mode, antialias=True), _image((1, 3, 26, 19)))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_gradient(mode):
    def run(m, x):
        x = x.clone().requires_grad_()
        y = m.nn.functional.interpolate(x, size=(4, 9), mode=mode, antialias=True)
        weights = m.arange(y.numel(), dtype=y.dtype).reshape(y.shape).sin()
        return y, y.grad_fn.name(), m.autograd.grad(y, x, weights)[0]
    check(run, _image((1, 2, 11, 6), np.float64))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_to_second_order(mode):
    """gradgradcheck of the resampling and of its backward op (lantern's _upsample_aa_backward, differentiated in
    turn by the forward resampling)."""
    x = lantern.tensor(_image((1, 2, 7, 5), np.float64) / 255, requires_grad=True)
    g = lantern.tensor(_image((1, 2, 3, 2), np.float64, seed=1) / 255, requires_grad=True)
    resample = lambda x: lantern.nn.functional.interpolate(x, size=(3, 2), mode=mode, antialias=True)
    backward_op = lambda g: lantern.ops.aten._upsample_aa_backward(g, [1, 2, 7, 5], mode)
    assert lantern.autograd.gradgradcheck(resample, (x,))
    assert lantern.autograd.gradgradcheck(backward_op, (g,))


@pytest.mark.parametrize("case", [
    lambda m, x: m.nn.functional.interpolate(x.long(), size=(3, 3), mode="bilinear", antialias=True),
    lambda m, x: m.nn.functional.interpolate(x, size=(3, 3), mode="nearest", antialias=True),
    lambda m, x: m.nn.functional.interpolate(x[0], size=3, mode="linear", antialias=True),
])
def test_antialias_refusals(case):
    raises_like(case, _image((1, 2, 6, 6)))


def test_float32_downsampling_source_coordinate():
    check(lambda m, x: m.nn.functional.interpolate(x, size=(70, 90), mode="bilinear"), _image((1, 2, 115, 152)))
