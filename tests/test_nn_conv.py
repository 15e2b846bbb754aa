"""Convolution, padding and pooling (lantern/ops/nn_conv.py, nn_padding.py, nn_pooling.py) against torch: values,
dtypes, shapes, strides and exception classes on non-contiguous inputs; gradients equal torch's (and the node
names); gradcheck and gradgradcheck in float64.
"""
import sys

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, check, matches_torch, noncontig, raises_like, to_lib

# the modules of the spatial ops' family (lantern/ops/nn_conv.py and the files beside it)
FAMILY_MODULES = {f"lantern.ops.{name}" for name in ("nn_conv", "nn_padding", "nn_pooling", "nn_fold", "nn_sampling")}

RNG = np.random.default_rng(2024)


def randn(*shape, dtype=np.float64):
    return noncontig(RNG.standard_normal(shape).astype(dtype))


def F(m):
    return m.nn.functional


# ---- forward ---------------------------------------------------------------------------------------------------

CONV2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2)),
    dict(padding="same", dilation=2),
    dict(padding="valid"),
    dict(groups=2),
    dict(groups=2, stride=(1, 3), padding=1, dilation=(2, 1)),
]


@pytest.mark.parametrize("kw", CONV2D, ids=str)
def test_conv2d_matches_torch(kw):
    check(lambda m, x, w, b: F(m).conv2d(x, w, b, **kw), randn(2, 4, 7, 6), randn(6, 4 // kw.get("groups", 1), 3, 2),
          randn(6), atol=1e-10)


def test_conv2d_spec_example_and_aliases():
    x = lantern.arange(16.).view(1, 1, 4, 4)
    expected = [[10.0, 14.0, 18.0], [26.0, 30.0, 34.0], [42.0, 46.0, 50.0]]
    assert lantern.nn.functional.conv2d(x, lantern.ones(1, 1, 2, 2)).view(3, 3).tolist() == expected
    assert lantern.conv2d(x, lantern.ones(1, 1, 2, 2)).view(3, 3).tolist() == expected


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.complex128], ids=str)
def test_conv2d_dtypes(dtype):
    x = (RNG.standard_normal((1, 2, 5, 5)) * 3).astype(dtype)
    w = (RNG.standard_normal((3, 2, 2, 3)) * 3).astype(dtype)
    check(lambda m, x, w: F(m).conv2d(x, w, padding=1), noncontig(x), noncontig(w), atol=1e-4, rtol=1e-4)


def test_bfloat16_forward_matches_torch():
    x, w = randn(1, 2, 4, 4, dtype=np.float32), randn(3, 2, 2, 2, dtype=np.float32)
    check(lambda m, x, w: F(m).conv2d(x.to(m.bfloat16), w.to(m.bfloat16)), x, w)
    check(lambda m, x: F(m).max_pool2d(x.to(m.bfloat16), 2), x)
    check(lambda m, x: F(m).avg_pool2d(x.to(m.bfloat16), 2), x)
    check(lambda m, x: F(m).interpolate(x.to(m.bfloat16), scale_factor=2, mode="bilinear"), x)


def test_conv2d_even_kernel_same_padding_pads_right():
    check(lambda m, x, w: F(m).conv2d(x, w, padding="same"), randn(1, 2, 5, 6), randn(3, 2, 2, 4), atol=1e-10)


def test_conv2d_unbatched_and_channels_last():
    check(lambda m, x, w: F(m).conv2d(x, w, padding=1), randn(2, 5, 5), randn(3, 2, 3, 3), atol=1e-10)
    check(lambda m, x, w: F(m).conv2d(x.contiguous(memory_format=m.channels_last), w), randn(2, 3, 5, 4),
          randn(4, 3, 2, 2), atol=1e-10)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=2, dilation=2), dict(padding="same", groups=2)],
                         ids=str)
def test_conv1d_matches_torch(kw):
    check(lambda m, x, w, b: F(m).conv1d(x, w, b, **kw), randn(2, 4, 9), randn(6, 4 // kw.get("groups", 1), 3),
          randn(6), atol=1e-10)


@pytest.mark.parametrize("kw", [dict(), dict(stride=(1, 2, 2), padding=1, groups=2)], ids=str)
def test_conv3d_matches_torch(kw):
    check(lambda m, x, w: F(m).conv3d(x, w, **kw), randn(1, 4, 4, 5, 4), randn(2, 4 // kw.get("groups", 1), 2, 3, 2),
          atol=1e-10)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2, dilation=(1, 2))],
                         ids=str)
def test_conv_transpose2d_matches_torch(kw):
    check(lambda m, x, w, b: F(m).conv_transpose2d(x, w, b, **kw), randn(2, 4, 4, 3),
          randn(4, 6 // kw.get("groups", 1), 3, 2), randn(6), atol=1e-10)


def test_conv_transpose1d_and_3d_match_torch():
    check(lambda m, x, w: F(m).conv_transpose1d(x, w, stride=3, padding=1, output_padding=2), randn(2, 3, 5),
          randn(3, 2, 4), atol=1e-10)
    check(lambda m, x, w: F(m).conv_transpose3d(x, w, stride=2), randn(1, 2, 2, 3, 2), randn(2, 3, 2, 2, 2),
          atol=1e-10)


CONV_ERRORS = [
    lambda m, x, w: F(m).conv2d(x, w.double()),
    lambda m, x, w: F(m).conv2d(x, w, bias=m.zeros(3)),
    lambda m, x, w: F(m).conv2d(x, w, stride=0),
    lambda m, x, w: F(m).conv2d(x, w, padding=-1),
    lambda m, x, w: F(m).conv2d(x, w, dilation=0),
    lambda m, x, w: F(m).conv2d(x, w, groups=3),
    lambda m, x, w: F(m).conv2d(x[:, :1], w),
    lambda m, x, w: F(m).conv2d(x[..., :2, :2], w),
    lambda m, x, w: F(m).conv2d(x, w, padding="same", stride=2),
    lambda m, x, w: F(m).conv2d(x, w, padding="full"),
    lambda m, x, w: F(m).conv2d(x[0, 0], w),
    lambda m, x, w: F(m).conv2d(x, w, stride=(1, 2, 3)),
    lambda m, x, w: F(m).conv_transpose2d(x, w.transpose(0, 1), output_padding=1),
]


@pytest.mark.parametrize("k", range(len(CONV_ERRORS)))
def test_conv_errors_match_torch(k):
    raises_like(CONV_ERRORS[k], randn(1, 2, 5, 5, dtype=np.float32), randn(4, 2, 3, 3, dtype=np.float32))


def test_conv_error_messages_name_the_shapes():
    with pytest.raises(RuntimeError, match=r"weight of size \[4, 2, 3, 3\], expected input\[1, 1, 5, 5\]"):
        lantern.nn.functional.conv2d(lantern.ones(1, 1, 5, 5), lantern.ones(4, 2, 3, 3))


@pytest.mark.parametrize("pad", [(1, 2), (2, 0, 1, 1), (-1, 2, 0, 1), (1, 1, 1, 1, 1, 1)], ids=str)
def test_pad_constant_matches_torch(pad):
    check(lambda m, x: F(m).pad(x, pad), randn(2, 3, 4))
    check(lambda m, x: F(m).pad(x, pad, value=1.5), randn(2, 3, 4))
    check(lambda m, x: F(m).pad(x, pad, value=7), noncontig(np.arange(24).reshape(2, 3, 4)))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad,shape", [((1, 2), (2, 5)), ((1, 2), (1, 2, 5)), ((2, 1, 0, 2), (2, 3, 4)),
                                       ((1, 1, 2, 0), (1, 2, 3, 4)), ((1, 0, 1, 1, 2, 1), (1, 2, 3, 3, 4)),
                                       ((-1, 2, 0, 0), (1, 3, 4)), ((3, 1, 0, 0), (1, 3, 4)), ((4, 1), (2, 4)),
                                       ((1, 1), (1, 2, 3, 4)), ((1, 1, 2), (2, 3, 4)), ((2, -1), (1, 4)),
                                       ((-1, -1), (1, 4))], ids=str)
def test_pad_modes_match_torch(mode, pad, shape):
    matches_torch(lambda m, x: F(m).pad(x, pad, mode=mode), randn(*shape))


def test_pad_mode_errors_match_torch():
    raises_like(lambda m, x: F(m).pad(x, (1, 1), mode="wrap"), randn(2, 3))
    raises_like(lambda m, x: F(m).pad(x, (1, 1), mode="reflect", value=2.0), randn(2, 3))


def test_pad_errors_match_torch():
    raises_like(lambda m, x: F(m).pad(x, (1, 2, 3)), randn(2, 3))
    raises_like(lambda m, x: F(m).pad(x, (-3, 0)), randn(2, 2))
    raises_like(lambda m, x: F(m).pad(x, (1,) * 6), randn(2, 2))


MAX_POOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), dilation=(2, 1), ceil_mode=True),
    dict(kernel_size=(2, 3), stride=1, dilation=2),
]


@pytest.mark.parametrize("kw", MAX_POOL, ids=str)
def test_max_pool2d_matches_torch(kw):
    check(lambda m, x: F(m).max_pool2d(x, return_indices=True, **kw), randn(2, 3, 7, 6))
    check(lambda m, x: F(m).max_pool2d(x, **kw), randn(3, 7, 6, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float16, np.int32], ids=str)
def test_max_pool2d_dtypes(dtype):
    check(lambda m, x: F(m).max_pool2d(x, 2, padding=1), noncontig((RNG.standard_normal((2, 5, 5)) * 9).astype(dtype)))


def test_max_pool_picks_the_first_maximum_and_nan():
    x = np.array([[[1.0, 3.0, 3.0, np.nan, 2.0, 2.0]]])
    check(lambda m, x: F(m).max_pool1d(x, 2, return_indices=True), x)
    check(lambda m, x: F(m).max_pool1d(x, 3, 1, return_indices=True), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=2, dilation=2)], ids=str)
def test_max_pool1d_matches_torch(kw):
    check(lambda m, x: F(m).max_pool1d(x, return_indices=True, **kw), randn(2, 3, 9))
    check(lambda m, x: F(m).max_pool1d(x, **kw), randn(3, 9))


AVG_POOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=1, divisor_override=5, ceil_mode=True),
]


@pytest.mark.parametrize("kw", AVG_POOL, ids=str)
def test_avg_pool2d_matches_torch(kw):
    check(lambda m, x: F(m).avg_pool2d(x, **kw), randn(2, 3, 7, 6), atol=1e-12)
    check(lambda m, x: F(m).avg_pool2d(x, **kw), randn(3, 7, 6, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float16, np.int64], ids=str)
def test_avg_pool2d_dtypes(dtype):
    check(lambda m, x: F(m).avg_pool2d(x, 2, ceil_mode=True), noncontig((RNG.standard_normal((2, 5, 5)) * 9)
                                                                         .astype(dtype)))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                                          count_include_pad=False)], ids=str)
def test_avg_pool1d_matches_torch(kw):
    check(lambda m, x: F(m).avg_pool1d(x, **kw), randn(2, 3, 9))


@pytest.mark.parametrize("size", [(3, 4), (5, None), (7, 6), (2, 1), 1, (0, 3)], ids=str)
def test_adaptive_pool2d_matches_torch(size):
    check(lambda m, x: F(m).adaptive_avg_pool2d(x, size), randn(2, 3, 7, 6), atol=1e-12)
    check(lambda m, x: F(m).adaptive_avg_pool2d(x, size), randn(3, 7, 6, dtype=np.float32))
    if size != (0, 3):
        check(lambda m, x: F(m).adaptive_max_pool2d(x, size, return_indices=True), randn(2, 3, 7, 6))
        check(lambda m, x: F(m).adaptive_max_pool2d(x, size), randn(3, 7, 6, dtype=np.float32))


@pytest.mark.parametrize("size", [3, 4, 9], ids=str)
def test_adaptive_pool1d_matches_torch(size):
    check(lambda m, x: F(m).adaptive_avg_pool1d(x, size), randn(2, 3, 7), atol=1e-12)
    check(lambda m, x: F(m).adaptive_max_pool1d(x, size, return_indices=True), randn(3, 7))


ADAPTIVE_ERRORS = [
    lambda m, x: F(m).adaptive_avg_pool2d(x[0, 0], 2),
    lambda m, x: F(m).adaptive_avg_pool2d(x, (2, 3, 4)),
    lambda m, x: F(m).adaptive_avg_pool2d(x, (-1, 3)),
    lambda m, x: F(m).adaptive_avg_pool2d(x.long(), 2),
    lambda m, x: F(m).adaptive_avg_pool2d(x[..., :0], 2),
    lambda m, x: F(m).adaptive_avg_pool1d(x, 3),
    lambda m, x: F(m).adaptive_max_pool2d(x[0, 0], 2),
    lambda m, x: F(m).adaptive_max_pool2d(x.long(), 2),
    lambda m, x: F(m).adaptive_max_pool1d(x, 3),
]


@pytest.mark.parametrize("k", range(len(ADAPTIVE_ERRORS)))
def test_adaptive_pool_errors_match_torch(k):
    raises_like(ADAPTIVE_ERRORS[k], randn(1, 2, 5, 7))


POOL_ERRORS = [
    lambda m, x: F(m).max_pool2d(x, 3, padding=2),
    lambda m, x: F(m).avg_pool2d(x, 3, padding=2),
    lambda m, x: F(m).max_pool2d(x[..., :1, :1], 2),
    lambda m, x: F(m).avg_pool2d(x[..., :1, :1], 2),
    lambda m, x: F(m).max_pool2d(x[0, 0], 2),
    lambda m, x: F(m).max_pool2d(x, 2, stride=0),
    lambda m, x: F(m).avg_pool2d(x, 2, stride=0),
    lambda m, x: F(m).max_pool2d(x, 0),
    lambda m, x: F(m).avg_pool2d(x, 2, divisor_override=0),
    lambda m, x: F(m).max_pool2d(x, (2, 2, 2)),
    lambda m, x: F(m).max_pool2d(x.to(m.bool), 2),
]


@pytest.mark.parametrize("k", range(len(POOL_ERRORS)))
def test_pool_errors_match_torch(k):
    raises_like(POOL_ERRORS[k], randn(1, 2, 5, 5))


UNFOLD = [dict(kernel_size=2), dict(kernel_size=(2, 3), padding=1, stride=(2, 1), dilation=(1, 2))]


@pytest.mark.parametrize("kw", UNFOLD, ids=str)
def test_unfold_and_fold_match_torch(kw):
    check(lambda m, x: F(m).unfold(x, **kw), randn(2, 3, 5, 6))
    check(lambda m, x: F(m).unfold(x, **kw), randn(3, 5, 6, dtype=np.float32))
    cols = F(torch).unfold(torch.zeros(1, 3, 5, 6), **kw).shape[1:]
    check(lambda m, c: F(m).fold(c, (5, 6), **kw), randn(2, *cols))
    check(lambda m, c: F(m).fold(c, (5, 6), **kw), randn(*cols, dtype=np.float32))


FOLD_ERRORS = [
    lambda m, x, c: F(m).unfold(x[0, 0], (2, 3)),
    lambda m, x, c: F(m).unfold(x, (6, 3)),
    lambda m, x, c: F(m).unfold(x, 2, stride=0),
    lambda m, x, c: F(m).fold(c, (3, 5), (2, 2)),
    lambda m, x, c: F(m).fold(c[:, :5], (3, 4), (2, 2)),
    lambda m, x, c: F(m).fold(c[0, 0], (3, 4), (2, 2)),
]


@pytest.mark.parametrize("k", range(len(FOLD_ERRORS)))
def test_unfold_fold_errors_match_torch(k):
    raises_like(FOLD_ERRORS[k], randn(2, 3, 5, 4), randn(2, 12, 6))


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((9, 2, 1), 3), ((2, 1, 2, 4, 3, 2), 1)], ids=str)
def test_pixel_shuffle_matches_torch(shape, r):
    check(lambda m, x: F(m).pixel_shuffle(x, r), randn(*shape))
    check(lambda m, x: F(m).pixel_unshuffle(F(m).pixel_shuffle(x, r), r), randn(*shape))


SHUFFLE_ERRORS = [
    lambda m, x: F(m).pixel_shuffle(x[0, 0], 2),
    lambda m, x: F(m).pixel_shuffle(x, 3),
    lambda m, x: F(m).pixel_shuffle(x, 0),
    lambda m, x: F(m).pixel_unshuffle(x, 2),
    lambda m, x: F(m).pixel_unshuffle(x[..., :2, :3], 2),
    lambda m, x: F(m).pixel_unshuffle(x, 0),
]


@pytest.mark.parametrize("k", range(len(SHUFFLE_ERRORS)))
def test_pixel_shuffle_errors_match_torch(k):
    raises_like(SHUFFLE_ERRORS[k], randn(2, 8, 3, 4))


INTERPOLATE = [
    dict(size=(7, 3), mode="bilinear"),
    dict(size=(9, 11), mode="bilinear", align_corners=True),
    dict(scale_factor=2.3, mode="bilinear"),
    dict(scale_factor=2.3, mode="bilinear", recompute_scale_factor=True),
    dict(scale_factor=1.7, mode="bicubic", align_corners=True),
    dict(scale_factor=(0.6, 1.5), mode="bicubic"),
    dict(scale_factor=2),
    dict(size=(3, 4)),
    dict(scale_factor=(2, 0.5), mode="nearest-exact"),
    dict(size=9, mode="area"),
]


@pytest.mark.parametrize("kw", INTERPOLATE, ids=str)
def test_interpolate_2d_matches_torch(kw):
    check(lambda m, x: F(m).interpolate(x, **kw), randn(2, 3, 5, 6), atol=1e-12)
    check(lambda m, x: F(m).interpolate(x, **kw), randn(1, 2, 5, 6, dtype=np.float32))


@pytest.mark.parametrize("kw", [dict(size=9, mode="linear"), dict(scale_factor=1.5, mode="linear", align_corners=True),
                                dict(size=4), dict(scale_factor=3, mode="nearest-exact"), dict(size=4, mode="area")],
                         ids=str)
def test_interpolate_1d_matches_torch(kw):
    check(lambda m, x: F(m).interpolate(x, **kw), randn(2, 3, 6), atol=1e-12)


@pytest.mark.parametrize("kw", [dict(size=(3, 4, 5), mode="trilinear"), dict(scale_factor=2),
                                dict(scale_factor=1.5, mode="trilinear", align_corners=True)], ids=str)
def test_interpolate_3d_matches_torch(kw):
    check(lambda m, x: F(m).interpolate(x, **kw), randn(1, 2, 2, 3, 4), atol=1e-12)


def test_interpolate_dtypes():
    check(lambda m, x: F(m).interpolate(x, scale_factor=1.5), noncontig(RNG.integers(0, 255, (1, 2, 3, 4))
                                                                        .astype(np.uint8)))
    check(lambda m, x: F(m).interpolate(x, size=(4, 7), mode="bilinear"), randn(1, 2, 3, 4, dtype=np.float16))


INTERPOLATE_ERRORS = [
    lambda m, x: F(m).interpolate(x[0], size=9, mode="bilinear"),
    lambda m, x: F(m).interpolate(x, size=9, mode="linear"),
    lambda m, x: F(m).interpolate(x, size=9, scale_factor=2),
    lambda m, x: F(m).interpolate(x),
    lambda m, x: F(m).interpolate(x, size=(9,), mode="bilinear"),
    lambda m, x: F(m).interpolate(x, size=9, mode="nearest", align_corners=True),
    lambda m, x: F(m).interpolate(x, size=9, mode="foo"),
    lambda m, x: F(m).interpolate(x[0, 0], size=9),
    lambda m, x: F(m).interpolate(x, scale_factor=-1),
    lambda m, x: F(m).interpolate(x, size=0),
    lambda m, x: F(m).interpolate(x.long(), size=9, mode="bilinear"),
]


@pytest.mark.parametrize("k", range(len(INTERPOLATE_ERRORS)))
def test_interpolate_errors_match_torch(k):
    raises_like(INTERPOLATE_ERRORS[k], randn(1, 2, 5, 6))


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(align_corners):
    check(lambda m, t: F(m).affine_grid(t, (2, 3, 4, 5), align_corners=align_corners), randn(2, 2, 3))
    check(lambda m, t: F(m).affine_grid(t, (2, 3, 2, 4, 5), align_corners=align_corners), randn(2, 3, 4))
    check(lambda m, t: F(m).affine_grid(t, (1, 1, 1, 3), align_corners=align_corners), randn(1, 2, 3))


AFFINE_ERRORS = [
    lambda m, t: F(m).affine_grid(t, (2, 3, 4)),
    lambda m, t: F(m).affine_grid(t, (2, 3, 4, 5, 6)),
    lambda m, t: F(m).affine_grid(t.long(), (2, 3, 4, 5)),
    lambda m, t: F(m).affine_grid(t, (2, 3, 0, 5)),
]


@pytest.mark.parametrize("k", range(len(AFFINE_ERRORS)))
def test_affine_grid_errors_match_torch(k):
    raises_like(AFFINE_ERRORS[k], randn(2, 2, 3))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners):
    grid = noncontig(RNG.uniform(-1.3, 1.3, (2, 3, 4, 2)))
    check(lambda m, x, g: F(m).grid_sample(x, g, mode, padding_mode, align_corners), randn(2, 3, 4, 5), grid,
          atol=1e-12)


GRID_SAMPLE_ERRORS = [
    lambda m, x, g: F(m).grid_sample(x, g, mode="foo", align_corners=False),
    lambda m, x, g: F(m).grid_sample(x, g, padding_mode="foo", align_corners=False),
    lambda m, x, g: F(m).grid_sample(x, g.float(), align_corners=False),
    lambda m, x, g: F(m).grid_sample(x, m.cat([g, g], -1), align_corners=False),
    lambda m, x, g: F(m).grid_sample(x, m.cat([g, g]), align_corners=False),
]


@pytest.mark.parametrize("k", range(len(GRID_SAMPLE_ERRORS)))
def test_grid_sample_errors_match_torch(k):
    raises_like(GRID_SAMPLE_ERRORS[k], randn(1, 2, 3, 4), randn(1, 2, 2, 2))


def test_empty_batch_forward_and_backward_match_torch():
    def run(lib):
        x = lib.ones(0, 3, 5, 5, requires_grad=True)
        f = F(lib)
        outs = [f.conv2d(x, lib.ones(2, 3, 3, 3)), f.conv_transpose2d(x, lib.ones(3, 2, 2, 2)), f.max_pool2d(x, 2),
                f.avg_pool2d(x, 2), f.adaptive_avg_pool2d(x, 2), f.adaptive_max_pool2d(x, 2), f.unfold(x, 2),
                f.interpolate(x, size=3, mode="bilinear"), f.pad(x, (1, 1, 1, 1), mode="reflect")]
        return [o.shape for o in outs] + [lib.autograd.grad(sum(o.sum() for o in outs), x)[0]]
    assert_same(run(lantern), run(torch))


def test_namespaces_match_torch():
    for module in FAMILY_MODULES:
        for name in sys.modules[module].__all__:
            assert hasattr(lantern.nn.functional, name)
    for name in ("conv2d", "conv_transpose1d", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "pixel_shuffle"):
        assert getattr(lantern, name) is getattr(lantern.nn.functional, name)
    assert not hasattr(lantern, "interpolate") and not hasattr(lantern, "grid_sample")


def test_meta_device_gives_shapes():
    x = lantern.ones(2, 3, 8, 8, device="meta")
    F_ = lantern.nn.functional
    assert F_.conv2d(x, lantern.ones(4, 3, 3, 3, device="meta"), stride=2).shape == (2, 4, 3, 3)
    out, idx = F_.max_pool2d(x, 2, return_indices=True)
    assert out.shape == idx.shape == (2, 3, 4, 4) and idx.dtype is lantern.int64
    assert F_.avg_pool2d(x, 3, ceil_mode=True).shape == (2, 3, 3, 3)


# ---- gradients -------------------------------------------------------------------------------------------------

GRAD_CASES = [
    ("conv2d", lambda m, x, w, b: F(m).conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
     (1, 4, 4, 4), (4, 2, 3, 2), (4,)),
    ("conv2d_same", lambda m, x, w: F(m).conv2d(x, w, padding="same"), (1, 2, 4, 5), (3, 2, 2, 3)),
    ("conv1d", lambda m, x, w: F(m).conv1d(x, w, stride=2, padding=1), (2, 2, 7), (3, 2, 3)),
    ("conv3d", lambda m, x, w: F(m).conv3d(x, w, stride=2, padding=1), (1, 2, 4, 3, 4), (2, 2, 2, 2, 3)),
    ("conv_transpose2d", lambda m, x, w, b: F(m).conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0),
                                                                  output_padding=(1, 2), groups=2, dilation=(1, 2)),
     (1, 4, 2, 2), (4, 1, 2, 2), (2,)),
    ("conv_transpose1d", lambda m, x, w: F(m).conv_transpose1d(x, w, stride=2, padding=1), (1, 3, 4), (3, 2, 3)),
    ("pad", lambda m, x: F(m).pad(x, (1, -1, 2, 0), value=2.0), (2, 3, 4)),
    ("pad_reflect", lambda m, x: F(m).pad(x, (2, 1, 1, 2), mode="reflect"), (1, 2, 3, 4)),
    ("pad_replicate", lambda m, x: F(m).pad(x, (2, 1), mode="replicate"), (2, 3)),
    ("pad_circular", lambda m, x: F(m).pad(x, (0, 2, 1, 3), mode="circular"), (1, 2, 3, 4)),
    ("max_pool2d", lambda m, x: F(m).max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), (2, 2, 5, 6)),
    ("max_pool2d_dilated", lambda m, x: F(m).max_pool2d(x, (2, 3), stride=1, dilation=(2, 1)), (1, 2, 5, 5)),
    ("max_pool1d", lambda m, x: F(m).max_pool1d(x, 2), (2, 3, 6)),
    ("avg_pool2d", lambda m, x: F(m).avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     (2, 2, 5, 6)),
    ("avg_pool2d_divisor", lambda m, x: F(m).avg_pool2d(x, (2, 3), divisor_override=4), (1, 2, 4, 6)),
    ("avg_pool1d", lambda m, x: F(m).avg_pool1d(x, 3, stride=2, padding=1), (2, 3, 7)),
    ("adaptive_avg_pool2d", lambda m, x: F(m).adaptive_avg_pool2d(x, (3, 4)), (1, 2, 5, 7)),
    ("adaptive_avg_pool2d_1", lambda m, x: F(m).adaptive_avg_pool2d(x, 1), (1, 2, 3, 2)),
    ("adaptive_avg_pool1d", lambda m, x: F(m).adaptive_avg_pool1d(x, 3), (2, 5)),
    ("adaptive_max_pool2d", lambda m, x: F(m).adaptive_max_pool2d(x, (3, 4)), (1, 2, 5, 7)),
    ("adaptive_max_pool1d", lambda m, x: F(m).adaptive_max_pool1d(x, 4), (2, 3, 7)),
    ("unfold", lambda m, x: F(m).unfold(x, (2, 3), padding=1, stride=(2, 1), dilation=(1, 2)), (1, 2, 4, 5)),
    ("fold", lambda m, c: F(m).fold(c, (4, 5), (2, 3), padding=1, stride=(2, 1), dilation=(1, 2)), (1, 12, 9)),
    ("pixel_shuffle", lambda m, x: F(m).pixel_shuffle(x, 2), (1, 8, 2, 3)),
    ("pixel_unshuffle", lambda m, x: F(m).pixel_unshuffle(x, 2), (1, 2, 4, 2)),
    ("interpolate_bilinear", lambda m, x: F(m).interpolate(x, size=(4, 5), mode="bilinear"), (1, 2, 3, 4)),
    ("interpolate_bicubic", lambda m, x: F(m).interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=True),
     (1, 1, 3, 4)),
    ("interpolate_nearest", lambda m, x: F(m).interpolate(x, scale_factor=(1.5, 0.7)), (1, 2, 3, 4)),
    ("interpolate_linear", lambda m, x: F(m).interpolate(x, size=7, mode="linear"), (2, 2, 4)),
    ("affine_grid", lambda m, t: F(m).affine_grid(t, (1, 2, 3, 4), align_corners=False), (1, 2, 3)),
    ("grid_sample_bilinear", lambda m, x, g: F(m).grid_sample(x, g * 1.2, align_corners=False), (1, 2, 3, 4),
     (1, 2, 3, 2)),
    ("grid_sample_bicubic", lambda m, x, g: F(m).grid_sample(x, g, "bicubic", "border", align_corners=True),
     (1, 1, 3, 4), (1, 1, 2, 2)),
    ("grid_sample_reflection", lambda m, x, g: F(m).grid_sample(x, g * 1.5, "bilinear", "reflection",
                                                                align_corners=False), (1, 1, 3, 4), (1, 2, 2, 2)),
    ("grid_sample_nearest", lambda m, x, g: F(m).grid_sample(x, g, "nearest", align_corners=False), (1, 2, 3, 3),
     (1, 2, 2, 2)),
    ("interpolate_trilinear", lambda m, x: F(m).interpolate(x, scale_factor=1.5, mode="trilinear"), (1, 1, 2, 3, 2)),
]


# the op records (each with its derivative) that the gradient cases above run through; gradgradcheck also runs the
# derivatives of the backward ops
RECORDS = {
    "convolution": "conv2d conv2d_same conv1d conv3d conv_transpose2d conv_transpose1d",
    "constant_pad_nd": "pad conv2d_same",
    "max_pool2d_with_indices": "max_pool2d max_pool2d_dilated max_pool1d",
    "adaptive_max_pool2d": "adaptive_max_pool2d adaptive_max_pool1d",
    "avg_pool2d": "avg_pool2d avg_pool2d_divisor avg_pool1d",
    "avg_pool2d_backward": "avg_pool2d avg_pool2d_divisor avg_pool1d",
    "_adaptive_avg_pool2d": "adaptive_avg_pool2d adaptive_avg_pool1d",
    "_adaptive_avg_pool2d_backward": "adaptive_avg_pool2d adaptive_avg_pool1d",
    "im2col": "unfold fold",
    "col2im": "fold unfold",
    "_upsample": "interpolate_bilinear interpolate_bicubic interpolate_nearest interpolate_linear",
    "_upsample_backward": "interpolate_bilinear interpolate_bicubic interpolate_trilinear",
}


@pytest.mark.parametrize("transposed", [False, True])
def test_complex_convolution_gradients_match_torch(transposed):
    x = noncontig(RNG.standard_normal((1, 2, 4, 4)) + 1j * RNG.standard_normal((1, 2, 4, 4)))
    w = noncontig(RNG.standard_normal((2, 3, 2, 2)) + 1j * RNG.standard_normal((2, 3, 2, 2)))

    def grads(lib):
        inputs = [to_lib(lib, a).requires_grad_() for a in (x, w)]
        if transposed:
            y = F(lib).conv_transpose2d(*inputs, stride=2)
        else:
            y = F(lib).conv2d(inputs[0], inputs[1].transpose(0, 1), padding=1)
        seed = lib.full(tuple(y.shape), 0.5 + 0.3j, dtype=y.dtype)
        return list(lib.autograd.grad(y, inputs, seed))
    assert_same(grads(lantern), grads(torch), atol=1e-10)


def test_every_derivative_of_the_module_is_gradchecked_here():
    from lantern.ops.registry import REGISTRY
    declared = {op.name for op in REGISTRY.values() if op.functional is op and op.derivative is not None
                and getattr(op.meta or op.meta_kernel, "__module__", None) in FAMILY_MODULES}
    assert declared == set(RECORDS)
    labels = {case[0] for case in GRAD_CASES}
    assert all(set(names.split()) <= labels for names in RECORDS.values())


def _inputs(lib, shapes, seed):
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        t = to_lib(lib, noncontig(rng.standard_normal(shape)))
        out.append(t.requires_grad_())
    return out


# lantern writes these as composites (index ops, permute and reshape, arithmetic), so their nodes are not torch's
# (ReflectionPad2DBackward0, PixelShuffleBackward0, GridSampler2DBackward0, ...)
OTHER_NODE_NAMES = {"pad_reflect", "pad_replicate", "pad_circular", "pixel_shuffle", "pixel_unshuffle", "affine_grid",
                    "grid_sample_bilinear", "grid_sample_bicubic", "grid_sample_reflection", "grid_sample_nearest"}


def _vjp(lib, fn, shapes, node_name):
    inputs = _inputs(lib, shapes, 1)
    out = fn(lib, *inputs)
    seed = lib.tensor(np.random.default_rng(7).uniform(-1, 1, tuple(out.shape)), dtype=out.dtype)
    grads = lib.autograd.grad(out, inputs, seed)
    return out, type(out.grad_fn).__name__ if node_name else None, list(grads)


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(case):
    name, fn, *shapes = case
    node_name = name not in OTHER_NODE_NAMES
    assert_same(_vjp(lantern, fn, shapes, node_name), _vjp(torch, fn, shapes, node_name), atol=1e-10, rtol=1e-8,
                strides=False)


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(case):
    _, fn, *shapes = case
    inputs = _inputs(lantern, shapes, 3)
    f = lambda *xs: fn(lantern, *xs)  # noqa: E731
    assert lantern.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5)
    assert lantern.autograd.gradgradcheck(f, inputs, eps=1e-6, atol=1e-4)


@pytest.mark.parametrize("pool", [lambda x: lantern.nn.functional.avg_pool2d(x, 2, padding=1),
                                  lambda x: lantern.nn.functional.adaptive_avg_pool2d(x, (3, 2)),
                                  lambda x: lantern.nn.functional.interpolate(x, size=(5, 3), mode="bicubic")])
def test_pool_backward_is_differentiable_in_its_gradient(pool):
    x = lantern.tensor(RNG.standard_normal((1, 1, 4, 4)), requires_grad=True)
    g = lantern.tensor(RNG.standard_normal(tuple(pool(x).shape)), requires_grad=True)
    f = lambda g: lantern.autograd.grad(pool(x), x, g, create_graph=True)[0]  # noqa: E731
    assert lantern.autograd.gradcheck(f, (g,)) and lantern.autograd.gradgradcheck(f, (g,))
