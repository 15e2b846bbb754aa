"""nn.functional's channel_shuffle, fractional_max_pool2d/3d and pdist, and the modules over them
(ChannelShuffle, FractionalMaxPool2d/3d), compared with torch: values, indices, strides, float64 gradients,
error classes.
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import check, noncontig, raises_like, table_tests, to_lib, assert_same

RNG = np.random.default_rng(160)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def f64(*shape):
    return RNG.standard_normal(shape)


def samples(*shape):
    return RNG.uniform(0, 1, shape).astype(np.float32)


FORWARD = {
    "channel_shuffle": (lambda m, x: (m.nn.functional.channel_shuffle(x, 3), m.channel_shuffle(x, 2),
                                      m.native_channel_shuffle(x, 6)), noncontig(f32(2, 6, 3, 4))),
    "channel_shuffle 3-d and 5-d": (lambda m, x, y: (m.nn.functional.channel_shuffle(x, 2),
                                                     m.nn.functional.channel_shuffle(y, 2)), f32(2, 4, 3),
                                    f32(1, 4, 2, 1, 2)),
    "channel_shuffle channels_last": (
        lambda m, x: m.nn.functional.channel_shuffle(x.contiguous(memory_format=m.channels_last), 3), f32(2, 6, 3, 4)),
    "pdist": (lambda m, x: tuple(m.nn.functional.pdist(x, p) for p in (2, 1, 0, 3.5, float("inf"))),
              noncontig(f32(5, 3))),
    "pdist one row": (lambda m, x: m.nn.functional.pdist(x), f32(1, 3)),
    "fractional_max_pool2d": (lambda m, x, u: m.nn.functional.fractional_max_pool2d(
        x, 2, output_size=(4, 5), return_indices=True, _random_samples=u), noncontig(f32(2, 3, 7, 9)),
        samples(2, 3, 2)),
    "fractional_max_pool2d ratio, 3-d input": (lambda m, x, u: m.nn.functional.fractional_max_pool2d(
        x, (2, 3), output_ratio=(0.5, 0.6), _random_samples=u), f32(3, 8, 10), samples(1, 3, 2)),
    "fractional_max_pool2d output 1": (lambda m, x, u: m.nn.functional.fractional_max_pool2d_with_indices(
        x, 3, output_size=1, _random_samples=u), f64(1, 2, 5, 5), samples(1, 2, 2).astype(np.float64)),
    "fractional_max_pool3d": (lambda m, x, u: m.nn.functional.fractional_max_pool3d(
        x, (2, 2, 3), output_size=(3, 4, 3), return_indices=True, _random_samples=u), noncontig(f32(2, 2, 6, 7, 8)),
        samples(2, 2, 3)),
    "fractional_max_pool3d with_indices 4-d": (lambda m, x, u: m.nn.functional.fractional_max_pool3d_with_indices(
        x, 2, output_ratio=0.5, _random_samples=u), f64(2, 6, 6, 6), samples(1, 2, 3).astype(np.float64)),
    "fractional_max_pool3d empty batch": (lambda m, x: m.nn.functional.fractional_max_pool3d(
        x, (2, 2, 1), output_size=2), np.zeros((0, 1, 4, 5, 4), np.float32)),
    "modules": (lambda m, x, u: (m.nn.ChannelShuffle(2)(x), m.nn.FractionalMaxPool2d(2, output_size=3,
                                                                                      _random_samples=u)(x),
                                 str(m.nn.ChannelShuffle(2))), f32(1, 4, 5, 5), samples(1, 4, 2)),
    "FractionalMaxPool3d": (lambda m, x, u: m.nn.FractionalMaxPool3d(2, output_ratio=0.5, return_indices=True,
                                                                     _random_samples=u)(x), f32(1, 2, 4, 4, 4),
                            samples(1, 2, 3)),
}

ERRORS = {
    "channel_shuffle 2-d": (lambda m, x: m.nn.functional.channel_shuffle(x, 2), f32(2, 6)),
    "channel_shuffle groups 0": (lambda m, x: m.nn.functional.channel_shuffle(x, 0), f32(2, 6, 2)),
    "channel_shuffle indivisible": (lambda m, x: m.nn.functional.channel_shuffle(x, 4), f32(2, 6, 2)),
    "pdist 1-d": (lambda m, x: m.nn.functional.pdist(x), f32(3)),
    "pdist int": (lambda m, x: m.nn.functional.pdist(x.long()), f32(3, 2)),
    "pdist negative p": (lambda m, x: m.nn.functional.pdist(x, -1), f32(3, 2)),
    "fractional_max_pool2d no size": (lambda m, x: m.nn.functional.fractional_max_pool2d(x, 2), f32(1, 1, 4, 4)),
    "fractional_max_pool2d too large": (lambda m, x, u: m.nn.functional.fractional_max_pool2d(
        x, 3, output_size=4, _random_samples=u), f32(1, 1, 5, 5), samples(1, 1, 2)),
    "fractional_max_pool2d 2-d input": (lambda m, x: m.nn.functional.fractional_max_pool2d(x, 2, output_size=2),
                                        f32(4, 4)),
    "FractionalMaxPool2d no size": (lambda m: m.nn.FractionalMaxPool2d(2),),
    "FractionalMaxPool2d ratio": (lambda m: m.nn.FractionalMaxPool2d(2, output_ratio=1.5),),
}

test_forward_matches_torch, test_error_matches_torch = table_tests(FORWARD, ERRORS)


def _grads(lib, fn, arrays):
    xs = [to_lib(lib, a) for a in arrays]
    xs[0].requires_grad_()
    out = fn(lib, *xs)
    weights = lib.tensor(np.linspace(-1, 2, out.numel()).reshape(tuple(out.shape)), dtype=out.dtype)
    (out * weights).sum().backward()
    return xs[0].grad


@pytest.mark.parametrize("fn, arrays", [
    (lambda m, x: m.nn.functional.channel_shuffle(x, 2), (noncontig(f64(2, 4, 3)),)),
    (lambda m, x: m.nn.functional.pdist(x, 1.5), (noncontig(f64(4, 3)),)),
    (lambda m, x: m.nn.functional.pdist(x), (np.array([[0.0, 1.0], [0.0, 1.0], [2.0, 3.0]]),)),
    (lambda m, x, u: m.nn.functional.fractional_max_pool2d(x, 2, output_size=(3, 4), _random_samples=u),
     (noncontig(f64(2, 2, 6, 7)), samples(2, 2, 2).astype(np.float64))),
    (lambda m, x, u: m.nn.functional.fractional_max_pool3d(x, 2, output_size=2, _random_samples=u),
     (f64(1, 2, 4, 5, 4), samples(1, 2, 3).astype(np.float64))),
], ids=["channel_shuffle", "pdist", "pdist equal rows", "fractional_max_pool2d", "fractional_max_pool3d"])
def test_gradients_match_torch(fn, arrays):
    assert_same(_grads(lantern, fn, arrays), _grads(torch, fn, arrays), atol=1e-6, rtol=1e-6, strides=False)


def test_fractional_max_pool_draws_its_own_samples():
    """Without _random_samples each (batch, channel) draws its own window starts: shapes and the values are
    maxima of windows of the input."""
    x = lantern.randn(2, 3, 9, 9)
    values, indices = lantern.nn.functional.fractional_max_pool2d(x, 2, output_size=4, return_indices=True)
    assert values.shape == (2, 3, 4, 4) and indices.dtype is lantern.int64
    assert lantern.equal(values, x.flatten(2).gather(2, indices.flatten(2)).view(2, 3, 4, 4))


@pytest.mark.parametrize("name", ["channel_shuffle", "native_channel_shuffle", "fractional_max_pool2d",
                                  "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
                                  "fractional_max_pool3d_with_indices", "pdist", "upsample_bilinear",
                                  "upsample_nearest"])
def test_functional_names_exist(name):
    assert hasattr(lantern.nn.functional, name) == hasattr(torch.nn.functional, name)
