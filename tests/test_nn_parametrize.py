"""torch.nn.utils.parametrize and parametrizations.weight_norm against torch: class swap, reprs, state_dict keys,
values, gradients, assignment through right_inverse, caching, removal and errors."""
import numpy as np
import pytest
import torch

import lantern
from nn_oracle import same, same_error


def _modules(lib):
    """Parametrizations written once for either library."""
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    class Scale(lib.nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, X):
            return X / 2

    class ToDouble(lib.nn.Module):
        def forward(self, X):
            return X.double()

    return Symmetric, Scale, ToDouble


def _pair(make):
    theirs, ours = make(torch), make(lantern)
    ours.load_state_dict({k: lantern.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _symmetric_scaled(lib, layer):
    Symmetric, Scale, _ = _modules(lib)
    lib.nn.utils.parametrize.register_parametrization(layer, "weight", Symmetric())
    lib.nn.utils.parametrize.register_parametrization(layer, "weight", Scale())
    return layer


def _values(model):
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}


def _assert_same_state(ours, theirs):
    a, b = _values(ours), _values(theirs)
    assert list(a) == list(b)
    for key in b:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-6, err_msg=key)


def test_register_chain_matches_torch():
    ours, theirs = _pair(lambda lib: lib.nn.Linear(3, 3))
    ours, theirs = _symmetric_scaled(lantern, ours), _symmetric_scaled(torch, theirs)
    assert repr(ours) == repr(theirs) and type(ours).__name__ == "ParametrizedLinear"
    assert lantern.nn.utils.parametrize.type_before_parametrizations(ours) is lantern.nn.Linear
    _assert_same_state(ours, theirs)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-6)
    theirs(torch.tensor(x)).sum().backward()
    ours(lantern.tensor(x)).sum().backward()
    np.testing.assert_allclose(ours.parametrizations.weight.original.grad.numpy(),
                               theirs.parametrizations.weight.original.grad.numpy(), rtol=1e-6)


def test_assignment_goes_through_right_inverse():
    ours, theirs = _pair(lambda lib: lib.nn.Linear(3, 3))
    ours, theirs = _symmetric_scaled(lantern, ours), _symmetric_scaled(torch, theirs)
    value = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    theirs.weight = torch.tensor(value)
    ours.weight = lantern.tensor(value)
    _assert_same_state(ours, theirs)


def test_cached_computes_once():
    for lib in (torch, lantern):
        layer = _symmetric_scaled(lib, lib.nn.Linear(3, 3))
        with lib.nn.utils.parametrize.cached():
            assert layer.weight is layer.weight
        assert layer.weight is not layer.weight


@pytest.mark.parametrize("leave_parametrized", [True, False])
def test_remove_matches_torch(leave_parametrized):
    ours, theirs = _pair(lambda lib: lib.nn.Linear(3, 3))
    ours, theirs = _symmetric_scaled(lantern, ours), _symmetric_scaled(torch, theirs)
    kept = ours.parametrizations.weight.original
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight", leave_parametrized=leave_parametrized)
    lantern.nn.utils.parametrize.remove_parametrizations(ours, "weight", leave_parametrized=leave_parametrized)
    assert type(ours) is lantern.nn.Linear and ours.weight is kept
    assert repr(ours) == repr(theirs)
    _assert_same_state(ours, theirs)


def test_errors_match_torch():
    def register(lib, name="weight", which=0, unsafe=False, layer=None):
        layer = layer or lib.nn.Linear(2, 2)
        return lib.nn.utils.parametrize.register_parametrization(layer, name, _modules(lib)[which](), unsafe=unsafe)

    same_error(lambda lib: register(lib, "nope"))
    same_error(lambda lib: register(lib, which=2))
    same_error(lambda lib: register(lib, which=2, layer=register(lib)))
    same_error(lambda lib: lib.nn.utils.parametrize.remove_parametrizations(lib.nn.Linear(2, 2), "weight"))
    same(lambda lib: register(lib, which=2, unsafe=True).weight.dtype.is_floating_point)


# ---- parametrizations.weight_norm --------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim):
    ours, theirs = _pair(lambda lib: lib.nn.Conv1d(2, 3, 3, dtype=lib.float64))
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    lantern.nn.utils.parametrizations.weight_norm(ours, dim=dim)
    assert repr(ours) == repr(theirs)
    _assert_same_state(ours, theirs)
    x = np.random.default_rng(1).standard_normal((2, 2, 6))
    theirs(torch.tensor(x)).pow(2).sum().backward()
    ours(lantern.tensor(x)).pow(2).sum().backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, err_msg=name)


def test_weight_norm_loads_old_weight_g_weight_v_checkpoints():
    old = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2)).state_dict()
    theirs = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 2))
    ours = lantern.nn.utils.parametrizations.weight_norm(lantern.nn.Linear(3, 2))
    theirs.load_state_dict(old)
    ours.load_state_dict({k: lantern.tensor(v.numpy()) for k, v in old.items()})
    _assert_same_state(ours, theirs)


def test_appended_right_inverse_is_checked_as_in_torch():
    def append_changing_dtype(lib):
        class Identity(lib.nn.Module):
            def forward(self, X):
                return X

            def right_inverse(self, X):
                return X.double()

        layer = lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "weight", _modules(lib)[1]())
        return lib.nn.utils.parametrize.register_parametrization(layer, "weight", Identity())

    same_error(append_changing_dtype)
