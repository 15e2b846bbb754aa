"""torch.distributions.transforms and constraint_registry against torch: forward, inverse, log |det J|, shapes,
domains, caching, and biject_to / transform_to for each constraint torch registers."""
import pytest
import torch

import lantern
from oracle import assert_same


def _t(lib, v):
    return lib.tensor(v, dtype=lib.float64)


def _T(lib):
    return lib.distributions.transforms


REAL = [[-1.5, 0.3, 2.0], [0.1, -0.7, 1.2]]
POSITIVE = [[0.5, 1.3, 2.0], [0.1, 0.7, 3.2]]
UNIT = [[0.2, 0.5, 0.9], [0.1, 0.7, 0.35]]
SQUARE = [[[0.5, 0.1], [-0.3, 0.2]], [[1.0, 0.0], [0.4, -1.0]]]

# name -> (make(lib) -> transform, input for the forward map)
TRANSFORMS = {
    "Exp": (lambda lib: _T(lib).ExpTransform(), REAL),
    "Affine numbers": (lambda lib: _T(lib).AffineTransform(1.0, -2.0), REAL),
    "Affine tensors": (lambda lib: _T(lib).AffineTransform(_t(lib, [0.0, 1.0, 2.0]), _t(lib, [1.0, -0.5, 3.0])),
                       REAL),
    "Affine event": (lambda lib: _T(lib).AffineTransform(_t(lib, [0.0, 1.0, 2.0]), _t(lib, [1.0, -0.5, 3.0]), 1),
                     REAL),
    "Sigmoid": (lambda lib: _T(lib).SigmoidTransform(), REAL),
    "Tanh": (lambda lib: _T(lib).TanhTransform(), REAL),
    "Softplus": (lambda lib: _T(lib).SoftplusTransform(), REAL),
    "Softmax": (lambda lib: _T(lib).SoftmaxTransform(), REAL),
    "StickBreaking": (lambda lib: _T(lib).StickBreakingTransform(), REAL),
    "Power": (lambda lib: _T(lib).PowerTransform(_t(lib, 2.5)), POSITIVE),
    "Abs": (lambda lib: _T(lib).AbsTransform(), REAL),
    "LowerCholesky": (lambda lib: _T(lib).LowerCholeskyTransform(), SQUARE),
    "PositiveDefinite": (lambda lib: _T(lib).PositiveDefiniteTransform(), SQUARE),
    "CorrCholesky": (lambda lib: _T(lib).CorrCholeskyTransform(), REAL),
    "Compose": (lambda lib: _T(lib).ComposeTransform([_T(lib).AffineTransform(0.5, 2.0), _T(lib).ExpTransform(),
                                                      _T(lib).PowerTransform(_t(lib, 0.5))]), REAL),
    "Compose events": (lambda lib: _T(lib).ComposeTransform([_T(lib).ExpTransform(),
                                                             _T(lib).StickBreakingTransform()]), REAL),
    "Independent": (lambda lib: _T(lib).IndependentTransform(_T(lib).ExpTransform(), 1), REAL),
    "Reshape": (lambda lib: _T(lib).ReshapeTransform((3,), (3, 1)), REAL),
    "Cat": (lambda lib: _T(lib).CatTransform([_T(lib).ExpTransform(), _T(lib).AffineTransform(1.0, 3.0)], 1, [1, 2]),
            REAL),
    "Stack": (lambda lib: _T(lib).StackTransform([_T(lib).ExpTransform(), _T(lib).SigmoidTransform()], 0), REAL),
    "CumulativeDistribution": (lambda lib: _T(lib).CumulativeDistributionTransform(
        lib.distributions.Normal(_t(lib, 0.0), _t(lib, 2.0))), REAL),
    "Identity": (lambda lib: _T(lib).identity_transform, REAL),
}


def _outcome(fn):
    try:
        return "ok", fn()
    except (NotImplementedError, ValueError, RuntimeError, IndexError) as e:
        return "raised", type(e).__name__


def _same(ours, theirs, path):
    assert ours[0] == theirs[0], f"{path}: lantern {ours}, torch {theirs}"
    if ours[0] == "ok":
        assert_same(ours[1], theirs[1], path=path, rtol=1e-6, atol=1e-9)
    else:
        assert ours[1] == theirs[1]


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_forward_inverse_and_log_det_jacobian_match_torch(name):
    make, x = TRANSFORMS[name]
    theirs, ours = make(torch), make(lantern)
    tx, lx = _t(torch, x), _t(lantern, x)
    ty, ly = theirs(tx), ours(lx)
    assert_same(ly, ty, path="forward", rtol=1e-6, atol=1e-9)
    assert_same(ours.inv(ly), theirs.inv(ty), path="inverse", rtol=1e-6, atol=1e-9)
    _same(_outcome(lambda: ours.log_abs_det_jacobian(lx, ly)), _outcome(lambda: theirs.log_abs_det_jacobian(tx, ty)),
          "log_abs_det_jacobian")
    _same(_outcome(lambda: ours.inv.log_abs_det_jacobian(ly, lx)),
          _outcome(lambda: theirs.inv.log_abs_det_jacobian(ty, tx)), "inverse log_abs_det_jacobian")


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_domains_shapes_and_flags_match_torch(name):
    make, x = TRANSFORMS[name]
    theirs, ours = make(torch), make(lantern)
    for attribute in ("domain", "codomain"):
        t_constraint, l_constraint = getattr(theirs, attribute), getattr(ours, attribute)
        assert type(l_constraint).__name__ == type(t_constraint).__name__
        assert l_constraint.event_dim == t_constraint.event_dim
        if type(t_constraint).__name__ not in ("_Cat", "_Stack"):
            assert repr(l_constraint).replace("lantern.", "torch.") == repr(t_constraint)
    assert ours.bijective == theirs.bijective
    assert repr(ours) == repr(theirs)
    shape = tuple(torch.tensor(x).shape)
    for method in ("forward_shape", "inverse_shape"):
        t_result = _outcome(lambda: tuple(getattr(theirs, method)(torch.Size(shape))))
        l_result = _outcome(lambda: tuple(getattr(ours, method)(lantern.Size(shape))))
        assert l_result == t_result, method
    t_sign, l_sign = _outcome(lambda: theirs.sign), _outcome(lambda: ours.sign)
    assert l_sign[0] == t_sign[0]
    if t_sign[0] == "ok":
        assert_same(lantern.as_tensor(l_sign[1]), torch.as_tensor(t_sign[1]), path="sign")


def test_inverse_is_cached_weakly_and_round_trips():
    for lib in (torch, lantern):
        t = lib.distributions.transforms.ExpTransform()
        assert t.inv.inv is t and t.inv == lib.distributions.transforms.ExpTransform().inv
        cached = lib.distributions.transforms.SigmoidTransform(cache_size=1)
        x = lib.tensor([50.0])           # sigmoid(50) rounds to 1: only the cache gives 50 back
        assert cached.inv(cached(x)) is x
        with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
            lib.distributions.transforms.ExpTransform(cache_size=2)
        with pytest.raises(NotImplementedError):
            lib.distributions.transforms.Transform().sign


def test_transform_equality_follows_torch():
    T = lantern.distributions.transforms
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.PowerTransform(lantern.tensor(2.0)) == T.PowerTransform(lantern.tensor(2.0))
    assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
    assert T.ExpTransform() != T.SigmoidTransform()


def _constraint_examples(lib):
    C = lib.distributions.constraints
    return {
        "real": C.real, "positive": C.positive, "nonnegative": C.nonnegative, "greater_than": C.greater_than(2.0),
        "greater_than_eq": C.greater_than_eq(-1.0), "less_than": C.less_than(3.0), "unit_interval": C.unit_interval,
        "interval": C.interval(-2.0, 5.0), "half_open_interval": C.half_open_interval(1.0, 4.0),
        "simplex": C.simplex, "real_vector": C.real_vector, "independent positive": C.independent(C.positive, 1),
        "lower_cholesky": C.lower_cholesky, "positive_definite": C.positive_definite,
        "positive_semidefinite": C.positive_semidefinite, "corr_cholesky": C.corr_cholesky,
        "cat": C.cat([C.real, C.positive], 1, [1, 2]), "stack": C.stack([C.real, C.positive], 0),
    }


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", sorted(_constraint_examples(torch)))
def test_biject_to_and_transform_to_match_torch(registry, name):
    theirs = _outcome(lambda: getattr(torch.distributions, registry)(_constraint_examples(torch)[name]))
    ours = _outcome(lambda: getattr(lantern.distributions, registry)(_constraint_examples(lantern)[name]))
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "raised":
        return
    theirs, ours = theirs[1], ours[1]
    assert repr(ours) == repr(theirs)
    x = SQUARE if name in ("lower_cholesky", "positive_definite", "positive_semidefinite") else REAL
    y_theirs, y_ours = theirs(_t(torch, x)), ours(_t(lantern, x))
    assert_same(y_ours, y_theirs, path="transformed", rtol=1e-6, atol=1e-9)
    assert bool(_constraint_examples(lantern)[name].check(y_ours).all())


def test_constraint_checks_match_torch():
    values = {"vector": [0.2, 0.3, 0.5], "matrix": [[1.0, 0.0], [0.5, 2.0]], "bad": [[-1.0, 0.3], [0.3, -2.0]],
              "ints": [0.0, 1.0, 3.0], "one_hot": [[0.0, 1.0], [1.0, 1.0]]}
    for name in torch.distributions.constraints.__all__:
        t_constraint = getattr(torch.distributions.constraints, name)
        if not isinstance(t_constraint, torch.distributions.constraints.Constraint):
            continue
        l_constraint = getattr(lantern.distributions.constraints, name)
        assert repr(l_constraint) == repr(t_constraint)
        for v in values.values():
            t_result = _outcome(lambda: t_constraint.check(torch.tensor(v, dtype=torch.float64)))
            l_result = _outcome(lambda: l_constraint.check(lantern.tensor(v, dtype=lantern.float64)))
            assert l_result[0] == t_result[0], name
            if t_result[0] == "ok":
                assert_same(l_result[1], t_result[1], path=name)


def test_constraint_registry_errors_match_torch():
    for lib in (torch, lantern):
        with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
            lib.distributions.biject_to(lib.distributions.constraints.boolean)
        with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
            lib.distributions.transform_to.register(3, lambda c: None)


def test_transform_names_are_torch_names():
    assert set(lantern.distributions.transforms.__all__) == set(torch.distributions.transforms.__all__)
    assert set(lantern.distributions.constraints.__all__) == set(torch.distributions.constraints.__all__)
