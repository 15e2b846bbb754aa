"""torch.distributions: lantern's Categorical, Bernoulli, Normal and Uniform against torch's, same seeds and values."""
import numpy as np
import pytest
import torch

import lantern
import lantern.distributions
from oracle import assert_same

PROBS = [[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]
LOGITS = [[0.5, -1.0, 2.0], [0.0, 0.0, 3.0]]

# name -> (make(lib, tensor) -> distribution, values for log_prob)
CASES = {
    "categorical probs": (lambda lib, t: lib.distributions.Categorical(probs=t(PROBS)), [[2, 0], [1, 1]]),
    "categorical logits": (lambda lib, t: lib.distributions.Categorical(logits=t(LOGITS)), [0, 2]),
    "categorical 1d": (lambda lib, t: lib.distributions.Categorical(t([0.2, 0.8])), [[1], [0]]),
    "bernoulli probs": (lambda lib, t: lib.distributions.Bernoulli(t([0.3, 0.6, 1.0])), [[1.0, 0.0, 1.0]]),
    "bernoulli logits": (lambda lib, t: lib.distributions.Bernoulli(logits=t([-2.0, 0.5])), [0.0, 1.0]),
    "bernoulli number": (lambda lib, t: lib.distributions.Bernoulli(0.25), [1.0, 0.0]),
    "normal": (lambda lib, t: lib.distributions.Normal(t([0.0, 1.0, -2.0]), t([1.0, 0.5, 3.0])),
               [[0.3, 1.0, -1.0], [2.0, 0.0, 0.0]]),
    "normal numbers": (lambda lib, t: lib.distributions.Normal(1.0, 2.0), [0.5, -3.0]),
    "uniform": (lambda lib, t: lib.distributions.Uniform(t([0.0, -1.0]), t([2.0, 1.0])), [[0.5, 0.9], [1.5, -1.0]]),
}
MOMENTS = ["mean", "variance", "stddev", "mode"]


def _both(make):
    return (make(torch, lambda v: torch.tensor(v, dtype=torch.float64 if _floats(v) else None)),
            make(lantern, lambda v: lantern.tensor(v, dtype=lantern.float64 if _floats(v) else None)))


def _floats(v):
    return isinstance(np.asarray(v).flat[0].item(), float)


@pytest.mark.parametrize("case", sorted(CASES))
def test_shapes_moments_entropy_and_log_prob_match_torch(case):
    make, values = CASES[case]
    theirs, ours = _both(make)
    assert (tuple(ours.batch_shape), tuple(ours.event_shape)) == (tuple(theirs.batch_shape),
                                                                  tuple(theirs.event_shape))
    assert repr(ours) == repr(theirs).replace("torch.Size", "lantern.Size")
    for moment in MOMENTS:
        assert_same(getattr(ours, moment), getattr(theirs, moment), path=moment)
    assert_same(ours.entropy(), theirs.entropy(), path="entropy")
    value_dtype = torch.float64 if _floats(values) else torch.long
    assert_same(ours.log_prob(lantern.tensor(values, dtype=lantern.float64 if _floats(values) else lantern.long)),
                theirs.log_prob(torch.tensor(values, dtype=value_dtype)), path="log_prob")


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("sample_shape", [(), (4,), (2, 3)])
def test_samples_match_torch_for_the_same_seed(case, sample_shape):
    make, _ = CASES[case]
    theirs, ours = _both(make)
    torch.manual_seed(3)
    lantern.manual_seed(3)
    assert_same(ours.sample(sample_shape), theirs.sample(sample_shape), path="sample")


@pytest.mark.parametrize("name", ["Normal", "Uniform"])
def test_rsample_gradients_and_cdfs_match_torch(name):
    def run(lib):
        a = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)
        dist = getattr(lib.distributions, name)(a, b)
        lib.manual_seed(5)
        dist.rsample((3,)).pow(2).sum().backward()
        value = lib.tensor([0.5, 1.5], dtype=lib.float64)
        return [a.grad, b.grad, dist.cdf(value), dist.icdf(lib.tensor([0.25, 0.75], dtype=lib.float64))]

    for ours, theirs in zip(run(lantern), run(torch)):
        assert_same(ours, theirs)


def test_kl_divergence_matches_torch():
    pairs = [
        lambda lib, t: (lib.distributions.Normal(t([0.0, 1.0]), t([1.0, 2.0])),
                        lib.distributions.Normal(t(0.5), t(1.5))),
        lambda lib, t: (lib.distributions.Categorical(t(PROBS)), lib.distributions.Categorical(logits=t(LOGITS))),
        lambda lib, t: (lib.distributions.Bernoulli(t([0.2, 0.0, 1.0])),
                        lib.distributions.Bernoulli(t([0.5, 0.3, 0.4]))),
    ]
    for make in pairs:
        (tp, tq), (lp, lq) = _both(make)
        assert_same(lantern.distributions.kl_divergence(lp, lq), torch.distributions.kl_divergence(tp, tq))


ERRORS = [
    lambda lib: lib.distributions.Categorical(probs=lib.tensor([0.5, -0.1, 0.6])),
    lambda lib: lib.distributions.Normal(0.0, -1.0),
    lambda lib: lib.distributions.Categorical(lib.tensor([0.2, 0.8])).log_prob(lib.tensor(3)),
    lambda lib: lib.distributions.Categorical(lib.tensor([0.2, 0.8])).log_prob([1]),
    lambda lib: lib.distributions.Categorical(lib.tensor([[0.2, 0.8]] * 3)).log_prob(lib.tensor([0, 1])),
    lambda lib: lib.distributions.Categorical(probs=lib.tensor(1.0)),
    lambda lib: lib.distributions.Bernoulli(probs=0.5, logits=0.0),
    lambda lib: lib.distributions.Uniform(1.0, 1.0),
    lambda lib: lib.distributions.kl_divergence(lib.distributions.Normal(0.0, 1.0),
                                                lib.distributions.Categorical(lib.tensor([0.5, 0.5]))),
]


@pytest.fixture(autouse=True, scope="module")
def _torch_validates_arguments():
    """torch's own default (validation on): torch.compile, run by other test files in the session, turns it off."""
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(before)


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_torch(index):
    with pytest.raises(Exception) as theirs:
        ERRORS[index](torch)
    with pytest.raises(Exception) as ours:
        ERRORS[index](lantern)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value).replace("lantern.", "torch.") == str(theirs.value)


def test_validation_can_be_turned_off_as_in_torch():
    for lib in (torch, lantern):
        dist = lib.distributions.Normal(0.0, -1.0, validate_args=False)
        assert dist.scale.item() == -1.0


def test_names_are_torch_distributions_names():
    assert set(lantern.distributions.__all__) <= set(torch.distributions.__all__)


def test_base_class_behaviour_matches_torch():
    for lib in (torch, lantern):
        D = lib.distributions
        with pytest.raises(ValueError):
            D.Distribution.set_default_validate_args("yes")
        normal = D.Normal(lib.zeros(2), lib.ones(2))
        with pytest.warns(FutureWarning, match=r"`sample_n\(n\)` will be deprecated. Use `sample\(\(n,\)\)` instead."):
            assert tuple(normal.sample_n(3).shape) == (3, 2)
        assert lib.allclose(normal.perplexity(), normal.entropy().exp())
        with pytest.raises(NotImplementedError):
            D.Distribution().mean
        with pytest.raises(NotImplementedError, match="does not implement mode"):
            D.Distribution().mode

        class Scaled(D.Normal):
            def __init__(self, scale):
                super().__init__(0.0, scale)

        with pytest.raises(NotImplementedError) as caught:
            Scaled(2.0).expand((3,))
        assert str(caught.value) == ("Subclass Scaled of Normal that defines a custom __init__ method must also "
                                     "define a custom .expand() method.")


@pytest.mark.parametrize("make", [
    lambda lib: lib.distributions.Beta(2.0, 3.0).log_prob(lib.tensor(1.5)),
    lambda lib: lib.distributions.Poisson(lib.tensor(2.0)).log_prob(lib.tensor(0.5)),
    lambda lib: lib.distributions.Dirichlet(lib.tensor([1.0, 2.0])).log_prob(lib.tensor([0.5, 0.6])),
    lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2), lib.eye(2)).log_prob(lib.zeros(3)),
    lambda lib: lib.distributions.Binomial(lib.tensor([3.5]), lib.tensor([0.5])),
    lambda lib: lib.distributions.Independent(lib.distributions.Normal(lib.zeros(2), 1.0), 2),
    lambda lib: lib.distributions.TransformedDistribution(lib.distributions.Normal(0.0, 1.0), "exp"),
    lambda lib: lib.distributions.MixtureSameFamily(lib.distributions.Categorical(lib.ones(3)),
                                                    lib.distributions.Normal(lib.zeros(2), 1.0)),
    lambda lib: lib.distributions.Geometric(lib.tensor([0.0, 0.5])),
    lambda lib: lib.distributions.LKJCholesky(1),
    lambda lib: lib.distributions.Multinomial(lib.tensor(3), lib.ones(2)),
])
def test_argument_and_value_errors_match_torch(make):
    with pytest.raises(Exception) as theirs:
        make(torch)
    with pytest.raises(Exception) as ours:
        make(lantern)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value).replace("lantern.", "torch.") == str(theirs.value)
