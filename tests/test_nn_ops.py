"""nn.functional activations, softmax family, linear and losses against torch: values, dtypes, strides, in-place and
out= forms, error classes; gradients against torch's, gradcheck and gradgradcheck in float64 on non-contiguous
inputs.
"""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import lantern
import lantern.nn.functional as LF
from oracle import assert_same, check, matches_torch, noncontig, raises_like
from test_autograd_gradcheck_ops import (
    Case, assert_gradcheck_and_gradgradcheck, assert_gradients_match_torch, aten, uniform, vjp,
)

RNG = np.random.default_rng(42)


def F(m):
    return TF if m is torch else LF


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def private(m, name):
    """torch.<name>, or lantern's op of that name (lantern binds no underscore names at top level)."""
    if m is torch:
        return getattr(torch, name)
    op = lantern.ops.registry.get(name)
    return lambda *args: lantern.ops.dispatcher.call(op, args)


def probabilities(*shape):
    return RNG.uniform(0.05, 0.95, size=shape)


def classes(values):
    return np.asarray(values, dtype=np.int64)


# ---- forward values ----------------------------------------------------------------------------------------

ACTIVATIONS = {
    "relu": lambda m, x: F(m).relu(x),
    "gelu": lambda m, x: F(m).gelu(x),
    "gelu_tanh": lambda m, x: F(m).gelu(x, approximate="tanh"),
    "silu": lambda m, x: F(m).silu(x),
    "leaky_relu": lambda m, x: F(m).leaky_relu(x, 0.2),
    "elu": lambda m, x: F(m).elu(x, alpha=0.7),
    "selu": lambda m, x: F(m).selu(x),
    "celu": lambda m, x: F(m).celu(x, alpha=1.5),
    "softplus": lambda m, x: F(m).softplus(x, beta=2, threshold=3),
    "softsign": lambda m, x: F(m).softsign(x),
    "hardtanh": lambda m, x: F(m).hardtanh(x, -0.5, 0.8),
    "relu6": lambda m, x: F(m).relu6(x * 4),
    "hardsigmoid": lambda m, x: F(m).hardsigmoid(x * 4),
    "hardswish": lambda m, x: F(m).hardswish(x * 4),
    "mish": lambda m, x: F(m).mish(x),
    "tanhshrink": lambda m, x: F(m).tanhshrink(x),
    "softshrink": lambda m, x: F(m).softshrink(x, 0.4),
    "hardshrink": lambda m, x: F(m).hardshrink(x, 0.4),
    "threshold": lambda m, x: F(m).threshold(x, 0.1, -3.0),
    "logsigmoid": lambda m, x: F(m).logsigmoid(x),
    "glu": lambda m, x: F(m).glu(x, 1),
    "softmax": lambda m, x: F(m).softmax(x, 1),
    "log_softmax": lambda m, x: F(m).log_softmax(x, 0),
    "softmin": lambda m, x: F(m).softmin(x, -1),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_matches_torch(name, dtype):
    check(ACTIVATIONS[name], noncontig(randn(3, 4, dtype=dtype) * 3), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["relu", "softmax", "gelu", "logsigmoid", "softplus"])
def test_activation_bfloat16_and_extremes(name):
    check(lambda m, x: ACTIVATIONS[name](m, x.to(m.bfloat16)), randn(2, 4))
    check(ACTIVATIONS[name], np.array([[-1e4, -50.0, 0.0, 50.0, 1e4, np.inf, -np.inf, np.nan]]))


@pytest.mark.parametrize("fn", [
    lambda m, x: F(m).relu(x, inplace=True), lambda m, x: m.relu_(x), lambda m, x: x.relu_(),
    lambda m, x: F(m).leaky_relu(x, 0.1, inplace=True), lambda m, x: F(m).elu(x, inplace=True),
    lambda m, x: F(m).selu(x, inplace=True), lambda m, x: F(m).celu(x, inplace=True),
    lambda m, x: F(m).hardtanh(x, inplace=True), lambda m, x: F(m).relu6(x, inplace=True),
    lambda m, x: F(m).threshold(x, 0.5, 2.0, inplace=True), lambda m, x: F(m).silu(x, inplace=True),
    lambda m, x: F(m).hardswish(x, inplace=True), lambda m, x: F(m).hardsigmoid(x, inplace=True),
    lambda m, x: F(m).mish(x, inplace=True),
])
def test_inplace_forms_write_into_the_input(fn):
    def run(m, x):
        y = fn(m, x)
        return y, x, y.data_ptr() == x.data_ptr()
    check(run, noncontig(randn(3, 4)))


def test_top_level_and_method_bindings():
    x = noncontig(randn(3, 4))
    check(lambda m, x: (m.relu(x), x.relu(), m.softmax(x, 1), x.softmax(0), x.log_softmax(-1),
                        m.log_softmax(x, 1, dtype=m.float64), m.selu(x), m.celu(x), m.threshold(x, 0.0, 1.0),
                        m.hardshrink(x, 0.3), x.hardshrink()), x)
    check(lambda m, x: (m.relu(x.to(m.int64)), F(m).hardtanh(x.to(m.int64)), m.threshold(x.to(m.int32), 0, 5)),
          x * 3)


def test_out_variants():
    check(lambda m, x: m.softmax(x, 1, out=m.empty(0)) if m is torch else
          lantern.ops.dispatcher.call(lantern.ops.registry.get("softmax.out"), (x, 1, None, m.empty(0))),
          noncontig(randn(2, 3)))


def test_softmax_dtype_and_shapes():
    x = noncontig(randn(2, 3, 4))
    check(lambda m, x: F(m).softmax(x.half(), 2, dtype=m.float32), x)
    check(lambda m, x: F(m).log_softmax(x, 1, dtype=m.float64), x)
    check(lambda m, x: F(m).softmax(x, 0), np.array(2.5, np.float32))
    check(lambda m, x: F(m).log_softmax(x, 1), np.zeros((2, 0, 3), np.float32))
    check(lambda m, x: F(m).softmax(x, 1), np.array([[1000.0, 1001.0, -1000.0]], np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda m, x: F(m).softmax(x), x)
        check(lambda m, x: F(m).log_softmax(x), x[0])


@pytest.mark.parametrize("fn", [
    lambda m, x: F(m).gelu(x.long()), lambda m, x: F(m).silu(x.long()), lambda m, x: F(m).softmax(x.long(), 0),
    lambda m, x: F(m).softmax(x, 2), lambda m, x: F(m).glu(x[:, :3], 1), lambda m, x: F(m).glu(x[0, 0], 0),
    lambda m, x: F(m).softshrink(x, -1.0), lambda m, x: F(m).gelu(x, approximate="fast"),
    lambda m, x: F(m).elu(x.int()), lambda m, x: F(m).hardtanh(x, 2.0, 1.0), lambda m, x: F(m).relu(x.bool()),
    lambda m, x: F(m).linear(x, x[:, :3]), lambda m, x: F(m).relu("x"),
])
def test_activation_errors_match_torch(fn):
    raises_like(fn, randn(2, 4))


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    x, w, b = noncontig(randn(2, 3, 4)), noncontig(randn(5, 4)), randn(5)
    check(lambda m, x, w, b: F(m).linear(x, w, b if bias else None), x, w, b, atol=1e-5)
    check(lambda m, x, w: F(m).linear(x, w[0]), x, w)
    check(lambda m, x, w, b: F(m).linear(x[0], w, b if bias else None), x, w, b, atol=1e-5)


# ---- losses ------------------------------------------------------------------------------------------------

LOGITS = noncontig(randn(4, 5))
TARGETS = classes([1, 0, 4, 2])
WEIGHT = np.array([0.5, 1.0, 2.0, 1.5, 0.7], np.float32)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.2}, {"ignore_index": 0}, {"weight": True},
                                {"weight": True, "ignore_index": 4, "label_smoothing": 0.1}])
def test_cross_entropy_with_class_indices(reduction, kw):
    def run(m, x, t, w):
        args = dict(kw, weight=w if kw.get("weight") else None)
        return F(m).cross_entropy(x, t, reduction=reduction, **args)
    check(run, LOGITS, TARGETS, WEIGHT)
    spatial = noncontig(randn(2, 5, 3, 2))
    check(run, spatial, RNG.integers(0, 5, (2, 3, 2)), WEIGHT)
    check(run, LOGITS[0], np.asarray(TARGETS[2]), WEIGHT)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.3}, {"weight": True}])
def test_cross_entropy_with_probabilities(reduction, kw):
    def run(m, x, t, w):
        args = dict(kw, weight=w if kw.get("weight") else None)
        return F(m).cross_entropy(x, t.softmax(1), reduction=reduction, **args)
    check(run, LOGITS, randn(4, 5), WEIGHT)
    check(run, noncontig(randn(2, 5, 3)), randn(2, 5, 3), WEIGHT)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    check(lambda m, x, t, w: F(m).nll_loss(x.log_softmax(1), t, w, reduction=reduction, ignore_index=2),
          LOGITS, TARGETS, WEIGHT)
    check(lambda m, x, t: F(m).nll_loss(x, t, reduction=reduction), noncontig(randn(2, 5, 2, 3)),
          RNG.integers(0, 5, (2, 2, 3)))
    check(lambda m, x, t: F(m).nll_loss(x, t, reduction=reduction), LOGITS, np.full(4, -100, np.int64))
    check(lambda m, x, t: F(m).nll_loss(x.double(), t, size_average=False), LOGITS, TARGETS)


@pytest.mark.parametrize("fn", [
    lambda m, x, t: F(m).cross_entropy(x, t[:2]), lambda m, x, t: F(m).cross_entropy(x, t.int()),
    lambda m, x, t: F(m).cross_entropy(x, t + 5), lambda m, x, t: F(m).nll_loss(x, t, m.ones(3)),
    lambda m, x, t: F(m).nll_loss(x[0, 0], t[0]), lambda m, x, t: F(m).cross_entropy(x, x.long()),
    lambda m, x, t: F(m).cross_entropy(x, t, reduction="avg"),
    lambda m, x, t: F(m).cross_entropy(x, t, label_smoothing=1.5),
])
def test_classification_loss_errors(fn):
    raises_like(fn, LOGITS, TARGETS)


PAIR_LOSSES = {
    "mse": lambda m, x, y, r: F(m).mse_loss(x, y, reduction=r),
    "l1": lambda m, x, y, r: F(m).l1_loss(x, y, reduction=r),
    "smooth_l1": lambda m, x, y, r: F(m).smooth_l1_loss(x, y, reduction=r, beta=0.5),
    "smooth_l1_beta0": lambda m, x, y, r: F(m).smooth_l1_loss(x, y, reduction=r, beta=0.0),
    "huber": lambda m, x, y, r: F(m).huber_loss(x, y, reduction=r, delta=0.7),
    "bce": lambda m, x, y, r: F(m).binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction=r),
    "bce_weight": lambda m, x, y, r: F(m).binary_cross_entropy(x.sigmoid(), y.sigmoid(), y[0].abs(), reduction=r),
    "bce_logits": lambda m, x, y, r: F(m).binary_cross_entropy_with_logits(x * 30, y.sigmoid(), reduction=r),
    "bce_logits_weights": lambda m, x, y, r: F(m).binary_cross_entropy_with_logits(
        x, y.sigmoid(), y[:1].abs(), pos_weight=y[0].abs() + 1, reduction=r),
    "kl_div": lambda m, x, y, r: F(m).kl_div(x.log_softmax(1), y.softmax(1), reduction=r),
    "kl_div_log_target": lambda m, x, y, r: F(m).kl_div(x.log_softmax(1), y.log_softmax(1), reduction=r,
                                                        log_target=True),
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", list(PAIR_LOSSES))
def test_pair_losses(name, reduction):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda m, x, y: PAIR_LOSSES[name](m, x, y, reduction), noncontig(randn(3, 4)), randn(3, 4))
        check(lambda m, x, y: PAIR_LOSSES[name](m, x.double(), y.double(), reduction), noncontig(randn(2, 3)),
              randn(2, 3))


def test_kl_div_batchmean_and_zero_targets():
    check(lambda m, x, y: F(m).kl_div(x.log_softmax(1), y, reduction="batchmean"), randn(3, 4),
          np.array([[0.0, 0.5, 0.5, 0.0]] * 3, np.float32))


def test_loss_warnings_and_errors():
    x, y = randn(3), randn(2, 3)
    with pytest.warns(UserWarning):
        check(lambda m, x, y: F(m).mse_loss(x, y), x, y)
    for fn in (lambda m, x, y: F(m).binary_cross_entropy(x.sigmoid(), y.sigmoid()),
               lambda m, x, y: F(m).binary_cross_entropy_with_logits(x, y),
               lambda m, x, y: F(m).binary_cross_entropy(x + 2, x),
               lambda m, x, y: F(m).smooth_l1_loss(x, x, beta=-1.0),
               lambda m, x, y: F(m).huber_loss(x, x, delta=0.0),
               lambda m, x, y: F(m).mse_loss(x, x, reduction="avg")):
        raises_like(fn, x, y)


MORE_LOSSES = {
    "poisson": lambda m, x, y, t, r: F(m).poisson_nll_loss(x, y.abs() * 3, reduction=r),
    "poisson_full": lambda m, x, y, t, r: F(m).poisson_nll_loss(x.abs() + 0.1, y.abs() * 3, log_input=False,
                                                                full=True, reduction=r),
    "gaussian": lambda m, x, y, t, r: F(m).gaussian_nll_loss(x, y, x.abs() * 0 + y.abs(), reduction=r),
    "gaussian_full_row_var": lambda m, x, y, t, r: F(m).gaussian_nll_loss(x, y, y[:, :1].abs() * 0 + 1e-8,
                                                                          full=True, reduction=r),
    "margin_ranking": lambda m, x, y, t, r: F(m).margin_ranking_loss(x, y, t.float(), 0.3, reduction=r),
    "hinge_embedding": lambda m, x, y, t, r: F(m).hinge_embedding_loss(x, t.float(), 0.5, reduction=r),
    "soft_margin": lambda m, x, y, t, r: F(m).soft_margin_loss(x, t.float(), reduction=r),
    "cosine_embedding": lambda m, x, y, t, r: F(m).cosine_embedding_loss(x, y, t[:, 0].float(), 0.2, reduction=r),
    "triplet": lambda m, x, y, t, r: F(m).triplet_margin_loss(x, y, y.flip(0), reduction=r),
    "triplet_swap": lambda m, x, y, t, r: F(m).triplet_margin_loss(x, y, x * 0.5, p=1, swap=True, reduction=r),
    "multilabel_soft_margin": lambda m, x, y, t, r: F(m).multilabel_soft_margin_loss(
        x, (t > 0).float(), y[0].abs(), reduction=r),
    "multi_margin": lambda m, x, y, t, r: F(m).multi_margin_loss(x, (t[:, 0] > 0).long() + 2, reduction=r),
    "multi_margin_p2": lambda m, x, y, t, r: F(m).multi_margin_loss(x, (t[:, 0] > 0).long(), p=2, margin=0.5,
                                                                   weight=y[0].abs(), reduction=r),
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", list(MORE_LOSSES))
def test_more_losses(name, reduction):
    signs = np.where(RNG.uniform(size=(3, 4)) > 0.5, 1, -1).astype(np.int64)
    check(lambda m, x, y, t: MORE_LOSSES[name](m, x, y, t, reduction), noncontig(randn(3, 4)), randn(3, 4), signs)


@pytest.mark.parametrize("fn", [
    lambda m, x, t: F(m).margin_ranking_loss(x, x[0], t), lambda m, x, t: F(m).multi_margin_loss(x, t[:, 0], p=3),
    lambda m, x, t: F(m).multi_margin_loss(x, t[:2, 0]), lambda m, x, t: F(m).gaussian_nll_loss(x, x, x[:2]),
    lambda m, x, t: F(m).gaussian_nll_loss(x, x, -x.abs()), lambda m, x, t: F(m).triplet_margin_loss(x, x, x[0]),
    lambda m, x, t: F(m).gaussian_nll_loss(x, x, x.abs(), reduction="avg"),
    lambda m, x, t: F(m).bilinear(x, x, m.ones(2, 3, 4)), lambda m, x, t: F(m).dropout2d(x[0], 0.5),
])
def test_more_loss_errors(fn):
    raises_like(fn, randn(3, 4), np.ones((3, 4), np.int64))


def test_bilinear_and_multi_margin_unbatched():
    x1, x2, w, b = noncontig(randn(5, 3)), randn(5, 4), randn(2, 3, 4), randn(2)
    check(lambda m, x1, x2, w, b: F(m).bilinear(x1, x2, w, b), x1, x2, w, b, atol=1e-5)
    check(lambda m, x1, x2, w: F(m).bilinear(x1[0], x2[0], w), x1, x2, w, atol=1e-5)
    check(lambda m, x, t: F(m).multi_margin_loss(x, t), randn(4), np.array(2, np.int64))


def test_random_activations_and_dropout_variants():
    x = noncontig(randn(3, 4))
    check(lambda m, x: F(m).rrelu(x), x)
    check(lambda m, x: F(m).alpha_dropout(x, 0.3), x)
    check(lambda m, x: F(m).dropout2d(x, 0.3, training=False), x)
    lantern.manual_seed(1)
    y = LF.rrelu(lantern.tensor(-np.ones(1000, np.float32)), 0.1, 0.3, training=True)
    assert -0.3 <= y.min().item() and y.max().item() <= -0.1 and abs(y.mean().item() + 0.2) < 0.02
    channels = LF.dropout2d(lantern.ones(8, 50, 3, 3), 0.5)
    per_channel = channels.reshape(8, 50, 9)
    assert lantern.equal(per_channel.amax(2), per_channel.amin(2))
    assert set(per_channel.amax(2).reshape(-1).tolist()) == {0.0, 2.0}
    assert LF.dropout1d(lantern.ones(4, 6), 0.5).shape == (4, 6)
    a = LF.alpha_dropout(lantern.randn(20000), 0.2, training=True)
    assert abs(a.mean().item()) < 0.05 and abs(a.std().item() - 1) < 0.05
    g = lantern.randn(4, 5, requires_grad=True)
    soft = LF.gumbel_softmax(g, tau=0.5)
    hard = LF.gumbel_softmax(g, hard=True)
    assert np.allclose(soft.sum(-1).tolist(), 1) and hard.sum(-1).tolist() == [1.0] * 4
    assert set(hard.reshape(-1).tolist()) <= {0.0, 1.0}
    hard.sum().backward()
    assert g.grad.shape == (4, 5)


CTC_LOG_PROBS = np.log(RNG.dirichlet(np.ones(5), size=(6, 3)))
CTC_TARGETS = classes([[1, 2, 2], [3, 1, 0], [4, 4, 4]])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss(reduction):
    matches_torch(lambda m, lp, tg: F(m).ctc_loss(lp, tg, [6, 5, 6], [3, 2, 3], reduction=reduction), CTC_LOG_PROBS,
          CTC_TARGETS)
    matches_torch(lambda m, lp, tg: F(m).ctc_loss(lp.float(), tg.reshape(-1)[:6], m.tensor([6, 5, 6]), m.tensor([3, 2, 1]),
                                          blank=4, reduction=reduction), CTC_LOG_PROBS, CTC_TARGETS)
    matches_torch(lambda m, lp, tg: F(m).ctc_loss(lp[:, 0], tg[0], [6], [3], reduction=reduction), CTC_LOG_PROBS,
          CTC_TARGETS)
    for zero_infinity in (False, True):
        matches_torch(lambda m, lp, tg: F(m).ctc_loss(lp[:2], tg, [2, 2, 2], [3, 2, 3], reduction=reduction,
                                              zero_infinity=zero_infinity), CTC_LOG_PROBS, CTC_TARGETS)
    matches_torch(lambda m, lp, tg: F(m).ctc_loss(lp, tg, 6, 3), CTC_LOG_PROBS, CTC_TARGETS)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss(reduction):
    targets = classes([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 0, 0, 0]])
    matches_torch(lambda m, x, t: F(m).multilabel_margin_loss(x, t, reduction=reduction), noncontig(randn(3, 4)), targets)
    matches_torch(lambda m, x, t: F(m).multilabel_margin_loss(x[0], t[0], reduction=reduction), randn(3, 4), targets)
    matches_torch(lambda m, x, t: F(m).multilabel_margin_loss(x, t[:2]), randn(3, 4), targets)


# ---- normalization, dropout, embedding, distances, attention ----------------------------------------------------

X4 = noncontig(randn(4, 3, 2, 5))


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(affine):
    w, b = randn(2, 5), randn(2, 5)
    matches_torch(lambda m, x, w, b: F(m).layer_norm(x, (2, 5), w if affine else None, b if affine else None, eps=1e-3),
          X4, w, b, atol=1e-5)
    matches_torch(lambda m, x: F(m).layer_norm(x, 5), X4)
    matches_torch(lambda m, x: m.native_layer_norm(x, [5], None, None, 1e-5), X4, atol=1e-5)
    matches_torch(lambda m, x: F(m).layer_norm(x.half(), [5]), X4)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_updates_running_stats(training):
    def run(m, x, w, b):
        rm, rv = m.zeros(3, dtype=m.float64).float() + 0.5, m.ones(3) * 2
        y = F(m).batch_norm(x, rm, rv, w, b, training=training, momentum=0.3, eps=1e-4)
        return y, rm, rv
    check(run, X4, randn(3), randn(3), atol=1e-5)
    check(lambda m, x: F(m).batch_norm(x, None, None, training=True), noncontig(randn(5, 3)), atol=1e-5)


def test_batch_norm_running_stats_may_update_again_before_backward():
    """A module applied twice (siamese nets) updates its running stats twice, then runs backward once."""
    for training in (True, False):
        x = lantern.randn(4, 3, requires_grad=True)
        rm, rv = lantern.zeros(3), lantern.ones(3)
        first = LF.batch_norm(x, rm, rv, training=training)
        second = LF.batch_norm(x * 2, rm, rv, training=training)
        (first + second).sum().backward()
        assert x.grad.shape == (4, 3)


def test_group_and_instance_norm():
    check(lambda m, x, w, b: F(m).group_norm(x, 3, w, b), X4, randn(3), randn(3), atol=1e-5)
    check(lambda m, x: F(m).group_norm(x, 1), X4, atol=1e-5)
    check(lambda m, x, w, b: F(m).instance_norm(x, weight=w, bias=b), X4, randn(3), randn(3), atol=1e-5)

    def with_running(m, x):
        rm, rv = m.zeros(3), m.ones(3)
        return F(m).instance_norm(x, rm, rv, momentum=0.2), rm, rv
    check(with_running, X4, atol=1e-5)
    check(lambda m, x: F(m).instance_norm(x, m.zeros(3), m.ones(3) * 2, use_input_stats=False), X4, atol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda m, x: F(m).layer_norm(x, (3,)), lambda m, x: F(m).layer_norm(x, (5,), m.ones(4)),
    lambda m, x: F(m).layer_norm(x.long(), (5,)),
    lambda m, x: F(m).batch_norm(x, m.zeros(2), m.ones(2)), lambda m, x: F(m).batch_norm(x, None, None),
    lambda m, x: F(m).batch_norm(x[:1, :, :1, :1], None, None, training=True),
    lambda m, x: F(m).batch_norm(x[0, 0, 0], None, None, training=True),
    lambda m, x: F(m).group_norm(x, 2), lambda m, x: F(m).group_norm(x, 3, m.ones(2)),
    lambda m, x: F(m).instance_norm(x[0, 0]), lambda m, x: F(m).prelu(x, m.ones(2)),
    lambda m, x: F(m).prelu(x, m.ones(3, 1)),
])
def test_normalization_errors(fn):
    raises_like(fn, X4)


def test_prelu():
    check(lambda m, x, w: F(m).prelu(x, w), X4, np.array([0.1, -0.2, 0.3], np.float32))
    check(lambda m, x, w: m.prelu(x, w[:1]), X4, np.array([0.25], np.float32))
    check(lambda m, x, w: x.prelu(w[:1]), X4[0, 0, 0], np.array([0.25], np.float32))


def test_normalize_and_distances():
    x, y = noncontig(randn(3, 4)), randn(3, 4)
    check(lambda m, x: F(m).normalize(x), x)
    check(lambda m, x: F(m).normalize(x, p=1.0, dim=0), x)
    check(lambda m, x: F(m).normalize(x * 0), x)
    check(lambda m, x, y: F(m).cosine_similarity(x, y), x, y)
    check(lambda m, x, y: F(m).cosine_similarity(x, y[:1], dim=-1), x, y)
    check(lambda m, x, y: F(m).pairwise_distance(x, y), x, y)
    check(lambda m, x, y: F(m).pairwise_distance(x, y, p=1.0, keepdim=True), x, y)
    check(lambda m, x, y: F(m).pairwise_distance(x, y[0]), x, y)


def test_dropout():
    x = np.ones((200, 50), np.float32)
    matches_torch(lambda m, x: F(m).dropout(x, 0.3, training=False), x)
    matches_torch(lambda m, x: F(m).dropout(x, 0.0), x)
    matches_torch(lambda m, x: F(m).dropout(x, 1.0), x)
    matches_torch(lambda m, x: F(m).dropout(x, 1.5), x)
    lantern.manual_seed(0)
    t = lantern.ones(200, 50, requires_grad=True)
    y = LF.dropout(t, 0.25)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.02
    assert np.allclose(y[kept].detach().numpy(), 1 / 0.75)
    y.sum().backward()
    assert np.array_equal(t.grad.numpy(), y.detach().numpy())
    z = lantern.ones(10)
    assert LF.dropout(z, 0.5, inplace=True) is z
    lantern.manual_seed(3)
    first = LF.dropout(lantern.ones(50), 0.5)
    lantern.manual_seed(3)
    assert lantern.equal(first, LF.dropout(lantern.ones(50), 0.5))


def test_embedding_and_one_hot():
    weight, idx = noncontig(randn(6, 3)), classes([[0, 5, 2], [2, 2, 1]])
    matches_torch(lambda m, i, w: F(m).embedding(i, w), idx, weight)
    matches_torch(lambda m, i, w: F(m).embedding(i, w, padding_idx=-1), idx, weight)
    matches_torch(lambda m, i, w: m.embedding(w, i), idx, weight)
    matches_torch(lambda m, i, w: (F(m).embedding(i, w, max_norm=0.5), w), idx, randn(6, 3))
    matches_torch(lambda m, i, w: F(m).embedding(i + 6, w), idx, weight)
    matches_torch(lambda m, i, w: F(m).embedding(i.float(), w), idx, weight)
    matches_torch(lambda m, i: F(m).one_hot(i), idx)
    matches_torch(lambda m, i: F(m).one_hot(i, 8), idx)
    matches_torch(lambda m, i: F(m).one_hot(i[:0]), idx)
    matches_torch(lambda m, i: F(m).one_hot(i, 3), idx)
    matches_torch(lambda m, i: F(m).one_hot(i - 1), idx)
    matches_torch(lambda m, i: F(m).one_hot(i.int()), idx)


def test_embedding_gradient_skips_padding_and_scales_by_frequency():
    for kw in ({"padding_idx": 2}, {"scale_grad_by_freq": True}):
        def run(m, i, w):
            w = w.clone().requires_grad_()
            (F(m).embedding(i, w, **kw) * m.arange(3.0)).sum().backward()
            return w.grad
        check(run, classes([[0, 5, 2], [2, 2, 1]]), randn(6, 3))


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"scale": 0.3}, {"mask": "bool"}, {"mask": "float"}])
def test_scaled_dot_product_attention(kw):
    q, k, v = noncontig(randn(2, 3, 4, 5)), randn(2, 3, 6, 5), randn(2, 3, 6, 2)
    mask = RNG.uniform(size=(4, 6)) > 0.3
    mask[:, 0] = True

    def run(m, q, k, v, mask):
        args = {key: val for key, val in kw.items() if key != "mask"}
        if kw.get("mask") == "bool":
            args["attn_mask"] = mask
        elif kw.get("mask") == "float":
            args["attn_mask"] = mask.double().float() * 0.5
        return F(m).scaled_dot_product_attention(q, k, v, **args)
    check(run, q, k, v, mask, atol=1e-5)
    check(lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v, dropout_p=1.0), q, k, v)


# ---- gradients ---------------------------------------------------------------------------------------------

def weights(m):
    return m.tensor([0.5, 1.0, 2.0, 1.5, 0.7], dtype=m.float64)


def A(name, fn, sample=uniform, shape=(3, 4), **kw):
    return Case(name, fn, sample(*shape), **kw)


GRAD_CASES = [
    A("relu", lambda m, x: F(m).relu(x)),
    A("relu", lambda m, x: F(m).relu(x * 1, inplace=True), label="inplace"),
    A("leaky_relu", lambda m, x: F(m).leaky_relu(x, 0.2)),
    A("elu", lambda m, x: F(m).elu(x, 0.8)),
    A("elu", lambda m, x: F(m).selu(x), label="selu"),
    A("elu", lambda m, x: F(m).elu(x * 1, inplace=True), label="inplace"),
    A("celu", lambda m, x: F(m).celu(x, 1.3)),
    A("gelu", lambda m, x: F(m).gelu(x)),
    A("gelu", lambda m, x: F(m).gelu(x, approximate="tanh"), label="tanh"),
    A("_normal_cdf", lambda m, x: torch.special.ndtr(x) if m is torch else private(m, "_normal_cdf")(x),
      compare=False),
    A("silu", lambda m, x: F(m).silu(x)),
    A("softplus", lambda m, x: F(m).softplus(x, 2, 1.5)),
    A("hardtanh", lambda m, x: F(m).hardtanh(x, -0.5, 0.8)),
    A("hardsigmoid", lambda m, x: F(m).hardsigmoid(x * 2.5)),
    A("hardswish", lambda m, x: F(m).hardswish(x * 2.5)),
    A("mish", lambda m, x: F(m).mish(x)),
    A("softshrink", lambda m, x: F(m).softshrink(x, 0.3)),
    A("hardshrink", lambda m, x: F(m).hardshrink(x, 0.3)),
    A("threshold", lambda m, x: F(m).threshold(x, 0.2, -1.0)),
    A("log_sigmoid", lambda m, x: F(m).logsigmoid(x)),
    A("glu", lambda m, x: F(m).glu(x, 1)),
    A("softmax", lambda m, x: F(m).softmax(x, 1)),
    A("softmax", lambda m, x: F(m).softmin(x, 0), label="softmin"),
    A("log_softmax", lambda m, x: F(m).log_softmax(x, 0)),
    A("log_softmax", lambda m, x: F(m).log_softmax(x.float(), 1, dtype=m.float64), label="dtype", check=False),
    Case("_softmax_backward_data", lambda m, g, x: private(m, "_softmax_backward_data")(g, x.softmax(1), 1, m.float64),
         uniform(3, 4), uniform(3, 4)),
    Case("_log_softmax_backward_data", lambda m, g, x: private(m, "_log_softmax_backward_data")(
        g, x.log_softmax(0), 0, m.float64), uniform(3, 4), uniform(3, 4)),
    Case("linear", lambda m, x, w, b: F(m).linear(x, w, b), uniform(2, 3), uniform(4, 3), uniform(4)),
    Case("linear", lambda m, x, w, b: F(m).linear(x, w, b), uniform(2, 2, 3), uniform(4, 3), uniform(4), label="3d",
         compare=False),
    Case("mse_loss", lambda m, x, y: F(m).mse_loss(x, y), uniform(3, 4), uniform(3, 4)),
    Case("mse_loss", lambda m, x, y: F(m).mse_loss(x, y, reduction="none"), uniform(3, 4), uniform(3, 4),
         label="none"),
    Case("l1_loss", lambda m, x, y: F(m).l1_loss(x, y, reduction="sum"), uniform(3, 4), uniform(3, 4)),
    Case("smooth_l1_loss", lambda m, x, y: F(m).smooth_l1_loss(x, y, beta=0.6), uniform(3, 4), uniform(3, 4)),
    Case("huber_loss", lambda m, x, y: F(m).huber_loss(x, y, reduction="sum", delta=0.6), uniform(3, 4),
         uniform(3, 4)),
    Case("binary_cross_entropy", lambda m, x, y: F(m).binary_cross_entropy(x, y, weights(m)[:4]),
         probabilities(3, 4), probabilities(3, 4)),
    Case("binary_cross_entropy_with_logits", lambda m, x, y: F(m).binary_cross_entropy_with_logits(x, y),
         uniform(3, 4), probabilities(3, 4)),
    Case("binary_cross_entropy_with_logits", lambda m, x, y: F(m).binary_cross_entropy_with_logits(
        x, y, weights(m)[:4], pos_weight=weights(m)[1:], reduction="none"), uniform(3, 4), probabilities(3, 4),
        label="weights"),
    Case("kl_div", lambda m, x, y: F(m).kl_div(x, y, reduction="batchmean"), uniform(3, 4), probabilities(3, 4),
         compare=False),
    Case("nll_loss", lambda m, x, t: F(m).nll_loss(x, t, weights(m), ignore_index=2), uniform(4, 5),
         classes([1, 2, 4, 0])),
    Case("nll_loss", lambda m, x, t: F(m).nll_loss(x, t, reduction="none"), uniform(2, 5, 2, 2),
         RNG.integers(0, 5, (2, 2, 2)), label="2d"),
    Case("nll_loss_backward", lambda m, g, t: m.ops.aten.nll_loss_backward(g, g.new_zeros(4, 3), t, None, 0, 1,
                                                                           g.new_ones(()))
         if m is torch else m.nll_loss_backward(g, g.new_zeros(4, 3), t, None, 0, 1), uniform(4),
         classes([0, 1, 2, 1])),
    Case("cross_entropy", lambda m, x, t: F(m).cross_entropy(x, t, weights(m), label_smoothing=0.2),
         uniform(4, 5), classes([1, 2, 4, 0]), compare=False),
    Case("cross_entropy", lambda m, x, t: F(m).cross_entropy(x, t), uniform(4, 5), classes([1, 2, 4, 0]),
         label="plain"),
    Case("cross_entropy", lambda m, x, t: F(m).cross_entropy(x, t.softmax(1), label_smoothing=0.1),
         uniform(4, 5), uniform(4, 5), label="probabilities", compare=False),
    Case("_cross_entropy_index", lambda m, x, t: F(m).cross_entropy(x, t, ignore_index=2, reduction="sum"),
         uniform(4, 5), classes([1, 2, 4, 0]), label="ignore_sum"),
    Case("_cross_entropy_index", lambda m, x, t: F(m).cross_entropy(x, t, reduction="none"), uniform(4, 5),
         classes([1, 3, 4, 0]), label="none"),
    Case("_cross_entropy_index_backward", lambda m, x, g, t: m.autograd.grad(
        F(m).cross_entropy(x, t, ignore_index=1, reduction="none"), x, g, create_graph=True)[0],
        uniform(4, 5), uniform(4), classes([1, 2, 4, 0]), compare=False),
    Case("_prelu_kernel", lambda m, x, w: F(m).prelu(x, w), uniform(2, 3, 2), uniform(3)),
    Case("native_layer_norm", lambda m, x, w, b: F(m).layer_norm(x, (4,), w, b), uniform(3, 4), uniform(4),
         uniform(4)),
    Case("native_layer_norm", lambda m, x: F(m).layer_norm(x, (2, 3)), uniform(2, 2, 3), label="no_affine"),
    Case("_layer_norm_input_backward", lambda m, x, w, g: m.autograd.grad(
        F(m).layer_norm(x, (4,), w), x, g, create_graph=True)[0], uniform(3, 4), uniform(4), uniform(3, 4),
        compare=False),
    Case("native_batch_norm", lambda m, x, w, b: F(m).batch_norm(x, None, None, w, b, training=True),
         uniform(3, 2, 2), uniform(2), uniform(2)),
    Case("native_batch_norm", lambda m, x, w, b: F(m).batch_norm(
        x, m.zeros(2, dtype=m.float64), m.ones(2, dtype=m.float64) * 2, w, b), uniform(3, 2, 2), uniform(2),
        uniform(2), label="eval"),
    Case("group_norm", lambda m, x, w, b: F(m).group_norm(x, 2, w, b), uniform(2, 4, 3), uniform(4), uniform(4),
         compare=False),
    Case("instance_norm", lambda m, x: F(m).instance_norm(x), uniform(2, 2, 3), compare=False),
    Case("normalize", lambda m, x: F(m).normalize(x), uniform(3, 4), compare=False),
    Case("cosine_similarity", lambda m, x, y: F(m).cosine_similarity(x, y), uniform(3, 4), uniform(3, 4),
         compare=False),
    Case("pairwise_distance", lambda m, x, y: F(m).pairwise_distance(x, y), uniform(3, 4), uniform(3, 4),
         compare=False),
    Case("embedding", lambda m, w, i: F(m).embedding(i, w), uniform(4, 3), classes([[0, 1], [3, 0]])),
    Case("embedding", lambda m, w, i: F(m).embedding(i, w, padding_idx=1), uniform(4, 3), classes([[0, 1], [3, 0]]),
         label="padding", check=False),
    Case("embedding_dense_backward", lambda m, g, i: aten(m, "embedding_dense_backward")(g, i, 5, 1, False),
         uniform(2, 2, 3), classes([[0, 1], [3, 0]])),
    Case("scaled_dot_product_attention", lambda m, q, k, v: F(m).scaled_dot_product_attention(q, k, v,
         is_causal=True), uniform(2, 3, 2), uniform(2, 3, 2), uniform(2, 3, 2), compare=False),
    Case("bilinear", lambda m, x, y, w, b: F(m).bilinear(x, y, w, b), uniform(2, 3), uniform(2, 2), uniform(2, 3, 2),
         uniform(2), compare=False),
    Case("poisson_nll_loss", lambda m, x, y: F(m).poisson_nll_loss(x, y, full=True), uniform(3, 4),
         uniform(3, 4, low=0.1, high=3), compare=False),
    Case("gaussian_nll_loss", lambda m, x, y, v: F(m).gaussian_nll_loss(x, y, v), uniform(3, 4), uniform(3, 4),
         uniform(3, 4, low=0.3, high=2), compare=False),
    Case("margin_ranking_loss", lambda m, x, y: F(m).margin_ranking_loss(x, y, m.tensor([1.0, -1, 1])),
         uniform(3), uniform(3), compare=False),
    Case("cosine_embedding_loss", lambda m, x, y: F(m).cosine_embedding_loss(x, y, m.tensor([1.0, -1, 1])),
         uniform(3, 4), uniform(3, 4), compare=False),
    Case("triplet_margin_loss", lambda m, a, p, n: F(m).triplet_margin_loss(a, p, n, margin=3, swap=True),
         uniform(3, 4), uniform(3, 4), uniform(3, 4), compare=False),
    Case("multilabel_soft_margin_loss", lambda m, x, y: F(m).multilabel_soft_margin_loss(x, y), uniform(3, 4),
         probabilities(3, 4), compare=False),
    Case("multi_margin_loss", lambda m, x: F(m).multi_margin_loss(x, m.tensor([0, 3, 1]), p=2, margin=3), uniform(3, 4),
         compare=False),
    Case("soft_margin_loss", lambda m, x: F(m).soft_margin_loss(x, m.tensor([1.0, -1, 1])), uniform(3),
         compare=False),
    Case("ctc_loss", lambda m, lp, t: F(m).ctc_loss(lp.log_softmax(2), t, [4, 3], [2, 1]), uniform(4, 2, 3),
         classes([[1, 1], [2, 0]]), compare=False),
    Case("multilabel_margin_loss", lambda m, x, t: F(m).multilabel_margin_loss(x, t), uniform(2, 4),
         classes([[3, 0, -1, 1], [2, -1, 0, 0]]), compare=False),
]


@pytest.mark.parametrize("case", [c for c in GRAD_CASES if c.compare], ids=lambda c: c.id)
def test_gradients_and_node_names_match_torch(case):
    assert_gradients_match_torch(case)


@pytest.mark.parametrize("case", [c for c in GRAD_CASES if not c.compare], ids=lambda c: c.id)
def test_gradients_of_composites_match_torch(case):
    got, expected = vjp(lantern, case), vjp(torch, case)
    assert_same(got[0], expected[0], atol=1e-6, rtol=1e-6, strides=False)
    assert_same(got[2], expected[2], atol=1e-6, rtol=1e-6, strides=False)


@pytest.mark.parametrize("case", [c for c in GRAD_CASES if c.check], ids=lambda c: c.id)
def test_gradcheck_and_gradgradcheck_float64_noncontiguous(case):
    assert_gradcheck_and_gradgradcheck(case)


def test_embedding_double_backward_keeps_the_frequency_scaling():
    """torch's embedding_dense_backward derivative ignores scale_grad_by_freq; lantern's keeps it, so it passes
    gradcheck (torch's would not)."""
    grad = lantern.tensor(uniform(2, 2, 3), requires_grad=True)
    indices = lantern.tensor([[0, 1], [3, 0]])
    fn = lambda g: lantern.embedding_dense_backward(g, indices, 5, 1, True)  # noqa: E731
    assert lantern.autograd.gradcheck(fn, (grad,)) and lantern.autograd.gradgradcheck(fn, (grad,))


def test_top_level_forms_take_atens_signatures():
    x, w, b = noncontig(randn(2, 3, 4)), randn(3), randn(3)
    check(lambda m, x: m.layer_norm(x, [4], None, None, 1e-5, True), x, atol=1e-5)
    check(lambda m, x, w, b: m.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False), x, w, b, atol=1e-5)
    check(lambda m, x, w, b: m.group_norm(x, 3, w, b, 1e-5, False), x, w, b, atol=1e-5)
    check(lambda m, x, w, b: m.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False), x, w, b, atol=1e-5)
    check(lambda m, x: (m.dropout(x, 0.5, False), m.alpha_dropout(x, 0.5, False)), x)
    check(lambda m, x: m.kl_div(x.log_softmax(1), x.log_softmax(1) * 0.5, 2, log_target=True), x)
    check(lambda m, x: (m.cosine_similarity(x, x * 2, 2), m.pairwise_distance(x, x + 1)), x)
