"""Example distributions for the distribution tests: one or two per torch.distributions class, built the same way
on torch and on lantern (float64 parameters), with a value in the support for log_prob.

CASES maps a case name to (make(lib, t) -> distribution, value); `t` makes a float64 tensor of `lib`. The class a
case builds is the name before the first space, which the KL test uses to find examples for torch's registered
pairs.
"""
import numpy as np
import torch

import lantern


def _d(lib):
    return lib.distributions


def _eye_ish(lib, t):
    """A positive definite 3 x 3 matrix, made by t."""
    return t([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])


CASES = {
    "Bernoulli probs": (lambda lib, t: _d(lib).Bernoulli(probs=t([0.3, 0.8])), [1.0, 0.0]),
    "Bernoulli logits": (lambda lib, t: _d(lib).Bernoulli(logits=t([-0.5, 2.0])), [0.0, 1.0]),
    "Beta": (lambda lib, t: _d(lib).Beta(t([2.0, 0.7]), t([3.0, 1.5])), [0.3, 0.9]),
    "Binomial": (lambda lib, t: _d(lib).Binomial(t([5.0, 5.0]), t([0.3, 0.6])), [2.0, 5.0]),
    "Binomial logits": (lambda lib, t: _d(lib).Binomial(8, logits=t([-1.0, 0.5])), [3.0, 0.0]),
    "Categorical": (lambda lib, t: _d(lib).Categorical(t([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])), [2.0, 0.0]),
    "Cauchy": (lambda lib, t: _d(lib).Cauchy(t([0.0, 1.0]), t([1.0, 2.5])), [0.5, -3.0]),
    "Chi2": (lambda lib, t: _d(lib).Chi2(t([3.0, 5.5])), [1.2, 7.0]),
    "ContinuousBernoulli": (lambda lib, t: _d(lib).ContinuousBernoulli(t([0.2, 0.8])), [0.3, 0.9]),
    "ContinuousBernoulli centre": (lambda lib, t: _d(lib).ContinuousBernoulli(t([0.4999, 0.5005])), [0.3, 0.9]),
    "Dirichlet": (lambda lib, t: _d(lib).Dirichlet(t([[1.5, 2.0, 0.8], [3.0, 1.0, 2.0]])),
                  [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]),
    "Exponential": (lambda lib, t: _d(lib).Exponential(t([0.5, 2.0])), [1.5, 0.2]),
    "FisherSnedecor": (lambda lib, t: _d(lib).FisherSnedecor(t([3.0, 5.0]), t([6.0, 9.0])), [0.8, 2.0]),
    "Gamma": (lambda lib, t: _d(lib).Gamma(t([2.0, 0.5]), t([1.5, 3.0])), [0.7, 0.1]),
    # float32 parameters: torch's log_prob compares concentration with a float32 zero and fails for float64
    "GeneralizedPareto": (lambda lib, t: _d(lib).GeneralizedPareto(
        t([0.0, 1.0, 0.5]).float(), t([1.0, 2.0, 0.5]).float(), t([0.3, 0.0, -0.4]).float()), [0.5, 2.0, 1.0]),
    "Geometric": (lambda lib, t: _d(lib).Geometric(t([0.3, 0.9])), [2.0, 0.0]),
    "Gumbel": (lambda lib, t: _d(lib).Gumbel(t([0.0, 1.0]), t([1.0, 2.0])), [0.5, -1.0]),
    "HalfCauchy": (lambda lib, t: _d(lib).HalfCauchy(t([1.0, 2.0])), [0.5, 3.0]),
    "HalfNormal": (lambda lib, t: _d(lib).HalfNormal(t([1.0, 0.5])), [0.3, 1.2]),
    "Independent": (lambda lib, t: _d(lib).Independent(_d(lib).Normal(t([[0.0, 1.0], [2.0, -1.0]]),
                                                                        t([[1.0, 2.0], [0.5, 1.5]])), 1),
                    [[0.5, 0.2], [1.0, 1.0]]),
    "InverseGamma": (lambda lib, t: _d(lib).InverseGamma(t([3.0, 1.5]), t([2.0, 1.0])), [0.8, 2.0]),
    "Kumaraswamy": (lambda lib, t: _d(lib).Kumaraswamy(t([2.0, 0.8]), t([3.0, 1.5])), [0.4, 0.7]),
    "LKJCholesky": (lambda lib, t: _d(lib).LKJCholesky(3, t([0.5, 2.0])),
                    [[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]]),
    "Laplace": (lambda lib, t: _d(lib).Laplace(t([0.0, 1.0]), t([1.0, 0.5])), [0.5, 3.0]),
    "LogNormal": (lambda lib, t: _d(lib).LogNormal(t([0.0, 0.5]), t([1.0, 0.3])), [0.5, 2.0]),
    "LogisticNormal": (lambda lib, t: _d(lib).LogisticNormal(t([0.0, 0.5]), t([1.0, 0.3])), [0.2, 0.3, 0.5]),
    "LowRankMultivariateNormal": (lambda lib, t: _d(lib).LowRankMultivariateNormal(
        t([0.0, 1.0, -1.0]), t([[1.0, 0.5], [0.2, -0.3], [0.4, 1.0]]), t([0.5, 1.0, 2.0])), [0.3, 0.2, -0.5]),
    "MixtureSameFamily": (lambda lib, t: _d(lib).MixtureSameFamily(
        _d(lib).Categorical(t([0.3, 0.7])), _d(lib).Normal(t([-1.0, 2.0]), t([1.0, 0.5]))), [0.5, -2.0]),
    "Multinomial": (lambda lib, t: _d(lib).Multinomial(6, t([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])),
                    [[1.0, 2.0, 3.0], [0.0, 1.0, 5.0]]),
    "MultivariateNormal cov": (lambda lib, t: _d(lib).MultivariateNormal(t([0.0, 1.0, -1.0]),
                                                                          covariance_matrix=_eye_ish(lib, t)),
                               [0.3, 0.2, -0.5]),
    "MultivariateNormal precision": (lambda lib, t: _d(lib).MultivariateNormal(
        t([[0.0, 1.0, -1.0], [1.0, 1.0, 1.0]]), precision_matrix=_eye_ish(lib, t)), [0.3, 0.2, -0.5]),
    "MultivariateNormal tril": (lambda lib, t: _d(lib).MultivariateNormal(
        t([0.0, 1.0]), scale_tril=t([[1.5, 0.0], [0.4, 0.7]])), [[0.3, 0.2], [1.0, -1.0]]),
    "NegativeBinomial": (lambda lib, t: _d(lib).NegativeBinomial(t([3.0, 5.5]), t([0.4, 0.7])), [2.0, 0.0]),
    "Normal": (lambda lib, t: _d(lib).Normal(t([0.0, 1.0]), t([1.0, 2.0])), [0.5, -1.0]),
    "OneHotCategorical": (lambda lib, t: _d(lib).OneHotCategorical(t([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
                          [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]),
    "Pareto": (lambda lib, t: _d(lib).Pareto(t([1.0, 2.0]), t([3.0, 1.5])), [1.5, 4.0]),
    "Poisson": (lambda lib, t: _d(lib).Poisson(t([2.0, 0.5])), [3.0, 0.0]),
    "RelaxedBernoulli": (lambda lib, t: _d(lib).RelaxedBernoulli(t(0.7), probs=t([0.3, 0.8])), [0.2, 0.9]),
    "RelaxedOneHotCategorical": (lambda lib, t: _d(lib).RelaxedOneHotCategorical(t(0.5), probs=t([0.2, 0.3, 0.5])),
                                 [0.1, 0.3, 0.6]),
    "StudentT": (lambda lib, t: _d(lib).StudentT(t([3.0, 1.5, 0.8]), t([0.0, 1.0, 0.0]), t([1.0, 2.0, 1.0])),
                 [0.5, -1.0, 2.0]),
    "TransformedDistribution": (lambda lib, t: _d(lib).TransformedDistribution(
        _d(lib).Normal(t([0.0, 1.0]), t([1.0, 0.5])),
        [_d(lib).transforms.AffineTransform(1.0, -2.0), _d(lib).transforms.SigmoidTransform()]), [0.3, 0.6]),
    "Uniform": (lambda lib, t: _d(lib).Uniform(t([0.0, -1.0]), t([2.0, 1.0])), [0.5, 0.9]),
    "VonMises": (lambda lib, t: _d(lib).VonMises(t([0.0, 1.0]), t([0.5, 4.0])), [0.3, -2.0]),
    "Weibull": (lambda lib, t: _d(lib).Weibull(t([1.0, 2.0]), t([1.5, 0.8])), [0.5, 3.0]),
    "Wishart": (lambda lib, t: _d(lib).Wishart(t([4.0, 6.5]), covariance_matrix=_eye_ish(lib, t)), _eye_ish(np, list)),
    # .tril(): the gradient of torch's cholesky_solve reaches the factor's upper triangle, lantern's does not
    "Wishart tril": (lambda lib, t: _d(lib).Wishart(t(3.5), scale_tril=t([[1.5, 0.0], [0.4, 0.7]]).tril()),
                     [[2.0, 0.3], [0.3, 1.0]]),
}


def tensor_maker(lib):
    return lambda v: lib.tensor(v, dtype=lib.float64)


def build(case, lib):
    make, _ = CASES[case]
    return make(lib, tensor_maker(lib))


def value(case, lib):
    return lib.tensor(CASES[case][1], dtype=lib.float64)


def both(case):
    """The case's (torch distribution, lantern distribution)."""
    return build(case, torch), build(case, lantern)


def outcome(fn):
    """('ok', result) or ('raised', exception class name): what calling fn did."""
    try:
        return "ok", fn()
    except (NotImplementedError, ValueError, RuntimeError, AttributeError) as e:
        return "raised", type(e).__name__

