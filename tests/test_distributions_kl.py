"""kl_divergence against torch for every pair torch registers (read from torch's registry), with examples from
tests/distribution_cases.py, and the registry's dispatch rules: most specific match, ambiguity warning, memo reset,
NotImplementedError for unknown pairs."""
import warnings

import pytest
import torch
import torch.distributions.kl as torch_kl

import lantern
import lantern.distributions.kl as lantern_kl
from distribution_cases import CASES, build
from oracle import assert_same

# Examples for the classes the shared cases lack or give a shape that does not pair (a second Independent, ...)
_EXTRA = {
    "ExponentialFamily": "Normal",
    "Independent": "Independent",
    "TransformedDistribution": "TransformedDistribution",
}


def _case_for(cls_name):
    """The first case building `cls_name` (cases are named after their class)."""
    wanted = _EXTRA.get(cls_name, cls_name)
    return next((name for name in sorted(CASES) if name.split()[0] == wanted), None)


def _pairs():
    pairs = sorted({(p.__name__, q.__name__) for p, q in torch_kl._KL_REGISTRY})
    return [pair for pair in pairs if _case_for(pair[0]) and _case_for(pair[1])]


def _kl(lib, p_name, q_name):
    p, q = build(_case_for(p_name), lib), build(_case_for(q_name), lib)
    if (p_name, q_name) == ("ExponentialFamily", "ExponentialFamily"):  # the Bregman rule itself, on two Normals
        q = lib.distributions.Normal(q.loc * 0.5 + 0.3, q.scale * 1.5)
        kl_module = torch_kl if lib is torch else lantern_kl
        return kl_module._kl_expfamily_expfamily(p, q)
    if p_name == q_name:  # a second member of the family
        q = _SECOND[p_name](lib, lambda v: lib.tensor(v, dtype=lib.float64)) if p_name in _SECOND else _shifted(lib, q)
    return lib.distributions.kl_divergence(p, q)


# Second members for the families whose parameters _shifted cannot reach (properties, or wrapped distributions)
_SECOND = {
    "Beta": lambda lib, t: lib.distributions.Beta(t([1.2, 3.0]), t([2.5, 0.9])),
    "HalfNormal": lambda lib, t: lib.distributions.HalfNormal(t([2.0, 0.3])),
    "Independent": lambda lib, t: lib.distributions.Independent(
        lib.distributions.Normal(t([[1.0, 0.0], [0.0, 1.0]]), t([[0.5, 1.0], [2.0, 1.0]])), 1),
    "OneHotCategorical": lambda lib, t: lib.distributions.OneHotCategorical(t([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]])),
    "TransformedDistribution": lambda lib, t: lib.distributions.TransformedDistribution(
        lib.distributions.Normal(t([0.5, -1.0]), t([2.0, 0.7])),
        [lib.distributions.transforms.AffineTransform(1.0, -2.0), lib.distributions.transforms.SigmoidTransform()]),
}


def _shifted(lib, dist):
    """dist.expand(batch) gives the same distribution; for p vs q of one family, KL(p, p) = 0 tests little, so q
    is p with its float parameters scaled by 1.3 (kept inside their constraints)."""
    params = {name: getattr(dist, name) for name in dist.arg_constraints if name in dist.__dict__}
    if not params:
        return dist
    cls = type(dist)
    moved = {}
    for name, value in params.items():
        if name in ("probs",):
            moved[name] = value ** 1.3 / (value ** 1.3).sum(-1, keepdim=True) if dist.event_shape or \
                cls.__name__ in ("Categorical", "OneHotCategorical") else value ** 1.3
        elif name == "total_count":
            moved[name] = value
        else:
            moved[name] = value * 1.3
    try:
        return cls(**moved)
    except TypeError:
        return dist


def test_every_registered_pair_has_examples():
    """Each pair torch registers is exercised, apart from those whose classes lantern lacks."""
    untested = sorted({(p.__name__, q.__name__) for p, q in torch_kl._KL_REGISTRY} - set(_pairs()))
    assert untested == []


@pytest.mark.parametrize("pair", _pairs(), ids="-".join)
def test_kl_divergence_matches_torch(pair):
    try:
        theirs = ("ok", _kl(torch, *pair))
    except (NotImplementedError, ValueError) as e:
        theirs = ("raised", type(e))
    try:
        ours = ("ok", _kl(lantern, *pair))
    except (NotImplementedError, ValueError) as e:
        ours = ("raised", type(e))
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "ok":
        assert_same(ours[1], theirs[1], rtol=1e-6, atol=1e-9)
    else:
        assert ours[1].__name__ == theirs[1].__name__


def test_lantern_registers_the_pairs_torch_registers():
    theirs = {(p.__name__, q.__name__) for p, q in torch_kl._KL_REGISTRY}
    ours = {(p.__name__, q.__name__) for p, q in lantern_kl._KL_REGISTRY}
    assert ours == theirs


def test_unknown_pair_raises_not_implemented_with_torch_message():
    for lib in (torch, lantern):
        with pytest.raises(NotImplementedError) as caught:
            lib.distributions.kl_divergence(lib.distributions.Normal(0.0, 1.0),
                                            lib.distributions.Categorical(lib.tensor([0.5, 0.5])))
        assert str(caught.value) == "No KL(p || q) is implemented for p type Normal and q type Categorical"


def test_dispatch_takes_the_most_specific_rule_and_warns_on_ambiguity():
    D = lantern.distributions

    class MyNormal(D.Normal):
        pass

    class MyOtherNormal(D.Normal):
        pass

    try:
        assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == 0.5  # Normal-Normal's rule

        @D.register_kl(MyNormal, D.Normal)
        def _left(p, q):
            return lantern.tensor(1.0)

        @D.register_kl(D.Normal, MyOtherNormal)
        def _right(p, q):
            return lantern.tensor(2.0)

        assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == 1.0  # the memo was reset
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert D.kl_divergence(MyNormal(0.0, 1.0), MyOtherNormal(0.0, 1.0)).item() == 1.0
        assert "Ambiguous kl_divergence(MyNormal, MyOtherNormal). Please register_kl(MyNormal, MyOtherNormal)" in \
            str(caught[0].message)
    finally:
        for key in [k for k in lantern_kl._KL_REGISTRY if MyNormal in k or MyOtherNormal in k]:
            del lantern_kl._KL_REGISTRY[key]
        lantern_kl._KL_MEMOIZE.clear()


def test_register_kl_rejects_non_distributions():
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        lantern.distributions.register_kl(int, lantern.distributions.Normal)
