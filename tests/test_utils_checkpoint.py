"""torch.utils.checkpoint: the same gradients as without checkpointing, and as torch's checkpoint."""
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcheck

import lantern
import lantern.utils.checkpoint as lcheck


def _models(dropout=0.0):
    """The same small network in both libraries (torch's weights copied into lantern's)."""
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(dropout), torch.nn.Tanh(),
                                 torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    ours = lantern.nn.Sequential(lantern.nn.Linear(4, 8), lantern.nn.Dropout(dropout), lantern.nn.Tanh(),
                                 lantern.nn.Linear(8, 8), lantern.nn.ReLU(), lantern.nn.Linear(8, 3))
    ours.load_state_dict({k: lantern.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _gradients(lib, model, x, run):
    """Gradients of sum(run(model, x)²) for x and every parameter, as NumPy arrays."""
    x = lib.tensor(x, requires_grad=True)
    lib.manual_seed(7)
    run(model, x).pow(2).sum().backward()
    return [x.grad.detach().numpy()] + [p.grad.detach().numpy() for p in model.parameters()]


RUNS = {
    "checkpoint": lambda lib, reentrant: lambda m, x: lib.utils.checkpoint.checkpoint(m, x, use_reentrant=reentrant),
    "sequential": lambda lib, reentrant: lambda m, x: lib.utils.checkpoint.checkpoint_sequential(
        m, 3, x, use_reentrant=reentrant),
}


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("form", sorted(RUNS))
def test_gradients_match_torch(form, reentrant):
    ours, theirs = _models()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    got = _gradients(lantern, ours, x, RUNS[form](lantern, reentrant))
    expected = _gradients(torch, theirs, x, RUNS[form](torch, reentrant))
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reentrant", [False, True])
def test_recomputation_replays_the_random_state(reentrant):
    """Dropout draws the same mask when the forward runs again, so the gradients are those of the plain run."""
    ours, _ = _models(dropout=0.5)
    x = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    plain = _gradients(lantern, ours, x, lambda m, t: m(t))
    for p in ours.parameters():
        p.grad = None
    checkpointed = _gradients(lantern, ours, x, RUNS["checkpoint"](lantern, reentrant))
    for a, b in zip(checkpointed, plain):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_warnings_and_errors_as_torch():
    for lib in (torch, lantern):
        x = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.utils.checkpoint.checkpoint(lambda t: t.sin(), x)
        assert "the use_reentrant parameter should be passed explicitly" in str(caught[-1].message)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: extra"):
            lib.utils.checkpoint.checkpoint(lambda t, extra: t, x, use_reentrant=True, extra=1)
        with pytest.raises(RuntimeError, match="Only tuple of tensors is supported"):
            lib.utils.checkpoint.detach_variable([x])
    assert set(lcheck.__all__) <= set(tcheck.__all__)


def test_nondeterministic_function_is_caught():
    """The recomputation saves fewer tensors than the forward did: torch's CheckpointError and message."""
    messages = []
    for lib in (torch, lantern):
        calls = []

        def changes_each_time(t):
            calls.append(1)
            return t.sin().cos() if len(calls) == 1 else t.sin()

        y = lib.utils.checkpoint.checkpoint(changes_each_time, lib.ones(2, requires_grad=True), use_reentrant=False)
        with pytest.raises(lib.utils.checkpoint.CheckpointError) as info:
            y.sum().backward()
        messages.append(str(info.value).replace("‑", "-"))
    assert messages[1].split("Tip:")[0] == messages[0].split("Tip:")[0]
    assert "Number of tensors saved during forward: 2" in messages[1]
