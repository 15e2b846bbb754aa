"""Sampling: where lantern draws as torch does (normal_, uniform_, exponential_, cauchy_, bernoulli, multinomial,
poisson on the same generator), samples and rsample gradients equal torch's for the same seed; the Gamma-based
samplers (Gamma, Chi2, Beta, Dirichlet, StudentT, FisherSnedecor, InverseGamma, NegativeBinomial, LKJCholesky,
Wishart) and Binomial draw their own streams, so they are checked by their statistics (fixed seeds: deterministic)."""
import math

import numpy as np
import pytest
import torch

import lantern
from distribution_cases import CASES, build, both
from oracle import assert_same

OWN_STREAMS = {"Beta", "Binomial", "Chi2", "Dirichlet", "FisherSnedecor", "Gamma", "InverseGamma", "LKJCholesky",
               "NegativeBinomial", "StudentT", "Wishart"}


def _family(case):
    return case.split()[0]


@pytest.mark.parametrize("case", sorted(c for c in CASES if _family(c) not in OWN_STREAMS))
def test_samples_and_rsample_gradients_match_torch_for_the_same_seed(case):
    def run(lib):
        made = []

        def t(v):
            param = lib.tensor(v, dtype=lib.float64, requires_grad=True)
            made.append(param)
            return param
        dist = CASES[case][0](lib, t)
        lib.manual_seed(7)
        if not dist.has_rsample:
            return [dist.sample((3,))]
        draw = dist.rsample((3,))
        grads = lib.autograd.grad((draw * draw).sum(), made, allow_unused=True)
        return [draw] + [g if g is not None else "unused" for g in grads]

    for ours, theirs in zip(run(lantern), run(torch)):
        if isinstance(theirs, str):
            assert ours == theirs
        else:
            assert_same(ours, theirs, rtol=1e-6, atol=1e-9, strides=False)


def _finite(x):
    return np.isfinite(x)


# The samplers' statistics: the sample mean within 6 standard errors of torch's mean, the sample variance within
# 6 standard errors estimated from the sample's fourth moment (where the variance is finite and not heavy-tailed).
HEAVY_TAILED = {"Cauchy", "HalfCauchy", "StudentT", "FisherSnedecor", "Pareto", "InverseGamma", "LogNormal"}


def _has_moments(case):
    """Whether torch gives the linear mean and variance (VonMises gives circular ones; relaxed and transformed
    distributions none: their draws equal torch's, tested above)."""
    if _family(case) == "VonMises":
        return False
    try:
        build(case, torch).mean
    except NotImplementedError:
        return False
    return True


@pytest.mark.parametrize("case", sorted(c for c in CASES if _has_moments(c)))
def test_sample_statistics_match_torch_moments(case):
    theirs, ours = both(case)
    lantern.manual_seed(0)
    n = 4000
    samples = ours.sample((n,)).double().numpy()
    mean = theirs.mean.detach().numpy() if _family(case) != "Categorical" else None
    if mean is None:
        probs = theirs.probs.numpy()
        counts = np.stack([(samples == k).mean(0) for k in range(probs.shape[-1])], -1)
        assert np.all(np.abs(counts - probs) < 6 * np.sqrt(probs * (1 - probs) / n))
        return
    variance = theirs.variance.detach().numpy()
    checked = _finite(mean) & _finite(variance)
    standard_error = np.sqrt(np.where(checked, variance, 1) / n)
    assert np.all(np.abs(samples.mean(0) - mean)[checked] < 6 * standard_error[checked])
    if _family(case) in HEAVY_TAILED:
        return
    centred = samples - samples.mean(0)
    variance_error = np.sqrt(np.maximum((centred ** 4).mean(0) - centred.var(0) ** 2, 1e-12) / n)
    assert np.all(np.abs(centred.var(0) - variance)[checked] < 6 * variance_error[checked])


def test_sampling_is_reproducible_with_manual_seed():
    for case in ("Gamma", "Dirichlet", "Binomial", "Beta", "StudentT"):
        dist = build(case, lantern)
        lantern.manual_seed(3)
        first = dist.sample((5,))
        lantern.manual_seed(3)
        assert lantern.equal(first, dist.sample((5,)))


def test_standard_gamma_grad_matches_torch():
    alpha = np.array([0.05, 0.3, 1.0, 1.5, 4.0, 10.0, 80.0])
    x = np.array([1e-6, 0.01, 0.7, 1.0, 3.5, 12.0, 75.0])
    ours = lantern._standard_gamma_grad(lantern.tensor(alpha), lantern.tensor(x))
    theirs = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x))
    assert_same(ours, theirs, rtol=1e-4, atol=1e-8)  # torch's own kernel is a series / asymptotic approximation


def test_reparameterised_gamma_family_gradients_have_the_right_expectation():
    """E[d sample / d parameter] = d E[sample] / d parameter, within a few standard errors."""
    n = 20000
    lantern.manual_seed(1)
    concentration = lantern.tensor([0.4, 2.5], dtype=lantern.float64, requires_grad=True)
    rate = lantern.tensor([1.5, 0.5], dtype=lantern.float64, requires_grad=True)
    draws = lantern.distributions.Gamma(concentration, rate).rsample((n,))
    d_concentration = lantern.autograd.grad(draws.sum(), concentration, retain_graph=True)[0] / n
    d_rate = lantern.autograd.grad(draws.sum(), rate)[0] / n
    assert_close(d_concentration, 1 / rate.detach(), tolerance=0.03)
    assert_close(d_rate, -concentration.detach() / rate.detach() ** 2, tolerance=0.03)

    alpha = lantern.tensor([0.8, 2.0, 3.0], dtype=lantern.float64, requires_grad=True)
    first = lantern.distributions.Dirichlet(alpha).rsample((n,))[:, 0].sum() / n
    total = alpha.detach().sum()
    expected = -alpha.detach()[0] / total ** 2 + lantern.tensor([1.0, 0.0, 0.0], dtype=lantern.float64) / total
    assert_close(lantern.autograd.grad(first, alpha)[0], expected, tolerance=0.03)


def assert_close(got, expected, tolerance):
    assert np.allclose(got.detach().numpy(), expected.numpy(), rtol=tolerance, atol=tolerance / 10), (got, expected)


@pytest.mark.parametrize("call", [
    lambda lib: lib._standard_gamma(lib.tensor([1, 2])),
    lambda lib: lib.binomial(lib.tensor([1, 2]), lib.tensor([0.5, 0.5])),
    lambda lib: lib.binomial(lib.tensor([1.0, 2.0]), lib.tensor([0.5, 0.5], dtype=lib.float64)),
    lambda lib: lib._sample_dirichlet(lib.tensor([1, 2])),
])
def test_sampler_errors_match_torch(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(lantern)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_samplers_keep_dtypes_and_never_return_zero():
    for lib in (torch, lantern):
        draws = lib._standard_gamma(lib.tensor([0.0, 1e-3, 2.0]))
        assert draws.dtype == lib.float32 and bool((draws > 0).all())
        assert lib.binomial(lib.tensor([5.0]), lib.tensor([1.0])).tolist() == [5.0]
        assert math.isclose(lib._sample_dirichlet(lib.tensor([0.0, 0.0])).sum().item(), 1.0, rel_tol=1e-6)
