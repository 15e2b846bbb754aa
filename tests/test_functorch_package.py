"""The `functorch` package torch ships beside torch.func, against torch's: its names, the deprecated transforms'
warnings, and the module API from before functional_call (make_functional, make_functional_with_buffers,
combine_state_for_ensemble) on the same models and weights."""
import types
import warnings

import functorch as torch_functorch
import numpy as np
import pytest
import torch

import lantern
from lantern import functorch as lantern_functorch
from oracle import assert_same

FUNCTORCH = {torch: torch_functorch, lantern: lantern_functorch}
# make_fx traces into a torch.fx graph; lantern captures graphs with its own JIT and has no torch.fx
# (docs/unsupported-torch-names.md)
NOT_IN_LANTERN = {"make_fx"}


def _model(m, seed=0):
    """Linear, BatchNorm1d, Linear with the same weights in both libraries."""
    model = m.nn.Sequential(m.nn.Linear(5, 4), m.nn.BatchNorm1d(4), m.nn.Linear(4, 2))
    rng = np.random.default_rng(seed)
    with m.no_grad():
        for p in model.parameters():
            p.copy_(m.tensor(rng.standard_normal(tuple(p.shape)), dtype=m.float32))
    return model


def _input(m):
    return m.tensor(np.random.default_rng(7).standard_normal((16, 5)), dtype=m.float32)


def _quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fn(*args, **kwargs)


def test_functorch_names_are_lantern_names():
    public = {n for n in dir(torch_functorch)   # its submodules (functorch.dim, ...: loaded by other tests) left out
              if not n.startswith("_") and not isinstance(getattr(torch_functorch, n), types.ModuleType)}
    assert public - set(lantern_functorch.__all__) == NOT_IN_LANTERN


DEPRECATED = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functionalize",
              "make_functional", "make_functional_with_buffers", "combine_state_for_ensemble"]
CALLS = {
    "vmap": lambda ft, m: ft.vmap(m.sin)(m.ones(2)),
    "grad": lambda ft, m: ft.grad(lambda x: x.sum())(m.ones(2)),
    "grad_and_value": lambda ft, m: ft.grad_and_value(lambda x: x.sum())(m.ones(2)),
    "vjp": lambda ft, m: ft.vjp(m.sin, m.ones(2)),
    "jvp": lambda ft, m: ft.jvp(m.sin, (m.ones(2),), (m.ones(2),)),
    "jacrev": lambda ft, m: ft.jacrev(m.sin)(m.ones(2)),
    "jacfwd": lambda ft, m: ft.jacfwd(m.sin)(m.ones(2)),
    "hessian": lambda ft, m: ft.hessian(lambda x: x.sin().sum())(m.ones(2)),
    "functionalize": lambda ft, m: ft.functionalize(m.sin)(m.ones(2)),
    "make_functional": lambda ft, m: ft.make_functional(m.nn.Linear(2, 2)),
    "make_functional_with_buffers": lambda ft, m: ft.make_functional_with_buffers(_model(m)),
    "combine_state_for_ensemble": lambda ft, m: ft.combine_state_for_ensemble([_model(m), _model(m, 1)]),
}


@pytest.mark.parametrize("name", DEPRECATED)
def test_each_transform_warns_that_it_moved_to_torch_func(name):
    messages = {}
    for m, ft in FUNCTORCH.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            CALLS[name](ft, m)
        deprecations = [w for w in caught if issubclass(w.category, FutureWarning)]
        assert len(deprecations) == 1 and deprecations[0].filename == __file__, (m.__name__, deprecations)
        messages[m] = str(deprecations[0].message)
    assert messages[lantern] == messages[torch]


def test_make_functional_with_buffers_runs_the_model_with_given_state():
    results = {}
    for m, ft in FUNCTORCH.items():
        model = _model(m)
        func, params, buffers = _quietly(ft.make_functional_with_buffers, model)
        doubled = tuple(2 * p for p in params)
        results[m] = (func(params, buffers, _input(m)), func(doubled, buffers, _input(m)), func.param_names,
                      func.buffer_names, [p.requires_grad for p in params], [p is q for p, q in
                                                                                zip(params, model.parameters())],
                      func.stateless_model[0].weight.device.type, len(list(func.stateless_model.parameters())))
    assert_same(results[lantern][:2], results[torch][:2], atol=1e-6, rtol=1e-5)
    assert results[lantern][2:] == results[torch][2:]


def test_make_functional_of_tied_weights_and_without_autograd_tracking():
    outcomes = {}
    for m, ft in FUNCTORCH.items():
        tied = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.Linear(2, 2))
        tied[1].weight = tied[0].weight
        func, params = _quietly(ft.make_functional, tied, disable_autograd_tracking=True)
        grads = _quietly(lambda: ft.grad(lambda ps: func(ps, m.ones(1, 2)).square().sum())(params))
        outcomes[m] = (func.param_names, [p.requires_grad for p in params], [tuple(g.shape) for g in grads])
    assert outcomes[lantern] == outcomes[torch]


def test_make_functional_refuses_a_model_with_buffers():
    messages = []
    for m, ft in FUNCTORCH.items():
        with pytest.raises(RuntimeError) as caught:
            _quietly(ft.make_functional, _model(m))
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_combine_state_for_ensemble_under_vmap_matches_torch():
    results = {}
    for m, ft in FUNCTORCH.items():
        models = [_model(m, seed) for seed in range(3)]
        for model in models:
            model.eval()
        fmodel, params, buffers = _quietly(ft.combine_state_for_ensemble, models)
        out = _quietly(lambda: ft.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, _input(m)))
        results[m] = out, [p.requires_grad for p in params], [tuple(b.shape) for b in buffers]
    assert_same(results[lantern][0], results[torch][0], atol=1e-6, rtol=1e-5)
    assert results[lantern][1:] == results[torch][1:]


@pytest.mark.parametrize("models", ["none", "modes", "classes"])
def test_combine_state_for_ensemble_errors_match_torch(models):
    messages = []
    for m, ft in FUNCTORCH.items():
        chosen = {"none": [], "modes": [m.nn.Linear(2, 2), m.nn.Linear(2, 2).eval()],
                  "classes": [m.nn.Linear(2, 2), m.nn.Sequential(m.nn.Linear(2, 2))]}[models]
        with pytest.raises(RuntimeError) as caught:
            _quietly(ft.combine_state_for_ensemble, chosen)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_jvp_with_respect_to_a_functional_modules_parameters_matches_torch():
    """In eval mode (in training mode torch refuses batch norm's update of its captured running statistics)."""
    results = {}
    for m, ft in FUNCTORCH.items():
        func, params, buffers = _quietly(ft.make_functional_with_buffers, _model(m))
        func.eval()
        tangents = tuple(m.ones_like(p) for p in params)
        results[m] = _quietly(ft.jvp, lambda ps: func(ps, buffers, _input(m)), (params,), (tangents,))
    assert_same(results[lantern], results[torch], atol=1e-5, rtol=1e-5)
