"""Regression tests for the defects torch 2.13's OpInfo samples found (issue 16 item 3), each compared with torch:
values, dtypes, shapes, strides, float64 gradients and error classes.
"""
import re
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import check, noncontig, raises_like, table_tests, to_lib, assert_same

RNG = np.random.default_rng(163)
NAN = float("nan")


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def f64(*shape):
    return RNG.standard_normal(shape)


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


FORWARD = {
    "narrow with a 0-d tensor start": (lambda m, x: (x.narrow(0, m.tensor(2), 3), m.ones(2) + 1), np.arange(6)),
    "cosine_similarity broadcasting": (lambda m, a, b, c, d: (m.nn.functional.cosine_similarity(a, b, dim=0),
                                                              m.nn.functional.cosine_similarity(c, d, dim=1)),
                                       f32(5, 1), f32(1, 4), f32(3, 4), f32(4)),
    "sign and sgn of nan": (lambda m, x: (m.sign(x), m.sgn(x), x.half().sign(), x.bfloat16().sign()),
                            np.array([NAN, -2.0, 0.0, 3.0], np.float32)),
    "softshrink of nan": (lambda m, x: m.nn.functional.softshrink(x, 0.5), np.array([NAN, 1.0, -0.2, -3.0])),
    "tensordot size-1 contracted dims": (lambda m, a, b, c: (m.tensordot(a, b, dims=([0], [0])),
                                                             m.tensordot(c, a, dims=([1], [1]))),
                                         noncontig(f32(2, 3)), f32(1, 4), f32(5, 1)),
    "take_along_dim negative and wrapped indices": (lambda m, x, i: m.take_along_dim(x, i, dim=1),
                                                    noncontig(f32(2, 3)), np.array([[-1, -4], [3, 0]])),
    "adaptive pooling 3d with an empty batch": (lambda m, x: (m.nn.functional.adaptive_avg_pool3d(x, 2),
                                                              m.nn.functional.adaptive_max_pool3d(x, 2)),
                                                np.zeros((0, 2, 4, 4, 4), np.float32)),
    "batched matmul, inv, pinv with an empty dim": (lambda m, a, b, c: (m.matmul(a, b), m.linalg.inv(c),
                                                                         m.linalg.pinv(a)),
                                                    np.zeros((0, 2, 3), np.float32), np.zeros((0, 3, 4), np.float32),
                                                    np.zeros((2, 0, 0), np.float32)),
    "tensor_split with a 0-d tensor": (lambda m, x: (m.tensor_split(x, m.tensor(2)), x.tensor_split(m.tensor(4))),
                                       np.arange(6)),
    "cfloat and cdouble with memory_format": (
        lambda m, x: (x.cfloat(memory_format=m.contiguous_format), x.cdouble(memory_format=m.preserve_format),
                      x.double(memory_format=m.contiguous_format)), f32(2, 3, 4, 5).transpose(0, 2, 3, 1)),
    "native_batch_norm statistics": (
        lambda m, x, rm, rv: (m.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5),
                              m.native_batch_norm(x, None, None, rm.clone(), rv.clone(), True, 0.1, 1e-5)),
        f32(4, 3), f32(3), np.abs(f32(3)) + 0.5),
    "prelu of a 0-d input": (lambda m, x, w: m.nn.functional.prelu(x, w), np.array(-2.0, np.float32),
                             np.array([0.25], np.float32)),
    "avg_pool3d of int64": (lambda m, x: m.nn.functional.avg_pool3d(x, 2), np.arange(16).reshape(1, 1, 2, 2, 4)),
    "sum_to_size of bool": (lambda m, x: ((x > 0).sum_to_size(1, 3), (x > 0).sum_to_size(2, 3),
                                          (x[0, 0] > 0).sum_to_size(())), f32(2, 3)),
    "avg_pool3d of int64 with padding, ceil_mode, divisor_override": (
        lambda m, x: (m.nn.functional.avg_pool3d(x, 2, 1, 1, True, False, 2), m.nn.functional.avg_pool3d(x, 2, 1, 1, True),
                      m.nn.functional.avg_pool3d(x, 3, 1, 1, count_include_pad=False)),
        np.arange(2 * 3 * 4 * 4 * 4).reshape(2, 3, 4, 4, 4) * 7 % 23 - 11),
    "upsample_bilinear2d and bicubic of uint8": (
        lambda m, x: tuple(m.nn.functional.interpolate(x, scale_factor=s, mode=mode, align_corners=a)
                           for mode in ("bilinear", "bicubic") for s in (1.7, 0.6) for a in (False, True)),
        u8(2, 3, 5, 7)),
    "upsample uint8 channels_last": (lambda m, x: m.nn.functional.interpolate(
        x.contiguous(memory_format=m.channels_last), size=(9, 4), mode="bilinear"), u8(1, 3, 6, 6)),
    "masked_fill values that fit": (lambda m, x: (x.masked_fill(x > 100, -1), x.float().masked_fill(x > 100, 1 + 0j)),
                                    u8(5)),
    "out= of masked_select, nonzero, histc, conj_physical": (
        lambda m, x: (m.masked_select(x, x > 0, out=m.empty(0)), m.nonzero(x, out=m.empty(0, dtype=m.int64)),
                      m.histc(x, 4, out=m.empty(0)), m.conj_physical(x, out=m.empty(0))), noncontig(f32(3, 4))),
    "out= of the factories": (
        lambda m: (m.arange(3.0, out=m.empty(0, dtype=m.int64)), m.eye(2, 3, out=m.empty(0)),
                   m.full((2,), 1.5, out=m.empty(0, dtype=m.float64)), m.linspace(0, 1, 5, out=m.empty(0)),
                   m.logspace(0, 2, 3, out=m.empty(0, dtype=m.int64)),
                   m.randperm(4, out=m.empty(0, dtype=m.int64)).sort().values,
                   m.randint(0, 1, (3,), out=m.empty(0)), m.normal(0.0, 0.0, (2,), out=m.empty(0))),),
    "out= of bernoulli": (lambda m, x: (m.bernoulli(x, out=m.empty(0, dtype=m.int64)),
                                        m.bernoulli(x * 0, out=m.empty(0))), np.ones(4, np.float32)),
    "out= is returned and resized": (lambda m, x: (lambda o: (m.masked_select(x, x > 0, out=o) is o, o.shape))(
        m.empty(0)), f32(6)),
    "binary ops that take a number first": (lambda m, x: (m.remainder(7, x), m.bitwise_and(6, x), m.xlogy(2, x.float()),
                                                          m.floor_divide(7, 2), 7 % x, 6 & x, 2 == x, 2 < x),
                                            np.array([1, 2, 3])),
}

ERRORS = {
    "eq with a number first": (lambda m, x: m.eq(2, x), f32(2)),
    "lt with a number first": (lambda m, x: m.lt(2, x), f32(2)),
    "fmod with a number first": (lambda m, x: m.fmod(2, x), f32(2)),
    "bitwise_and of two numbers": (lambda m: m.bitwise_and(2, 3),),
    "remainder of two numbers": (lambda m: m.remainder(2, 3),),
    "max with a number first": (lambda m, x: m.max(2, x), f32(2)),
    "masked_fill with a complex value": (lambda m, x: x.masked_fill(x > 0, 1 + 2j), f32(3)),
    "masked_fill_ with a complex value": (lambda m, x: x.masked_fill_(x > 0, 1 + 2j), f32(3)),
    "masked_fill overflowing uint8": (lambda m, x: x.masked_fill(x > 0, 300), u8(3)),
    "avg_pool3d of int8": (lambda m, x: m.nn.functional.avg_pool3d(x.to(m.int8), 2), np.ones((1, 1, 2, 2, 2))),
    "narrow with a 1-d tensor start": (lambda m, x: x.narrow(0, m.tensor([1, 2]), 1), f32(4)),
    "narrow with a bool tensor start": (lambda m, x: x.narrow(0, m.tensor(True), 1), f32(4)),
    "out= that is the input": (lambda m, x: m.masked_select(x, x > 0, out=x), f32(6)),
    "masked_fill with a complex tensor value": (lambda m, x: x.masked_fill(x > 0, m.tensor(1j)), np.arange(3)),
    "tensor_split with a float tensor": (lambda m, x: m.tensor_split(x, m.tensor(2.0)), np.arange(6)),
    "tensor_split with a 2-d tensor": (lambda m, x: m.tensor_split(x, m.ones(2, 2, dtype=m.int64)), np.arange(6)),
    "tensor_split with a 0-d zero": (lambda m, x: m.tensor_split(x, m.tensor(0)), np.arange(6)),
    "adaptive_avg_pool3d with an empty channel dim": (lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 2),
                                                      np.zeros((2, 0, 4, 4, 4), np.float32)),
    "upsample_linear1d of uint8": (lambda m, x: m.nn.functional.interpolate(x, scale_factor=2, mode="linear"),
                                   u8(1, 2, 4)),
    "upsample_trilinear3d of uint8": (lambda m, x: m.nn.functional.interpolate(x, scale_factor=2, mode="trilinear"),
                                      u8(1, 1, 2, 2, 2)),
    "out= dtype of masked_select": (lambda m, x: m.masked_select(x, x > 0, out=m.empty(0, dtype=m.int64)), f32(3)),
    "out= dtype of nonzero": (lambda m, x: m.nonzero(x, out=m.empty(0)), f32(3)),
    "out= of a factory with another dtype": (lambda m: m.arange(3, dtype=m.float64, out=m.empty(0)),),
    "out= with an input that requires grad": (lambda m, x: m.masked_select(x.requires_grad_(), x > 0, out=m.empty(0)),
                                              f32(3)),
}

test_forward_matches_torch, test_error_matches_torch = table_tests(FORWARD, ERRORS)


def _grad(lib, fn, arrays):
    xs = [to_lib(lib, a) for a in arrays]
    xs[0].requires_grad_()
    out = fn(lib, *xs)
    out = out[0] if isinstance(out, tuple) else out
    weights = lib.tensor(np.linspace(-1, 2, out.numel()).reshape(tuple(out.shape)), dtype=out.dtype)
    (out * weights).sum().backward()
    return xs[0].grad


GRADIENTS = {
    "max(dim) of 0-d": (lambda m, x: x.max(0), np.array(2.5)),
    "min(dim) of 0-d": (lambda m, x: x.min(0), np.array(2.5)),
    "median(dim) of 0-d": (lambda m, x: x.median(0), np.array(2.5)),
    "nanmedian(dim) of 0-d": (lambda m, x: x.nanmedian(0), np.array(2.5)),
    "mode(dim) of 0-d": (lambda m, x: x.mode(0), np.array(2.5)),
    "kthvalue of 0-d": (lambda m, x: x.kthvalue(1, 0), np.array(2.5)),
    "cummax of 0-d": (lambda m, x: x.cummax(0), np.array(2.5)),
    "cummin of 0-d": (lambda m, x: x.cummin(0), np.array(2.5)),
    "unfold of 0-d": (lambda m, x: x.unfold(0, 1, 2), np.array(2.5)),
    "linalg.norm at zero": (lambda m, x: (m.linalg.norm(x) + m.linalg.norm(x, dim=1).sum() + x.norm()
                                          + m.linalg.norm(x, "fro")), np.zeros((2, 3))),
    "as_strided with overlapping strides": (lambda m, x: x.as_strided((3, 2), (1, 1), 1), noncontig(f64(5))),
    "as_strided with stride 0": (lambda m, x: x.as_strided((2, 3), (0, 2)), f64(6)),
    "pow of a number base 0": (lambda m, x: m.pow(0, x) + m.pow(0.0, x), np.array([-1.5, -1.0, 0.0, 2.0])),
    "pow of a number base 2": (lambda m, x: m.pow(2, x), np.array([-1.5, 0.0, 2.0])),
    "softshrink at nan": (lambda m, x: m.nn.functional.softshrink(x), np.array([NAN, 1.0, 0.2])),
    "prelu of a 0-d input": (lambda m, x, w: m.nn.functional.prelu(x, w), np.array(-2.0), np.array([0.25])),
    "tensordot with a size-1 contracted dim": (lambda m, a, b: m.tensordot(a, b, dims=([0], [0])),
                                               noncontig(f64(1, 3)), f64(4, 2)),
    "cosine_similarity broadcasting": (lambda m, a, b: m.nn.functional.cosine_similarity(a, b, dim=0), f64(5, 1),
                                       f64(1, 4)),
    "take_along_dim negative indices": (lambda m, x, i: m.take_along_dim(x, i, dim=1), f64(2, 3),
                                        np.array([[-1], [-3]])),
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradients_match_torch(name):
    fn, *arrays = GRADIENTS[name]
    assert_same(_grad(lantern, fn, arrays), _grad(torch, fn, arrays), atol=1e-6, rtol=1e-6, strides=False)


def test_overlapping_as_strided_second_order():
    """The overlapping as_strided gradient (a scatter-add over storage positions) is differentiable again."""
    x = lantern.randn(5, dtype=lantern.float64, requires_grad=True)
    fn = lambda x: x.as_strided((3, 2), (1, 1), 1) ** 2  # noqa: E731
    assert lantern.autograd.gradcheck(fn, (x,))
    assert lantern.autograd.gradgradcheck(fn, (x,))


def test_narrow_with_a_tensor_start_keeps_later_ops_working():
    """The size of narrow's result is made of ints, and later allocations still work."""
    y = lantern.arange(6).narrow(0, lantern.tensor(1), 2)
    assert all(type(s) is int for s in y.shape) and all(type(s) is int for s in y.stride())
    assert lantern.ones(3).sum().item() == 3.0


def test_binary_number_first_messages():
    """The refusals name the op and what it got, as torch's argument parser does."""
    _, mine = raises_like(lambda m, x: m.eq(2, x), f32(2), match=r"eq\(\) received an invalid combination")
    assert "(int, Tensor)" in mine


def test_uint8_upsampling_rounds_each_pass():
    """Fixed-point passes along W then H: values agree with torch's exactly over many sizes."""
    for size in ((3, 11), (8, 2), (1, 5)):
        for mode in ("bilinear", "bicubic"):
            check(lambda m, x: m.nn.functional.interpolate(x, size=size, mode=mode), u8(1, 2, 4, 6))


def test_out_forms_exist_where_torch_has_them():
    """The functions this change gave out= (generated from torch: every one whose docstring shows out=)."""
    import inspect
    for name in ("masked_select", "bernoulli", "nonzero", "histc", "conj_physical", "arange", "eye", "full",
                 "linspace", "logspace", "randperm", "randint", "normal"):
        assert re.search(r"\bout\b", getattr(torch, name).__doc__.strip().splitlines()[0]), name
        assert "out" in inspect.signature(getattr(lantern, name)).parameters, name


def test_native_batch_norm_in_evaluation_still_differentiates():
    def run(m):
        x = m.tensor(f64(4, 3), requires_grad=True)
        out, mean, invstd = m.native_batch_norm(x, None, None, m.zeros(3, dtype=m.float64),
                                                m.ones(3, dtype=m.float64), False, 0.1, 1e-5)
        (out * m.arange(12.0, dtype=m.float64).view(4, 3)).sum().backward()
        return x.grad, mean.requires_grad
    assert_same(run(lantern), run(torch))


def test_masked_fill_uint8_wraps_negative_numbers():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(lambda m, x: x.masked_fill(x > 100, -1), u8(6))
