"""torch.nn.utils.weight_norm / remove_weight_norm: same parameters, outputs and gradients as torch."""
import warnings

import numpy as np
import pytest
import torch

import lantern


def _pair(make, name="weight", dim=0):
    """A torch layer and a lantern layer with the same weights, both weight-normed."""
    theirs, ours = make(torch), make(lantern)
    ours.load_state_dict({k: lantern.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.nn.utils.weight_norm(theirs, name, dim)
        lantern.nn.utils.weight_norm(ours, name, dim)
    theirs_warning, ours_warning = [(w.category, str(w.message)) for w in caught]
    assert ours_warning == theirs_warning
    return ours, theirs


LAYERS = {
    "linear dim 0": (lambda lib: lib.nn.Linear(4, 3, dtype=lib.float64), 0, (5, 4)),
    "linear dim None": (lambda lib: lib.nn.Linear(4, 3, dtype=lib.float64), None, (5, 4)),
    "conv dim 1": (lambda lib: lib.nn.Conv1d(2, 3, 3, dtype=lib.float64), 1, (2, 2, 6)),
    "conv dim 2": (lambda lib: lib.nn.Conv1d(2, 3, 3, dtype=lib.float64), 2, (2, 2, 6)),
}


@pytest.mark.parametrize("case", sorted(LAYERS))
def test_forward_backward_and_state_match_torch(case):
    make, dim, shape = LAYERS[case]
    ours, theirs = _pair(make, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-12)
    x = np.random.default_rng(0).standard_normal(shape)
    theirs(torch.tensor(x)).pow(2).sum().backward()
    ours(lantern.tensor(x)).pow(2).sum().backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, err_msg=name)


def test_remove_restores_one_parameter():
    ours, theirs = _pair(LAYERS["conv dim 1"][0], dim=1)
    torch.nn.utils.remove_weight_norm(theirs)
    lantern.nn.utils.remove_weight_norm(ours)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-12)
    assert len(ours._forward_pre_hooks) == len(theirs._forward_pre_hooks) == 0


def test_errors_match_torch():
    ours, theirs = _pair(LAYERS["linear dim 0"][0])
    for lib, layer in ((torch, theirs), (lantern, ours)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter "
                                                   "weight"):
                lib.nn.utils.weight_norm(layer)
        with pytest.raises(ValueError, match="weight_norm of 'bias' not found in Linear"):
            lib.nn.utils.remove_weight_norm(layer, "bias")
