"""nn.init (lantern/nn/init.py) against torch.nn.init: gains and fans exactly, deterministic fills exactly, random
fills statistically (bounds, mean and std over large tensors equal torch's samples'), generators, in-place under
no_grad, warnings, and the same exception classes.
"""
import math
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import as_numpy, assert_same

GAINS = [("linear", None), ("conv1d", None), ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
         ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None)]


@pytest.mark.parametrize("nonlinearity,param", GAINS)
def test_calculate_gain(nonlinearity, param):
    assert lantern.nn.init.calculate_gain(nonlinearity, param) == torch.nn.init.calculate_gain(nonlinearity, param)


@pytest.mark.parametrize("shape", [(3, 4), (8, 4, 3), (6, 2, 3, 5), (2, 3, 1, 2, 2), (0, 5)])
def test_fans(shape):
    assert lantern.nn.init._calculate_fan_in_and_fan_out(lantern.empty(shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))


def _pair(lib):
    return lib, lib.nn.init


# name: fn(lib, init, tensor): each is deterministic, so the filled tensors must be equal
EXACT = {
    "constant_": ((3, 4), lambda i, t: i.constant_(t, 2.5)),
    "ones_": ((5,), lambda i, t: i.ones_(t)),
    "zeros_": ((2, 3, 4), lambda i, t: i.zeros_(t)),
    "eye_": ((3, 5), lambda i, t: i.eye_(t)),
    "eye_tall": ((4, 2), lambda i, t: i.eye_(t)),
    "dirac_3d": ((4, 3, 3), lambda i, t: i.dirac_(t)),
    "dirac_4d_groups": ((6, 4, 3, 2), lambda i, t: i.dirac_(t, 2)),
    "dirac_5d_wide": ((2, 5, 3, 3, 3), lambda i, t: i.dirac_(t)),
}


@pytest.mark.parametrize("name", EXACT)
def test_deterministic_fills_match_torch(name):
    shape, fn = EXACT[name]
    expected = fn(torch.nn.init, torch.full(shape, 7.0))
    t = lantern.full(shape, 7.0)
    got = fn(lantern.nn.init, t)
    assert got is t
    assert_same(got, expected)


def _stats(x):
    a = as_numpy(x).astype(np.float64).ravel()
    return a.min(), a.max(), a.mean(), a.std()


# name: (shape, fn(init, tensor)); lantern's sample must have torch's sample's mean and std, and its bounds where the
# distribution is bounded (names not ending in ~; the extremes of normal tails are too noisy to compare)
RANDOM = {
    "uniform_": ((200, 500), lambda i, t: i.uniform_(t, -2.0, 3.0)),
    "normal_~": ((200, 500), lambda i, t: i.normal_(t, 1.5, 0.5)),
    "trunc_normal_": ((200, 500), lambda i, t: i.trunc_normal_(t, 0.5, 2.0, -1.0, 1.5)),
    "trunc_normal_default": ((200, 500), lambda i, t: i.trunc_normal_(t)),
    "xavier_uniform_": ((300, 200, 2), lambda i, t: i.xavier_uniform_(t, gain=2.0)),
    "xavier_normal_~": ((300, 400), lambda i, t: i.xavier_normal_(t)),
    "kaiming_uniform_": ((300, 40, 3, 3), lambda i, t: i.kaiming_uniform_(t)),
    "kaiming_uniform_a": ((300, 400), lambda i, t: i.kaiming_uniform_(t, a=math.sqrt(5))),
    "kaiming_normal_fan_out~": ((300, 40, 3), lambda i, t: i.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")),
    "kaiming_normal_leaky~": ((200, 500), lambda i, t: i.kaiming_normal_(t, a=0.3, mode="FAN_IN")),
    "orthogonal_~": ((200, 300), lambda i, t: i.orthogonal_(t, gain=1.7)),
    "sparse_~": ((300, 400), lambda i, t: i.sparse_(t, 0.3, std=0.2)),
}


@pytest.mark.parametrize("name", RANDOM)
def test_random_fills_match_torch_statistically(name):
    shape, fn = RANDOM[name]
    torch.manual_seed(0)
    expected = _stats(fn(torch.nn.init, torch.empty(shape)))
    t = lantern.empty(shape)
    got = fn(lantern.nn.init, t)
    assert got is t and got.shape == shape
    lo, hi, mean, std = _stats(got)
    if not name.endswith("~"):
        np.testing.assert_allclose([lo, hi], expected[:2], rtol=0.02, atol=0.01 * expected[3])
    assert abs(mean - expected[2]) < 0.02 * expected[3] + 1e-3
    np.testing.assert_allclose(std, expected[3], rtol=0.03)


def test_orthogonal_is_orthogonal_in_both_orientations():
    for shape, gain in (((5, 12), 1.0), ((12, 5), 2.0), ((4, 3, 2), 0.5)):
        w = lantern.nn.init.orthogonal_(lantern.empty(shape), gain=gain).reshape(shape[0], -1)
        gram = w @ w.t() if shape[0] <= w.shape[1] else w.t() @ w
        np.testing.assert_allclose(as_numpy(gram), gain ** 2 * np.eye(gram.shape[0]), atol=1e-5)


def test_sparse_zeros_per_column():
    w = lantern.nn.init.sparse_(lantern.empty(10, 50), sparsity=0.25)
    assert (w == 0).sum(0).tolist() == [3] * 50  # ceil(0.25 * 10) zeros in every column


def test_trunc_normal_bounds_are_respected():
    w = lantern.nn.init.trunc_normal_(lantern.empty(100000), mean=0.0, std=1.0, a=-0.1, b=0.3)
    assert w.min().item() >= -0.1 and w.max().item() <= 0.3
    assert abs(w.mean().item() - 0.1) < 0.01  # nearly uniform on a narrow interval around the mode


@pytest.mark.parametrize("name", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
                                  "kaiming_uniform_", "kaiming_normal_", "orthogonal_"])
def test_generator_makes_fills_reproducible(name):
    fn = getattr(lantern.nn.init, name)
    a = fn(lantern.empty(6, 7), generator=lantern.Generator().manual_seed(3))
    b = fn(lantern.empty(6, 7), generator=lantern.Generator().manual_seed(3))
    c = fn(lantern.empty(6, 7), generator=lantern.Generator().manual_seed(4))
    assert a.equal(b) and not a.equal(c)
    # sparse_ draws its values from `generator` but, as torch, its zero rows from the default generator
    fills = []
    for _ in range(2):
        lantern.manual_seed(0)
        fills.append(lantern.nn.init.sparse_(lantern.empty(6, 7), 0.5, generator=lantern.Generator().manual_seed(1)))
    assert fills[0].equal(fills[1])


def test_inplace_on_parameter_without_recording_history():
    p = lantern.nn.Parameter(lantern.empty(4, 3))
    for fn in (lambda t: lantern.nn.init.kaiming_uniform_(t), lambda t: lantern.nn.init.orthogonal_(t),
               lambda t: lantern.nn.init.eye_(t), lambda t: lantern.nn.init.sparse_(t, 0.5),
               lambda t: lantern.nn.init.trunc_normal_(t)):
        assert fn(p) is p and p.grad_fn is None and p.is_leaf and p.requires_grad


def test_warnings_match_torch():
    for lib in (torch, lantern):
        with pytest.warns(UserWarning, match="zero-element"):
            lib.nn.init.kaiming_uniform_(lib.empty(0, 3))
        with pytest.warns(UserWarning, match="zero-element"):
            lib.nn.init.kaiming_normal_(lib.empty(3, 0))
        with pytest.warns(UserWarning, match="more than 2 std"):
            lib.nn.init.trunc_normal_(lib.empty(10), mean=5.0, std=1.0, a=-1.0, b=1.0)
        with pytest.warns(FutureWarning, match="deprecated in favor of `nn.init.xavier_uniform_`"):
            lib.nn.init.xavier_uniform(lib.empty(3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lantern.nn.init.trunc_normal_(lantern.empty(10), mean=2.5, a=0.0, b=1.0)


ERRORS = {
    "gain_unknown": lambda lib: lib.nn.init.calculate_gain("swish"),
    "gain_bool_param": lambda lib: lib.nn.init.calculate_gain("leaky_relu", True),
    "gain_str_param": lambda lib: lib.nn.init.calculate_gain("leaky_relu", "0.1"),
    "fan_1d": lambda lib: lib.nn.init._calculate_fan_in_and_fan_out(lib.empty(5)),
    "xavier_1d": lambda lib: lib.nn.init.xavier_uniform_(lib.empty(5)),
    "xavier_normal_0d": lambda lib: lib.nn.init.xavier_normal_(lib.empty(())),
    "kaiming_1d": lambda lib: lib.nn.init.kaiming_normal_(lib.empty(5)),
    "kaiming_mode": lambda lib: lib.nn.init.kaiming_uniform_(lib.empty(3, 3), mode="fan_avg"),
    "kaiming_nonlinearity": lambda lib: lib.nn.init.kaiming_uniform_(lib.empty(3, 3), nonlinearity="gelu"),
    "kaiming_mode_first": lambda lib: lib.nn.init.kaiming_normal_(lib.empty(3, 3), mode="x", nonlinearity="gelu"),
    "eye_3d": lambda lib: lib.nn.init.eye_(lib.empty(2, 2, 2)),
    "dirac_2d": lambda lib: lib.nn.init.dirac_(lib.empty(3, 3)),
    "dirac_groups": lambda lib: lib.nn.init.dirac_(lib.empty(5, 2, 3), groups=2),
    "orthogonal_1d": lambda lib: lib.nn.init.orthogonal_(lib.empty(4)),
    "sparse_3d": lambda lib: lib.nn.init.sparse_(lib.empty(2, 2, 2), 0.5),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_torch(name):
    caught = []
    for lib in (torch, lantern):
        with pytest.raises(Exception) as info:
            ERRORS[name](lib)
        caught.append(info.value)
    assert type(caught[1]) is type(caught[0]) and str(caught[1]) == str(caught[0])


def test_private_no_grad_helpers():
    p = lantern.nn.Parameter(lantern.empty(3, 4))
    init = lantern.nn.init
    assert init._no_grad_fill_(p, 2.0).eq(2).all() and init._no_grad_zero_(p).eq(0).all()
    assert init._no_grad_uniform_(p, 1.0, 2.0).ge(1).all() and init._no_grad_normal_(p, 0.0, 1.0) is p
    assert init._no_grad_trunc_normal_(p, 0.0, 1.0, -0.5, 0.5).abs().le(0.5).all() and p.grad_fn is None
    assert init._calculate_correct_fan(p, "fan_out") == torch.nn.init._calculate_correct_fan(torch.empty(3, 4),
                                                                                             "fan_out")
