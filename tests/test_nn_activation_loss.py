"""Activation, loss and dropout Modules (lantern/nn/modules/{activation,loss,dropout}.py) against torch.

Each layer is built in both libraries from the same lambda and run through nn_oracle.check_module on non-contiguous
inputs (outputs, input gradients, parameter gradients); reprs, buffers, the legacy size_average/reduce mapping and
constructor errors are compared directly. Dropout in training mode is random, so its statistics and scaling are
checked instead of its values.
"""
import warnings

import numpy as np
import pytest
import torch

import lantern
from nn_oracle import check_module
from oracle import assert_same, noncontig, to_lib

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape)


def lib(nn):
    """The library (torch or lantern) that a given nn namespace belongs to."""
    return torch if nn is torch.nn else lantern


# ---- activations ------------------------------------------------------------------------------------------------

X = randn(3, 4, 5) * 3  # spread out so every branch (negative, saturated, shrunk) is hit

ACTIVATIONS = {
    "Threshold": lambda nn: nn.Threshold(0.5, -2.0),
    "ReLU": lambda nn: nn.ReLU(),
    "RReLU_eval": lambda nn: nn.RReLU(0.1, 0.3),
    "Hardtanh": lambda nn: nn.Hardtanh(-2.0, 1.5),
    "ReLU6": lambda nn: nn.ReLU6(),
    "Sigmoid": lambda nn: nn.Sigmoid(),
    "Hardsigmoid": lambda nn: nn.Hardsigmoid(),
    "Tanh": lambda nn: nn.Tanh(),
    "SiLU": lambda nn: nn.SiLU(),
    "Mish": lambda nn: nn.Mish(),
    "Hardswish": lambda nn: nn.Hardswish(),
    "ELU": lambda nn: nn.ELU(alpha=0.7),
    "CELU": lambda nn: nn.CELU(alpha=1.5),
    "SELU": lambda nn: nn.SELU(),
    "GLU": lambda nn: nn.GLU(dim=1),
    "GELU": lambda nn: nn.GELU(),
    "GELU_tanh": lambda nn: nn.GELU(approximate="tanh"),
    "Hardshrink": lambda nn: nn.Hardshrink(1.0),
    "LeakyReLU": lambda nn: nn.LeakyReLU(0.2),
    "LogSigmoid": lambda nn: nn.LogSigmoid(),
    "Softplus": lambda nn: nn.Softplus(beta=2.0, threshold=3.0),
    "Softshrink": lambda nn: nn.Softshrink(0.8),
    "PReLU": lambda nn: nn.PReLU(dtype=lib(nn).float64),
    "PReLU_channels": lambda nn: nn.PReLU(4, init=0.1, dtype=lib(nn).float64),
    "Softsign": lambda nn: nn.Softsign(),
    "Tanhshrink": lambda nn: nn.Tanhshrink(),
    "Softmin": lambda nn: nn.Softmin(dim=1),
    "Softmax": lambda nn: nn.Softmax(dim=-1),
    "Softmax2d": lambda nn: nn.Softmax2d(),
    "LogSoftmax": lambda nn: nn.LogSoftmax(dim=0),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_forward_backward_matches_torch(name):
    check_module(ACTIVATIONS[name], X, train=not name.endswith("_eval"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_activation_dtype_kept(dtype):
    for make in (ACTIVATIONS["GELU"], ACTIVATIONS["PReLU"], ACTIVATIONS["Softmax"]):
        tm, lm = make(torch.nn).to(getattr(torch, np.dtype(dtype).name)), make(lantern.nn)
        lm.to(getattr(lantern, np.dtype(dtype).name))
        assert_same(lm(to_lib(lantern, noncontig(X.astype(dtype)))), tm(to_lib(torch, noncontig(X.astype(dtype)))),
                    strides=False, atol=1e-6)


INPLACE = {
    "Threshold": lambda nn: nn.Threshold(0.1, 20.0, inplace=True),
    "ReLU": lambda nn: nn.ReLU(inplace=True),
    "Hardtanh": lambda nn: nn.Hardtanh(inplace=True),
    "ReLU6": lambda nn: nn.ReLU6(inplace=True),
    "Hardsigmoid": lambda nn: nn.Hardsigmoid(inplace=True),
    "SiLU": lambda nn: nn.SiLU(inplace=True),
    "Mish": lambda nn: nn.Mish(inplace=True),
    "Hardswish": lambda nn: nn.Hardswish(inplace=True),
    "ELU": lambda nn: nn.ELU(inplace=True),
    "CELU": lambda nn: nn.CELU(inplace=True),
    "SELU": lambda nn: nn.SELU(inplace=True),
    "LeakyReLU": lambda nn: nn.LeakyReLU(inplace=True),
    "RReLU_eval": lambda nn: nn.RReLU(inplace=True).eval(),
}


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_activation_writes_its_input(name):
    results = []
    for L in (torch, lantern):
        leaf = to_lib(L, noncontig(X)).requires_grad_(True)
        y = leaf * 1.0
        out = INPLACE[name](L.nn)(y)
        assert out is y
        out.backward(to_lib(L, np.cos(X)))
        results.append((out, leaf.grad))
    assert_same(results[1], results[0], strides=False)


REPRS = [lambda nn: nn.Threshold(1, 2), lambda nn: nn.RReLU(), lambda nn: nn.Hardtanh(), lambda nn: nn.GELU(),
         lambda nn: nn.Softmax(), lambda nn: nn.Softplus(), lambda nn: nn.Softshrink(), lambda nn: nn.GLU(),
         lambda nn: nn.LeakyReLU(), lambda nn: nn.PReLU(5)]


def test_activation_repr_and_attributes_match_torch():
    for make in [*ACTIVATIONS.values(), *INPLACE.values(), *REPRS]:
        tm, lm = make(torch.nn), make(lantern.nn)
        assert repr(lm) == repr(tm)
        public = {k: v for k, v in vars(tm).items() if not k.startswith("_")}
        assert {k: getattr(lm, k) for k in public} == public
    assert isinstance(lantern.nn.ReLU6(), lantern.nn.Hardtanh) and not isinstance(lantern.nn.CELU(), lantern.nn.ELU)


def test_rrelu_training_slopes_lie_between_lower_and_upper():
    x = -lantern.rand(2000) - 0.1
    m = lantern.nn.RReLU(0.1, 0.3)
    slopes = m(x) / x
    assert 0.1 <= slopes.min().item() and slopes.max().item() <= 0.3
    assert abs(slopes.mean().item() - 0.2) < 0.01
    assert (m(-x) == -x).all().item()


def test_prelu_parameter():
    m = lantern.nn.PReLU(3, init=0.5, dtype=lantern.float64)
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert isinstance(m.weight, lantern.nn.Parameter) and m.weight.dtype is lantern.float64
    assert m.weight.tolist() == [0.5] * 3 and m.num_parameters == 3 and m.init == 0.5
    with lantern.no_grad():
        m.weight.zero_()
    m.reset_parameters()
    assert m.weight.tolist() == [0.5] * 3


def test_activation_errors_match_torch():
    for lib_ in (torch, lantern):
        with pytest.raises(AssertionError, match=r"max_val \(1.0\) must be greater than min_val \(2.0\)"):
            lib_.nn.Hardtanh(2.0, 1.0)
        with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
            lib_.nn.Softmax2d()(lib_.ones(2, 3))
        with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
            assert lib_.nn.Hardtanh(min_value=-3.0).min_val == -3.0


def test_softmax_without_dim_warns_like_torch():
    for lib_ in (torch, lantern):
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
            lib_.nn.Softmax()(lib_.ones(2, 3))


# ---- losses -----------------------------------------------------------------------------------------------------

P = 1 / (1 + np.exp(-randn(4, 3)))          # probabilities
Y01 = RNG.random((4, 3))                     # soft binary targets
CLASSES = RNG.integers(0, 5, 4)              # class indices for (4, 5) logits
SIGNS = np.sign(randn(4, 3)) + 0.0           # ±1 targets
LOGP = np.log(RNG.dirichlet(np.ones(5), 4))  # log-probabilities
ML_TARGET = np.array([[3, 0, -1, 1, 2], [1, 2, 4, -1, 0], [0, -1, 3, 3, 3], [4, 3, 2, 1, 0]])
CTC_LOGITS = randn(12, 2, 5)


def _weight(nn, values):
    return lib(nn).tensor(values, dtype=lib(nn).float64)


LOSSES = {
    "L1Loss": (lambda nn, r: nn.L1Loss(reduction=r), randn(4, 3), randn(4, 3)),
    "MSELoss": (lambda nn, r: nn.MSELoss(reduction=r), randn(4, 3), randn(4, 3)),
    "CrossEntropyLoss": (lambda nn, r: nn.CrossEntropyLoss(reduction=r), randn(4, 5), CLASSES),
    "CrossEntropyLoss_options": (lambda nn, r: nn.CrossEntropyLoss(
        weight=_weight(nn, [1.0, 2.0, 0.5, 1.0, 3.0]), ignore_index=2, reduction=r, label_smoothing=0.2),
        randn(4, 5), np.array([0, 2, 4, 1])),
    "CrossEntropyLoss_probs": (lambda nn, r: nn.CrossEntropyLoss(reduction=r), randn(4, 5), np.exp(LOGP)),
    "CrossEntropyLoss_kd": (lambda nn, r: nn.CrossEntropyLoss(reduction=r), randn(2, 5, 3), RNG.integers(0, 5, (2, 3))),
    "NLLLoss": (lambda nn, r: nn.NLLLoss(weight=_weight(nn, [1.0, 2.0, 0.5, 1.0, 3.0]), reduction=r), LOGP, CLASSES),
    "NLLLoss_ignore": (lambda nn, r: nn.NLLLoss(ignore_index=1, reduction=r), LOGP, np.array([1, 0, 1, 3])),
    "BCELoss": (lambda nn, r: nn.BCELoss(reduction=r), P, Y01),
    "BCELoss_weight": (lambda nn, r: nn.BCELoss(weight=_weight(nn, [1.0, 0.5, 2.0]), reduction=r), P, Y01),
    "BCEWithLogitsLoss": (lambda nn, r: nn.BCEWithLogitsLoss(reduction=r), randn(4, 3), Y01),
    "BCEWithLogitsLoss_pos": (lambda nn, r: nn.BCEWithLogitsLoss(
        weight=_weight(nn, [1.0, 0.5, 2.0]), pos_weight=_weight(nn, [3.0, 1.0, 0.2]), reduction=r),
        randn(4, 3), Y01),
    "KLDivLoss": (lambda nn, r: nn.KLDivLoss(reduction=r), LOGP, np.exp(LOGP[::-1])),
    "KLDivLoss_log_target": (lambda nn, r: nn.KLDivLoss(reduction=r, log_target=True), LOGP, LOGP[::-1].copy()),
    "KLDivLoss_batchmean": (lambda nn, r: nn.KLDivLoss(reduction="batchmean"), LOGP, np.exp(LOGP[::-1])),
    "HuberLoss": (lambda nn, r: nn.HuberLoss(reduction=r, delta=0.7), randn(4, 3) * 2, randn(4, 3)),
    "SmoothL1Loss": (lambda nn, r: nn.SmoothL1Loss(reduction=r, beta=0.5), randn(4, 3) * 2, randn(4, 3)),
    "SoftMarginLoss": (lambda nn, r: nn.SoftMarginLoss(reduction=r), randn(4, 3), SIGNS),
    "MultiLabelSoftMarginLoss": (lambda nn, r: nn.MultiLabelSoftMarginLoss(
        weight=_weight(nn, [1.0, 0.5, 2.0]), reduction=r), randn(4, 3), (Y01 > 0.5) + 0.0),
    "MultiLabelMarginLoss": (lambda nn, r: nn.MultiLabelMarginLoss(reduction=r), randn(4, 5), ML_TARGET),
    "MultiMarginLoss": (lambda nn, r: nn.MultiMarginLoss(reduction=r), randn(4, 5), CLASSES),
    "MultiMarginLoss_p2": (lambda nn, r: nn.MultiMarginLoss(
        p=2, margin=0.5, weight=_weight(nn, [1.0, 2.0, 0.5, 1.0, 3.0]), reduction=r), randn(4, 5), CLASSES),
    "MarginRankingLoss": (lambda nn, r: nn.MarginRankingLoss(margin=0.3, reduction=r), randn(6), randn(6),
                          np.sign(randn(6))),
    "HingeEmbeddingLoss": (lambda nn, r: nn.HingeEmbeddingLoss(margin=0.5, reduction=r), randn(4, 3), SIGNS),
    "CosineEmbeddingLoss": (lambda nn, r: nn.CosineEmbeddingLoss(margin=0.2, reduction=r), randn(4, 3), randn(4, 3),
                            np.array([1, -1, -1, 1])),
    "TripletMarginLoss": (lambda nn, r: nn.TripletMarginLoss(margin=2.0, p=1.5, swap=True, reduction=r),
                          randn(4, 3), randn(4, 3), randn(4, 3)),
    "TripletMarginWithDistanceLoss": (lambda nn, r: nn.TripletMarginWithDistanceLoss(reduction=r, margin=1.5),
                                      randn(4, 3), randn(4, 3), randn(4, 3)),
    "TripletMarginWithDistanceLoss_fn": (lambda nn, r: nn.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: 1.0 - nn.functional.cosine_similarity(a, b), swap=True, reduction=r),
        randn(4, 3), randn(4, 3), randn(4, 3)),
    "PoissonNLLLoss": (lambda nn, r: nn.PoissonNLLLoss(reduction=r), randn(4, 3), RNG.poisson(2.0, (4, 3)) + 0.0),
    "PoissonNLLLoss_full": (lambda nn, r: nn.PoissonNLLLoss(log_input=False, full=True, reduction=r),
                            RNG.random((4, 3)) + 0.1, RNG.poisson(2.0, (4, 3)) + 0.0),
    "GaussianNLLLoss": (lambda nn, r: nn.GaussianNLLLoss(full=True, reduction=r), randn(4, 3), randn(4, 3),
                        RNG.random((4, 3)) + 0.1),
    "GaussianNLLLoss_float_var": (lambda nn, r: nn.GaussianNLLLoss(reduction=r), randn(4, 3), randn(4, 3), 0.7),
    "GaussianNLLLoss_shared_var": (lambda nn, r: nn.GaussianNLLLoss(reduction=r, eps=0.2), randn(2, 4, 3),
                                   randn(2, 4, 3), RNG.random((2, 1, 3))),
    "CTCLoss": (lambda nn, r: nn.CTCLoss(blank=0, reduction=r), CTC_LOGITS, np.array([[1, 2, 2, 3], [4, 1, 0, 0]]),
                np.array([12, 10]), np.array([4, 2])),
    "CTCLoss_zero_infinity": (lambda nn, r: nn.CTCLoss(blank=4, reduction=r, zero_infinity=True), CTC_LOGITS[:3],
                              np.array([[1, 2, 1, 3], [0, 1, 0, 0]]), np.array([3, 3]), np.array([4, 2])),
}


# Targets that torch does not differentiate (or, for PoissonNLLLoss with full=True at target 0, differentiates to
# nan) are detached in the call. CTC's log_probs go through log_softmax: torch's CTC backward returns the gradient
# that is right for log_softmax outputs only, so that is the composition both libraries must agree on.
DETACHED_TARGETS = {"SoftMarginLoss", "PoissonNLLLoss_full"}
LOG_SOFTMAX_FIRST = {"CTCLoss", "CTCLoss_zero_infinity"}


def _loss_call(name):
    def call(module, first, *rest):
        if name in DETACHED_TARGETS:
            rest = [t.detach() for t in rest]
        if name in LOG_SOFTMAX_FIRST:
            first = first.log_softmax(-1)
        return module(first, *rest)
    return call


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", LOSSES)
def test_loss_forward_backward_matches_torch(name, reduction):
    make, *inputs = LOSSES[name]
    check_module(lambda nn: make(nn, reduction), *inputs, atol=1e-6, call=_loss_call(name))


def test_weights_are_buffers_like_torch():
    for name in ("CrossEntropyLoss_options", "NLLLoss", "BCELoss_weight", "BCEWithLogitsLoss_pos",
                 "MultiLabelSoftMarginLoss", "MultiMarginLoss_p2"):
        make = LOSSES[name][0]
        tm, lm = make(torch.nn, "mean"), make(lantern.nn, "mean")
        assert [n for n, _ in lm.named_buffers()] == [n for n, _ in tm.named_buffers()], name
        assert list(lm.state_dict()) == list(tm.state_dict()), name
        assert list(lm.parameters()) == []
    tm, lm = torch.nn.CrossEntropyLoss(), lantern.nn.CrossEntropyLoss()
    assert lm.weight is None and list(lm.state_dict()) == list(tm.state_dict()) == []


@pytest.mark.parametrize("size_average,reduce", [(None, False), (False, None), (True, True), (False, True),
                                                 (True, False), (None, True)])
def test_legacy_size_average_reduce(size_average, reduce):
    for make in (lambda nn: nn.MSELoss(size_average, reduce),
                 lambda nn: nn.NLLLoss(None, size_average, -100, reduce),
                 lambda nn: nn.CrossEntropyLoss(size_average=size_average, reduce=reduce, reduction="sum"),
                 lambda nn: nn.KLDivLoss(size_average, reduce)):
        records = []
        for lib_ in (torch, lantern):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                m = make(lib_.nn)
            records.append((m.reduction, [(w.category, str(w.message)) for w in caught]))
        assert records[1] == records[0]


LOSS_REPRS = [
    lambda nn: nn.L1Loss(), lambda nn: nn.NLLLoss(ignore_index=3), lambda nn: nn.CrossEntropyLoss(label_smoothing=0.1),
    lambda nn: nn.TripletMarginWithDistanceLoss(), lambda nn: nn.CTCLoss(), lambda nn: nn.GaussianNLLLoss(),
]


def test_loss_attributes_and_repr_match_torch():
    for make in [lambda nn, m=m: m(nn, "sum") for m, *_ in LOSSES.values()] + LOSS_REPRS:
        tm, lm = make(torch.nn), make(lantern.nn)
        assert repr(lm) == repr(tm)
        public = {k: v for k, v in vars(tm).items() if not k.startswith("_") and k != "training"}
        for key, value in public.items():
            if not isinstance(value, (torch.Tensor, torch.nn.Module)) and not callable(value):
                assert getattr(lm, key) == value, key


def test_loss_constructor_errors_match_torch():
    for lib_ in (torch, lantern):
        nn = lib_.nn
        with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
            nn.MultiMarginLoss(p=3)
        with pytest.raises(ValueError, match="expected weight to be None or 1D tensor, got 2D instead"):
            nn.MultiMarginLoss(weight=lib_.ones(2, 2))
        with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater than 0, got 0"):
            nn.TripletMarginLoss(margin=0)
        with pytest.raises(ValueError, match="TripletMarginWithDistanceLoss: expected margin"):
            nn.TripletMarginWithDistanceLoss(margin=-1.0)
        with pytest.raises(TypeError, match="delta must be a float or int, got: <class 'str'>"):
            nn.HuberLoss(delta="1")
        with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
            nn.MSELoss(reduction="bad")(lib_.ones(2), lib_.ones(2))
        with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
            nn.NLLLoss2d()


def test_triplet_margin_with_distance_loss_functional():
    a, p, n = randn(4, 3), randn(4, 3), randn(4, 3)
    out = [L.nn.functional.triplet_margin_with_distance_loss(*(to_lib(L, noncontig(v)) for v in (a, p, n)),
                                                             swap=True, reduction="sum") for L in (torch, lantern)]
    assert_same(out[1], out[0])
    for L in (torch, lantern):
        with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D"):
            L.nn.functional.triplet_margin_with_distance_loss(L.ones(2, 2), L.ones(2), L.ones(2, 2))


# ---- dropout ----------------------------------------------------------------------------------------------------

DROPOUTS = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]
SHAPES = {"Dropout": (3, 4), "Dropout1d": (2, 3, 4), "Dropout2d": (2, 3, 4, 5), "Dropout3d": (2, 3, 2, 4, 5),
          "AlphaDropout": (3, 4), "FeatureAlphaDropout": (2, 3, 4, 5)}


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_eval_is_identity_and_repr(name):
    check_module(lambda nn: getattr(nn, name)(p=0.3), randn(*SHAPES[name]), train=False)
    assert repr(getattr(lantern.nn, name)(0.2, True)) == repr(getattr(torch.nn, name)(0.2, True))
    for lib_ in (torch, lantern):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
            getattr(lib_.nn, name)(p=1.5)


@pytest.mark.parametrize("name", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d"])
def test_dropout_training_zeroes_and_rescales(name):
    shape = {"Dropout": (40, 50), "Dropout1d": (40, 50, 3), "Dropout2d": (40, 50, 2, 2),
             "Dropout3d": (40, 50, 1, 2, 2)}[name]
    x = lantern.ones(*shape, dtype=lantern.float64, requires_grad=True)
    y = getattr(lantern.nn, name)(p=0.25)(x)
    values = set(np.unique(np.array(y.tolist())).tolist())
    assert values <= {0.0, 4 / 3}
    kept = (y != 0).double()
    assert abs(kept.mean().item() - 0.75) < 0.05
    if name != "Dropout":  # whole channels share one mask
        per_channel = kept.view(40, 50, -1)
        assert (per_channel.amin(-1) == per_channel.amax(-1)).all().item()
    y.sum().backward()
    assert_same(x.grad, torch.tensor(np.array(y.tolist())), strides=False)  # gradient = mask * scale
    inplace = getattr(lantern.nn, name)(p=0.25, inplace=True)
    z = lantern.ones(*shape)
    assert inplace(z) is z and set(np.unique(np.array(z.tolist())).tolist()) <= {0.0, np.float32(4 / 3)}


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_keeps_mean_and_variance(name):
    x = lantern.randn(40, 100, 5, 5)
    y = getattr(lantern.nn, name)(p=0.2)(x)
    assert abs(y.mean().item()) < 0.05 and abs(y.std().item() - 1.0) < 0.05
    assert not y.equal(x)
    if name == "FeatureAlphaDropout":  # a dropped channel is constant
        flat = y.view(4000, 25)
        constant = (flat.amax(-1) == flat.amin(-1)).double().mean().item()
        assert abs(constant - 0.2) < 0.04


@pytest.mark.parametrize("p", [0.0, 1.0])
@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_training_with_p_0_or_1_matches_torch(name, p):
    check_module(lambda nn: getattr(nn, name)(p=p), randn(*SHAPES[name]), train=True)
