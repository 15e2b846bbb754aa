"""torch.nn.utils.spectral_norm / remove_spectral_norm against torch: buffers, power iteration, outputs, gradients,
state-dict versions and the old checkpoint form."""
import collections

import numpy as np
import pytest
import torch

import lantern
from nn_oracle import same_error


def _pair(make, **kwargs):
    """The same layer in both libraries, spectral-normed after the same seed (so u and v start equal)."""
    theirs, ours = make(torch), make(lantern)
    ours.load_state_dict({k: lantern.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    torch.manual_seed(0)
    lantern.manual_seed(0)
    return lantern.nn.utils.spectral_norm(ours, **kwargs), torch.nn.utils.spectral_norm(theirs, **kwargs)


def _assert_states_equal(ours, theirs):
    ours_state, theirs_state = ours.state_dict(), theirs.state_dict()
    assert list(ours_state) == list(theirs_state)
    for key in theirs_state:
        np.testing.assert_allclose(ours_state[key].numpy(), theirs_state[key].numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=key)


LAYERS = {
    "linear": (lambda lib: lib.nn.Linear(5, 3, dtype=lib.float64), (4, 5), {}),
    "conv": (lambda lib: lib.nn.Conv2d(2, 3, 3, dtype=lib.float64), (2, 2, 5, 5), {"n_power_iterations": 3}),
    "conv transpose": (lambda lib: lib.nn.ConvTranspose1d(2, 4, 3, dtype=lib.float64), (2, 2, 6), {}),
    "linear dim 1": (lambda lib: lib.nn.Linear(5, 3, dtype=lib.float64), (4, 5), {"dim": 1, "eps": 1e-6}),
}


@pytest.mark.parametrize("case", sorted(LAYERS))
def test_training_and_eval_steps_match_torch(case):
    make, shape, kwargs = LAYERS[case]
    ours, theirs = _pair(make, **kwargs)
    _assert_states_equal(ours, theirs)
    x = np.random.default_rng(0).standard_normal(shape)
    for step in range(2):
        theirs(torch.tensor(x)).pow(2).sum().backward()
        ours(lantern.tensor(x)).pow(2).sum().backward()
        _assert_states_equal(ours, theirs)  # the power iteration moved u and v alike
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, err_msg=f"{name} step {step}")
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(ours(lantern.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10)
    _assert_states_equal(ours, theirs)


def test_metadata_records_the_version():
    ours, theirs = _pair(LAYERS["linear"][0])
    assert ours.state_dict()._metadata[""]["spectral_norm"] == theirs.state_dict()._metadata[""]["spectral_norm"] \
        == {"weight.version": 1}


def test_old_checkpoint_form_loads_as_in_torch():
    """A version-None checkpoint stored weight (= weight_orig / σ) instead of weight_v; v is solved for on load."""
    ours, theirs = _pair(LAYERS["linear"][0])
    rng = np.random.default_rng(1)
    orig, u = rng.standard_normal((3, 5)), rng.standard_normal(3)
    old = {"bias": np.zeros(3), "weight_orig": orig, "weight": orig / 2.5, "weight_u": u / np.linalg.norm(u)}
    theirs.load_state_dict(collections.OrderedDict((k, torch.tensor(v)) for k, v in old.items()))
    ours.load_state_dict(collections.OrderedDict((k, lantern.tensor(v)) for k, v in old.items()))
    _assert_states_equal(ours, theirs)


def test_remove_matches_torch():
    ours, theirs = _pair(LAYERS["conv"][0])
    torch.nn.utils.remove_spectral_norm(theirs)
    lantern.nn.utils.remove_spectral_norm(ours)
    _assert_states_equal(ours, theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]


def test_errors_match_torch():
    same_error(lambda lib: lib.nn.utils.spectral_norm(lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2))))
    same_error(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2), n_power_iterations=0))
    same_error(lambda lib: lib.nn.utils.remove_spectral_norm(lib.nn.Linear(2, 2)))
