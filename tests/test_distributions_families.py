"""torch.distributions' classes, case by case against torch: shapes, moments, log_prob, entropy, cdf/icdf,
enumerate_support, expand, support and reprs, and float64 gradients of log_prob (tests/distribution_cases.py)."""
import pytest
import torch

import lantern
from distribution_cases import CASES, both, outcome, value
from oracle import assert_same

MOMENTS = ["mean", "mode", "variance", "stddev"]


@pytest.fixture(autouse=True, scope="module")
def _validation_on():
    """torch's own default (validation on): torch.compile, run by other test files in the session, turns it off."""
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(before)


def _same_outcome(ours, theirs, path):
    """Both libraries returned equal tensors, or both raised the same class."""
    assert ours[0] == theirs[0], f"{path}: lantern {ours}, torch {theirs}"
    if ours[0] == "ok":
        assert_same(ours[1], theirs[1], path=path, rtol=1e-6, atol=1e-9)
    else:
        assert ours[1] == theirs[1], path


@pytest.mark.parametrize("case", sorted(CASES))
def test_shapes_moments_log_prob_entropy_match_torch(case):
    theirs, ours = both(case)
    assert (ours.batch_shape, ours.event_shape) == (tuple(theirs.batch_shape), tuple(theirs.event_shape))
    assert (ours.has_rsample, ours.has_enumerate_support) == (theirs.has_rsample, theirs.has_enumerate_support)
    for moment in MOMENTS:
        _same_outcome(outcome(lambda: getattr(ours, moment)), outcome(lambda: getattr(theirs, moment)), moment)
    _same_outcome(outcome(ours.entropy), outcome(theirs.entropy), "entropy")
    assert_same(ours.log_prob(value(case, lantern)), theirs.log_prob(value(case, torch)), path="log_prob",
                rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("case", sorted(CASES))
def test_cdf_icdf_and_enumerate_support_match_torch(case):
    theirs, ours = both(case)
    if not theirs.event_shape:
        _same_outcome(outcome(lambda: ours.cdf(value(case, lantern))),
                      outcome(lambda: theirs.cdf(value(case, torch))), "cdf")
        probabilities = [0.2, 0.7] if theirs.batch_shape == (2,) else [0.2, 0.7, 0.4]
        _same_outcome(outcome(lambda: ours.icdf(lantern.tensor(probabilities, dtype=lantern.float64))),
                      outcome(lambda: theirs.icdf(torch.tensor(probabilities, dtype=torch.float64))), "icdf")
    if theirs.has_enumerate_support:
        for expand in (True, False):
            _same_outcome(outcome(lambda: ours.enumerate_support(expand)),
                          outcome(lambda: theirs.enumerate_support(expand)), f"enumerate_support({expand})")


@pytest.mark.parametrize("case", sorted(CASES))
def test_expand_sample_shapes_support_and_repr_match_torch(case):
    theirs, ours = both(case)
    new_batch = (3,) + tuple(theirs.batch_shape)
    theirs_expanded, ours_expanded = theirs.expand(new_batch), ours.expand(new_batch)
    assert type(ours_expanded).__name__ == type(theirs_expanded).__name__
    assert ours_expanded.batch_shape == tuple(theirs_expanded.batch_shape)
    _same_outcome(outcome(lambda: ours_expanded.log_prob(value(case, lantern))),
                  outcome(lambda: theirs_expanded.log_prob(value(case, torch))), "expanded log_prob")
    lantern.manual_seed(0)
    sample, their_sample = ours.sample((2, 4)), theirs.sample((2, 4))
    assert sample.shape == tuple(their_sample.shape)
    assert sample.dtype.name == str(their_sample.dtype).replace("torch.", "")
    assert bool(ours.support.check(sample).all())
    assert repr(ours.support).replace("lantern.", "torch.") == repr(theirs.support)
    assert repr(ours).replace("lantern.", "torch.") == repr(theirs)


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_prob_gradients_match_torch(case):
    """d log_prob / d parameter in float64, for every floating parameter the case was given."""
    def run(lib):
        made = []
        original = lib.tensor

        def t(v):
            param = original(v, dtype=lib.float64, requires_grad=True)
            made.append(param)
            return param
        dist = CASES[case][0](lib, t)
        log_prob = dist.log_prob(original(CASES[case][1], dtype=lib.float64))
        differentiable = [p for p in made if p.requires_grad]
        grads = lib.autograd.grad(log_prob.sum(), differentiable, allow_unused=True)
        return [g if g is not None else "unused" for g in grads]

    for ours, theirs in zip(run(lantern), run(torch)):
        if isinstance(theirs, str):
            assert isinstance(ours, str)
        else:
            assert_same(ours, theirs, path="grad", rtol=1e-6, atol=1e-9, strides=False)  # cholesky grads: transposed


def test_every_torch_distribution_class_has_a_case():
    """The cases cover every Distribution class torch.distributions exports (and lantern has each of them)."""
    covered = {name.split()[0] for name in CASES}
    exported = {name for name in torch.distributions.__all__
                if isinstance(getattr(torch.distributions, name), type)
                and issubclass(getattr(torch.distributions, name), torch.distributions.Distribution)}
    abstract = {"Distribution", "ExponentialFamily"}
    assert all(hasattr(lantern.distributions, n) for n in exported)
    assert exported - abstract - covered == {"OneHotCategoricalStraightThrough"}  # tested in the sampling tests
