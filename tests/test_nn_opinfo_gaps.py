"""Regression cases for the nn.functional OpInfo samples lantern used to fail: each forward case runs on torch and
lantern and compares (values, dtypes, shapes, strides); each error case must raise torch's exception class.
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, noncontig, table_tests

RNG = np.random.default_rng(7)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def crandn(*shape):
    return (randn(*shape) + 1j * randn(*shape)).astype(np.complex64)


def uniform9(seed, *shape):
    """Values in [-9, 9] (as torch's make_tensor draws them): sums large enough that summation order shows."""
    return np.random.default_rng(seed).uniform(-9, 9, shape).astype(np.float32)


FORWARD = {
    # a stride-1 conv_transpose3d summed as a correlation rounded away from torch's GEMM + col2vol by > tolerance
    "conv_transpose3d_float32_sums_in_torch_order": (lambda m, x, w: m.nn.functional.conv_transpose3d(x, w),
                                                     uniform9(0, 1, 4, 5, 5, 5), uniform9(1, 4, 8, 3, 3, 3)),
    # torch computes a complex convolution as three real ones (Gauss's trick); one complex product rounds otherwise
    "conv2d_complex_as_three_real_convolutions": (
        lambda m, x, w: m.nn.functional.conv2d(x, w, groups=4),
        (uniform9(0, 1, 4, 6, 6) + 1j * uniform9(1, 1, 4, 6, 6)).astype(np.complex64),
        (uniform9(2, 8, 1, 3, 3) + 1j * uniform9(3, 8, 1, 3, 3)).astype(np.complex64)),
    # int64 average pooling truncates toward zero, also with a negative divisor_override
    "avg_pool2d_int64_negative_divisor": (
        lambda m, x: m.nn.functional.avg_pool2d(x, (2, 2), divisor_override=-2),
        np.arange(-8, 8).reshape(1, 1, 4, 4) * 3),
    "adaptive_avg_pool3d_none_keeps_size": (
        lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, (None, 2, None)), randn(2, 3, 4, 5)),
    "silu_complex": (lambda m, x: m.nn.functional.silu(x), noncontig(crandn(3, 4))),
    "silu_complex_overflow": (lambda m, x: m.nn.functional.silu(x),
                              np.array([-100 + 0j, 100 + 1e-3j, 3.14159265j], dtype=np.complex64)),
    "native_layer_norm_statistics_carry_no_gradient": (
        lambda m, x, w: m.native_layer_norm(x.requires_grad_(), [4], w, None, 1e-5), randn(3, 4), randn(4)),
    "native_group_norm": (lambda m, x, w, b: m.native_group_norm(x, w, b, 2, 6, 3, 2, 1e-5),
                          randn(2, 6, 3), randn(6), randn(6)),
    "native_group_norm_negative_eps": (lambda m, x: m.native_group_norm(x, None, None, 2, 6, 3, 2, -0.5),
                                       randn(2, 6, 3, dtype=np.float64)),
    "native_group_norm_channels_last": (
        lambda m, x: m.native_group_norm(x.contiguous(memory_format=m.channels_last), None, None, 2, 4, 6, 2, 1e-5),
        randn(2, 4, 2, 3)),
    "native_group_norm_empty_batch": (lambda m, x: m.native_group_norm(x, None, None, 0, 2, 1, 1, 1e-5),
                                      randn(0, 2)),
    "torch_bilinear": (lambda m, x1, x2, w, b: m.bilinear(x1, x2, w, b), randn(4, 3), randn(4, 2), randn(5, 3, 2),
                       randn(5)),
    "grid_sample_5d_bilinear_reflection": (
        lambda m, x, g: m.nn.functional.grid_sample(x, g, padding_mode="reflection", align_corners=False),
        randn(2, 3, 4, 5, 6), 1.3 * randn(2, 3, 2, 4, 3)),
    "grid_sample_5d_nearest_border": (
        lambda m, x, g: m.nn.functional.grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True),
        randn(1, 2, 3, 4, 5), 1.3 * randn(1, 2, 3, 4, 3)),
    "grid_sampler_2d_bicubic": (lambda m, x, g: m.grid_sampler_2d(x, g, 2, 1, False), randn(2, 3, 5, 6),
                                1.2 * randn(2, 4, 3, 2)),
    "grid_sampler_3d_zeros": (lambda m, x, g: m.grid_sampler_3d(x, g, 0, 0, True), randn(2, 3, 4, 5, 6),
                              1.2 * randn(2, 3, 2, 4, 3)),
    "grid_sampler_dispatches_on_dims": (lambda m, x, g: m.grid_sampler(x, g, 1, 2, False), randn(1, 2, 3, 4, 5),
                                        randn(1, 2, 2, 2, 3)),
    "linear_cross_entropy_k_dimensional": (
        lambda m, x, w, t, b: m.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b, label_smoothing=0.1),
        randn(4, 3), randn(2, 5, 3), RNG.integers(0, 2, (4, 5)), randn(2, 5)),
    "linear_cross_entropy_chunked_weighted_mean": (
        lambda m, x, w, t, cw: m.nn.functional.linear_cross_entropy(
            x, w, t, weight=cw, ignore_index=1, options=m.nn.LinearCrossEntropyOptions(batch_chunk_size=3)),
        randn(8, 3), randn(4, 3), RNG.integers(0, 4, 8), np.abs(randn(4))),
    "linear_cross_entropy_chunked_unbatched_none": (
        lambda m, x, w, t: m.nn.functional.linear_cross_entropy(
            x, w, t, reduction="none", options=m.nn.LinearCrossEntropyOptions(batch_chunk_size=2)),
        randn(3), randn(4, 3), np.array(2)),
    "linear_cross_entropy_probabilities": (
        lambda m, x, w, t: m.nn.functional.linear_cross_entropy(x, w, t, reduction="sum"),
        randn(8, 3), randn(4, 3), np.abs(randn(8, 4))),
}

ERRORS = {
    "avg_pool1d_negative_padding": (lambda m, x: m.nn.functional.avg_pool1d(x, 2, 50, -1), randn(0, 1, 49)),
    "max_pool1d_negative_padding": (lambda m, x: m.nn.functional.max_pool1d(x, 2, 50, -1), randn(0, 1, 49)),
    "max_pool2d_negative_padding": (lambda m, x: m.nn.functional.max_pool2d(x, 2, 1, -1), randn(1, 1, 4, 4)),
    "adaptive_avg_pool3d_input_too_small": (lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, (2, 2, 2)),
                                            randn(2, 2, 2)),
    "adaptive_avg_pool3d_empty_output_size": (lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, ()),
                                              randn(1, 2, 3, 4)),
    "adaptive_max_pool3d_one_output_size": (lambda m, x: m.nn.functional.adaptive_max_pool3d(x, (1,)),
                                            randn(1, 2, 3, 4)),
    "adaptive_avg_pool2d_one_output_size": (lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, (2,)),
                                            randn(1, 2, 3, 4)),
    "rrelu_lower_above_upper": (lambda m, x: m.nn.functional.rrelu(x, 0.3, 0.1), randn(5, 5)),
    "multilabel_margin_loss_bad_reduction": (
        lambda m, x, y: m.nn.functional.multilabel_margin_loss(x, y, reduction="abc"), randn(5, 4), randn(5, 4)),
    "multilabel_margin_loss_empty_vector": (
        lambda m, x, y: m.nn.functional.multilabel_margin_loss(x, y), randn(0), np.zeros(0, np.int64)),
    "multilabel_margin_loss_empty_classes": (
        lambda m, x, y: m.nn.functional.multilabel_margin_loss(x, y), randn(5, 0), np.zeros((5, 4), np.int64)),
    "silu_complex_requires_grad": (lambda m, x: m.nn.functional.silu(x.requires_grad_()), crandn(3)),
    "native_group_norm_groups_do_not_divide": (
        lambda m, x: m.native_group_norm(x, None, None, 2, 6, 3, 4, 1e-5), randn(2, 6, 3)),
    "native_group_norm_no_groups": (lambda m, x: m.native_group_norm(x, None, None, 2, 6, 3, 0, 1e-5), randn(2, 6, 3)),
    "native_group_norm_wrong_numel": (lambda m, x: m.native_group_norm(x, None, None, 2, 6, 4, 2, 1e-5),
                                      randn(2, 6, 3)),
    "native_group_norm_weight_size": (lambda m, x, w: m.native_group_norm(x, w, None, 2, 6, 3, 2, 1e-5),
                                      randn(2, 6, 3), randn(5)),
    "native_group_norm_non_contiguous": (lambda m, x: m.native_group_norm(x, None, None, 2, 6, 3, 2, 1e-5),
                                         noncontig(randn(2, 6, 3))),
    "native_group_norm_integer": (lambda m, x: m.native_group_norm(x, None, None, 2, 6, 3, 2, 1e-5),
                                  np.ones((2, 6, 3), np.int64)),
    "grid_sample_grid_of_other_dims": (lambda m, x, g: m.nn.functional.grid_sample(x, g, align_corners=False),
                                       randn(1, 1, 2, 2), randn(1, 2, 2, 2, 3)),
    "grid_sample_5d_grid_last_dim": (lambda m, x, g: m.nn.functional.grid_sample(x, g, align_corners=False),
                                     randn(1, 1, 2, 2, 2), randn(1, 2, 2, 2, 2)),
    "grid_sample_5d_bicubic": (lambda m, x, g: m.nn.functional.grid_sample(x, g, "bicubic", align_corners=False),
                               randn(1, 1, 2, 2, 2), randn(1, 2, 2, 2, 3)),
    "grid_sample_empty_spatial_dim": (lambda m, x, g: m.nn.functional.grid_sample(x, g, align_corners=False),
                                      randn(1, 1, 0, 2, 2), randn(1, 2, 2, 2, 3)),
    "grid_sampler_2d_of_5d_input": (lambda m, x, g: m.grid_sampler_2d(x, g, 0, 0, False), randn(1, 1, 2, 2, 2),
                                    randn(1, 2, 2, 2, 3)),
    "grid_sampler_3d_of_4d_input": (lambda m, x, g: m.grid_sampler_3d(x, g, 0, 0, False), randn(1, 1, 2, 2),
                                    randn(1, 2, 2, 2)),
    "grid_sampler_2d_integer": (lambda m, x, g: m.grid_sampler_2d(x, g, 0, 0, False),
                                np.ones((1, 1, 2, 2), np.int64), np.zeros((1, 2, 2, 2), np.int64)),
    "linear_cross_entropy_3d_input": (lambda m, x, w, t: m.nn.functional.linear_cross_entropy(x, w, t),
                                      randn(2, 3, 3), randn(2, 3), RNG.integers(0, 2, (3, 2))),
    "linear_cross_entropy_in_features": (lambda m, x, w, t: m.nn.functional.linear_cross_entropy(x, w, t),
                                         randn(2, 3), randn(2, 4), RNG.integers(0, 2, 2)),
    "linear_cross_entropy_ignore_index_with_probabilities": (
        lambda m, x, w, t: m.nn.functional.linear_cross_entropy(x, w, t, ignore_index=0),
        randn(2, 3), randn(2, 3), np.abs(randn(2, 2))),
    "linear_cross_entropy_k_dim_unbatched": (lambda m, x, w, t: m.nn.functional.linear_cross_entropy(x, w, t),
                                             randn(3), randn(2, 4, 3), RNG.integers(0, 2, 4)),
    "linear_cross_entropy_bias_shape": (
        lambda m, x, w, t, b: m.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b),
        randn(2, 3), randn(2, 3), RNG.integers(0, 2, 2), randn(3)),
    "linear_cross_entropy_options_chunk_size": (lambda m: m.nn.LinearCrossEntropyOptions(batch_chunk_size=0),),
    "linear_cross_entropy_options_acc_policy": (lambda m: m.nn.LinearCrossEntropyOptions(acc_policy="fast"),),
    "linear_cross_entropy_options_chunking_method": (
        lambda m: m.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:0"),),
    "linear_cross_entropy_loss_weight_shape": (lambda m, w: m.nn.LinearCrossEntropyLoss(3, 4, weight=w), randn(3)),
}

test_forward_matches_torch, test_error_matches_torch = table_tests(FORWARD, ERRORS)


def test_native_group_norm_gradients_flow_through_all_three_outputs():
    """torch differentiates native_group_norm's mean and rstd as well as its output."""
    x, w, b = randn(2, 6, 3, dtype=np.float64), randn(6, dtype=np.float64), randn(6, dtype=np.float64)
    weights = [randn(2, 6, 3, dtype=np.float64), randn(2, 2, dtype=np.float64), randn(2, 2, dtype=np.float64)]
    grads = []
    for lib in (torch, lantern):
        leaves = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        outputs = lib.native_group_norm(*leaves, 2, 6, 3, 2, 1e-5)
        sum((o * lib.tensor(v)).sum() for o, v in zip(outputs, weights)).backward()
        grads.append([leaf.grad for leaf in leaves])
    assert_same(grads[1], grads[0])


def test_grid_sample_5d_gradients_match_torch():
    """Both the input's and the grid's gradients of a trilinear 5-D grid_sample, against torch's."""
    x, g = randn(1, 2, 3, 4, 5, dtype=np.float64), 1.2 * randn(1, 2, 3, 2, 3).astype(np.float64)
    weight = randn(1, 2, 2, 3, 2, dtype=np.float64)
    grads = []
    for lib in (torch, lantern):
        leaves = [lib.tensor(a, requires_grad=True) for a in (x, g)]
        out = lib.nn.functional.grid_sample(*leaves, padding_mode="border", align_corners=False)
        (out * lib.tensor(weight)).sum().backward()
        grads.append([leaf.grad for leaf in leaves])
    assert_same(grads[1], grads[0])


def test_linear_cross_entropy_loss_module_matches_torch():
    """nn.LinearCrossEntropyLoss: the same flat parameters (state_dict keys and shapes), loss and gradients."""
    torch.manual_seed(0)
    theirs = torch.nn.LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True, label_smoothing=0.2)
    mine = lantern.nn.LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True, label_smoothing=0.2)
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    mine.load_state_dict({k: lantern.tensor(v) for k, v in state.items()})
    x, target = randn(5, 3), RNG.integers(0, 4, (5, 2))
    losses = [module(lib.tensor(x), lib.tensor(target)) for module, lib in ((theirs, torch), (mine, lantern))]
    for loss in losses:
        loss.backward()
    assert_same(losses[1], losses[0])
    assert_same(mine.linear.weight.grad, theirs.linear.weight.grad)
    assert repr(mine) == repr(theirs)


def test_linear_cross_entropy_warns_when_options_cannot_chunk():
    """Label smoothing is not on the chunked path: the options are ignored with torch's warning."""
    x, w, t = lantern.ones(2, 3), lantern.ones(4, 3), lantern.tensor([0, 1])
    with pytest.warns(UserWarning, match="options.. ignored"):
        lantern.nn.functional.linear_cross_entropy(x, w, t, label_smoothing=0.1,
                                                   options=lantern.nn.LinearCrossEntropyOptions())


def test_complex_conv2d_gradients_match_torch():
    """The three real convolutions carry the complex input's, weight's and bias's gradients (complex128)."""
    x = randn(2, 3, 5, 5, dtype=np.float64) + 1j * randn(2, 3, 5, 5, dtype=np.float64)
    w = randn(4, 3, 3, 3, dtype=np.float64) + 1j * randn(4, 3, 3, 3, dtype=np.float64)
    b = randn(4, dtype=np.float64) + 1j * randn(4, dtype=np.float64)
    g = randn(2, 4, 5, 5, dtype=np.float64) + 1j * randn(2, 4, 5, 5, dtype=np.float64)
    grads = []
    for lib in (torch, lantern):
        leaves = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = lib.nn.functional.conv2d(*leaves, padding=1)
        assert type(out.grad_fn).__name__ == "AddBackward0"  # a - b + i (c - a - b), as torch builds it
        (out * lib.tensor(g)).real.sum().backward()
        grads.append([leaf.grad for leaf in leaves])
    assert_same(grads[1], grads[0])


def test_sweep_translator_converts_stateless_modules_and_settings_records():
    """The OpInfo sweep passes nn.PairwiseDistance() and nn.LinearCrossEntropyOptions(...) arguments over to
    lantern's classes of the same torch.nn name, with the same settings; a module holding parameters is refused."""
    from opinfo_sweep import Missing, Translator
    translator = Translator()
    distance = translator.value(torch.nn.PairwiseDistance(p=1.0, keepdim=True))
    assert type(distance) is lantern.nn.PairwiseDistance
    assert (distance.norm, distance.keepdim) == (1.0, True)
    options = translator.value(torch.nn.LinearCrossEntropyOptions(batch_chunk_size=3, acc_dtype=torch.float32))
    assert options == lantern.nn.LinearCrossEntropyOptions(batch_chunk_size=3, acc_dtype=lantern.float32)
    with pytest.raises(Missing, match="holding parameters"):
        translator.value(torch.nn.Linear(2, 2))
