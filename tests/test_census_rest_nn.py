"""nn.AdaptiveLogSoftmaxWithLoss and nn.CrossMapLRN2d against torch: values, gradients, parameters, errors."""
import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same

R = np.random.RandomState(0)


def _copy_parameters(src, dst):
    dst.load_state_dict({k: lantern.tensor(v.detach().numpy()) for k, v in src.state_dict().items()})


# ---- CrossMapLRN2d ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size, channels", [(2, 4), (3, 4), (3, 8), (4, 7), (5, 8), (5, 2), (6, 9), (7, 3)])
def test_cross_map_lrn2d_values_and_torchs_gradient(size, channels):
    x = R.randn(2, channels, 3, 2)
    g = R.randn(2, channels, 3, 2)
    results = []
    for lib in (torch, lantern):
        t = lib.tensor(x, requires_grad=True)
        out = lib.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)(t)
        out.backward(lib.tensor(g))
        results.append((out.detach(), t.grad))
    for got, expected in zip(results[1], results[0]):
        assert_same(got, expected, atol=1e-12, rtol=1e-10)


def test_cross_map_lrn2d_defaults_repr_and_errors_like_torch():
    for lib in (torch, lantern):
        module = lib.nn.CrossMapLRN2d(5)
        assert repr(module) == "CrossMapLRN2d(5, alpha=0.0001, beta=0.75, k=1)"
        with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
            module(lib.ones(2, 3, 4))
    x = R.randn(1, 6, 2, 2).astype(np.float32)
    assert_same(lantern.nn.CrossMapLRN2d(5)(lantern.tensor(x)), torch.nn.CrossMapLRN2d(5)(torch.tensor(x)))


# ---- AdaptiveLogSoftmaxWithLoss ---------------------------------------------------------------------------------
def _pair(**kwargs):
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(**kwargs).double()
    ours = lantern.nn.AdaptiveLogSoftmaxWithLoss(**kwargs).double()
    _copy_parameters(theirs, ours)
    return ours, theirs


CONFIGS = [dict(in_features=8, n_classes=10, cutoffs=[4, 8]),
           dict(in_features=16, n_classes=20, cutoffs=[3, 9, 15], div_value=2.0, head_bias=True),
           dict(in_features=6, n_classes=5, cutoffs=[2])]


@pytest.mark.parametrize("config", CONFIGS)
def test_adaptive_log_softmax_forward_and_gradients_like_torch(config):
    ours, theirs = _pair(**config)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert repr(ours).replace("lantern", "torch") == repr(theirs)
    x = R.randn(7, config["in_features"])
    target = R.randint(0, config["n_classes"], size=7)
    results = []
    for lib, module in ((torch, theirs), (lantern, ours)):
        inp = lib.tensor(x, requires_grad=True)
        out = module(inp, lib.tensor(target))
        out.loss.backward()
        results.append([out.output.detach(), out.loss.detach(), inp.grad]
                       + [p.grad for p in module.parameters()])
    for i, (got, expected) in enumerate(zip(results[1], results[0])):
        if expected is None:
            assert got is None
        else:
            assert_same(got, expected, atol=1e-12, rtol=1e-10, path=f"result {i}")


@pytest.mark.parametrize("config", CONFIGS)
def test_adaptive_log_softmax_log_prob_and_predict_like_torch(config):
    ours, theirs = _pair(**config)
    x = R.randn(9, config["in_features"]) * 3
    assert_same(ours.log_prob(lantern.tensor(x)), theirs.log_prob(torch.tensor(x)), atol=1e-12, rtol=1e-10)
    assert_same(ours.predict(lantern.tensor(x)), theirs.predict(torch.tensor(x)))
    with torch.no_grad():  # a head that always points into the clusters: the full-distribution branch
        theirs.head.weight.zero_()
        if theirs.head.bias is not None:
            theirs.head.bias.zero_()
        theirs.head.weight[-1] = 1.0
    _copy_parameters(theirs, ours)
    positive = np.abs(x) + 1
    assert_same(ours.predict(lantern.tensor(positive)), theirs.predict(torch.tensor(positive)))


def test_adaptive_log_softmax_unbatched_input_like_torch():
    ours, theirs = _pair(**CONFIGS[0])
    x = R.randn(8)
    for target in (2, 6, 9):
        got, expected = ours(lantern.tensor(x), lantern.tensor(target)), theirs(torch.tensor(x), torch.tensor(target))
        assert_same(got.output, expected.output, atol=1e-12, rtol=1e-10)
        assert_same(got.loss, expected.loss, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("make, call", [
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, []), None),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5, 3]), None),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [0, 3]), None),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 10]), None),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 3]), None),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [2.5]), None),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3]), lambda m, a: a(m.ones(2, 4), m.tensor([1, 10]))),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3]), lambda m, a: a(m.ones(3, 4), m.tensor([1, 2]))),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3]), lambda m, a: a(m.ones(2, 2, 4), m.tensor([1, 2]))),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3]), lambda m, a: a(m.ones(2, 4), m.tensor(1))),
    (lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3]), lambda m, a: a(m.ones(2, 4), m.ones(2, 2).long())),
])
def test_adaptive_log_softmax_errors_like_torch(make, call):
    messages = []
    for lib in (torch, lantern):
        with pytest.raises((ValueError, RuntimeError)) as info:
            module = make(lib)
            call(lib, module)
        messages.append((type(info.value), str(info.value).replace("torch.", "lantern.")))
    assert messages[1] == messages[0]


# ---- factory_kwargs ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [None, {}, {"dtype": "float64"}, {"device": "cpu", "memory_format": None},
                                    {"dtype": 1, "factory_kwargs": {"device": "cpu"}}, {"bias": True},
                                    {"dtype": 1, "factory_kwargs": {"dtype": 2}}])
def test_factory_kwargs_like_torch(kwargs):
    outcomes = []
    for lib in (torch, lantern):
        try:
            outcomes.append(lib.nn.factory_kwargs(kwargs))
        except TypeError as exc:
            outcomes.append(str(exc))
    assert outcomes[1] == outcomes[0]
