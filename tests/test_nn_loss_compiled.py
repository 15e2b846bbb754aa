"""Cross-entropy's compiled kernels (lantern/ops/nn_loss_numba.py) give bitwise the NumPy versions' results, and
step aside for the cases those handle alone (ignored or out-of-range targets, 'none' reduction, reference mode)."""
import numpy as np
import pytest

import lantern
import lantern.nn.functional as F
from lantern.ops import nn_loss_classification as loss_ops

pytest.importorskip("numba")


def _grads(logits, target, fast, monkeypatch, **kwargs):
    """The logits' gradient of cross_entropy (times 3, so that the loss's gradient is not 1) and what each call of
    the compiled backward returned (True: it served the backward)."""
    x = lantern.tensor(logits, requires_grad=True)
    calls, original = [], loss_ops._cross_entropy_backward_compiled
    monkeypatch.setattr(loss_ops, "_cross_entropy_backward_compiled",
                        lambda *args: (calls.append(original(*args)), calls[-1])[1])
    with lantern.reference_mode(not fast):
        (F.cross_entropy(x[:, ::2], lantern.tensor(target), **kwargs) * 3).sum().backward()
    monkeypatch.undo()
    return x.grad.numpy(), calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("shape", [(128, 10), (37, 101), (1, 1)])
def test_compiled_cross_entropy_backward_equals_numpy(shape, reduction, dtype, monkeypatch):
    """Non-contiguous logits (every other column), large and tiny ones among them."""
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((shape[0], 2 * shape[1])) * rng.choice([1e-3, 1, 30], (shape[0], 1))).astype(dtype)
    target = rng.integers(0, shape[1], shape[0])
    ours, calls = _grads(logits, target, True, monkeypatch, reduction=reduction)
    theirs, none = _grads(logits, target, False, monkeypatch, reduction=reduction)
    assert calls == [True] and none == []
    assert ours.dtype == theirs.dtype and np.array_equal(ours.view(np.uint8), theirs.view(np.uint8))


@pytest.mark.parametrize("target,kwargs", [([1, -100, 2], {}), ([1, 5, 2], dict(ignore_index=5)),
                                           ([1, 0, 2], dict(reduction="none"))])
def test_compiled_cross_entropy_backward_leaves_ignored_targets_to_numpy(target, kwargs, monkeypatch):
    logits = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    ours, calls = _grads(logits, target, True, monkeypatch, **kwargs)
    theirs, _ = _grads(logits, target, False, monkeypatch, **kwargs)
    assert calls == ([] if "reduction" in kwargs else [False])
    assert np.array_equal(ours, theirs)


def _forward(logits, target, fast, monkeypatch, **kwargs):
    """cross_entropy's value and softmax (saved for backward), and what each call of the compiled forward returned
    (None: it left the rows to the NumPy version)."""
    calls, original = [], loss_ops._cross_entropy_rows_compiled
    monkeypatch.setattr(loss_ops, "_cross_entropy_rows_compiled",
                        lambda *args: (calls.append(original(*args)), calls[-1])[1])
    with lantern.reference_mode(not fast):
        loss, probs = lantern.ops.call_by_name.call_op("_cross_entropy_index", lantern.tensor(logits)[:, ::2],
                                                      lantern.tensor(target), *kwargs.values())
    monkeypatch.undo()
    return [loss.numpy(), probs.numpy()], [c is not None for c in calls]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("shape", [(128, 10), (37, 101), (1, 1)])
def test_compiled_cross_entropy_forward_equals_numpy(shape, reduction, dtype, monkeypatch):
    """Non-contiguous logits, large and tiny ones, and rows with inf, -inf, nan and signed zeros."""
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((shape[0], 2 * shape[1])) * rng.choice([1e-3, 1, 30], (shape[0], 1))).astype(dtype)
    if shape[0] > 4:
        logits[:4, :4] = [[np.inf, 1, 2, 3], [-np.inf, 0, 1, 2], [np.nan, 1, 2, 3], [-0.0, 0.0, -0.0, 0.0]]
    target = rng.integers(0, shape[1], shape[0])
    ours, calls = _forward(logits, target, True, monkeypatch, reduction=reduction, ignore_index=-100)
    theirs, none = _forward(logits, target, False, monkeypatch, reduction=reduction, ignore_index=-100)
    assert calls == [True] and none == []
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("target,ignore_index", [([1, -100, 2], -100), ([1, 5, 2], 5)])
def test_compiled_cross_entropy_forward_leaves_ignored_targets_to_numpy(target, ignore_index, monkeypatch):
    logits = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    ours, calls = _forward(logits, target, True, monkeypatch, reduction=1, ignore_index=ignore_index)
    theirs, _ = _forward(logits, target, False, monkeypatch, reduction=1, ignore_index=ignore_index)
    assert calls == [False]
    for a, b in zip(ours, theirs):
        assert np.array_equal(a, b)
