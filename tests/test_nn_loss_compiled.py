"""Cross-entropy's compiled kernels (lantern/ops/nn_loss_numba.py) give bitwise the NumPy versions' results, ignored
targets included, and step aside for the cases those handle alone (out-of-range targets, which raise; 'none'
reduction's backward; reference mode)."""
import numpy as np
import pytest

import lantern
import lantern.nn.functional as F
from lantern.ops import nn_loss_classification as loss_ops

pytest.importorskip("numba")


# (ignore_index, where it goes among the targets): none ignored, ~10% ignored with it outside [0, classes) (makemore's
# -1 padding, the default -100) or inside (a class the loss skips), every row ignored
IGNORED = [(-100, None), (-1, "some"), (-100, "some"), (3, "some"), (-100, "all")]


def _ignoring(target, ignore_index, where, rng):
    """target with ignore_index at ~10% of the rows (at least one), or at all of them."""
    target = target.copy()
    if where == "all":
        target[:] = ignore_index
    elif where == "some":
        target[rng.random(len(target)) < 0.1] = ignore_index
        target[len(target) // 2] = ignore_index
    return target


def _grads(logits, target, fast, monkeypatch, **kwargs):
    """The logits' gradient of cross_entropy (times -3, so that the loss's gradient is not 1 and an ignored row's
    zero factor is -0.0) and what each call of the compiled backward returned (True: it served the backward)."""
    x = lantern.tensor(logits, requires_grad=True)
    calls, original = [], loss_ops._cross_entropy_backward_compiled
    monkeypatch.setattr(loss_ops, "_cross_entropy_backward_compiled",
                        lambda *args: (calls.append(original(*args)), calls[-1])[1])
    with lantern.reference_mode(not fast):
        (F.cross_entropy(x[:, ::2], lantern.tensor(target), **kwargs) * -3).sum().backward()
    monkeypatch.undo()
    return x.grad.numpy(), calls


@pytest.mark.parametrize("ignore_index,ignored", IGNORED)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("shape", [(128, 10), (37, 101), (1, 1)])
def test_compiled_cross_entropy_backward_equals_numpy(shape, reduction, dtype, ignore_index, ignored, monkeypatch):
    """Non-contiguous logits (every other column), large and tiny ones among them."""
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((shape[0], 2 * shape[1])) * rng.choice([1e-3, 1, 30], (shape[0], 1))).astype(dtype)
    target = _ignoring(rng.integers(0, shape[1], shape[0]), ignore_index, ignored, rng)
    kwargs = dict(reduction=reduction, ignore_index=ignore_index)
    ours, calls = _grads(logits, target, True, monkeypatch, **kwargs)
    theirs, none = _grads(logits, target, False, monkeypatch, **kwargs)
    assert calls == [True] and none == []
    assert ours.dtype == theirs.dtype and np.array_equal(ours.view(np.uint8), theirs.view(np.uint8))


@pytest.mark.parametrize("target,kwargs", [([1, 8, 2], {}), ([1, -2, -1], dict(ignore_index=-1))])
def test_compiled_cross_entropy_backward_leaves_out_of_range_targets_to_numpy(target, kwargs):
    """A target out of range makes the kernel step aside (the forward already raised the NumPy version's error)."""
    probs, out = np.full((3, 8), 0.125, np.float32), np.empty((3, 8), np.float32)
    assert not loss_ops._cross_entropy_backward_compiled(out, np.float32(1), probs, np.array(target), 1,
                                                         kwargs.get("ignore_index", -100))


def test_compiled_cross_entropy_backward_leaves_unreduced_loss_to_numpy(monkeypatch):
    logits = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    ours, calls = _grads(logits, [1, -100, 2], True, monkeypatch, reduction="none")
    theirs, _ = _grads(logits, [1, -100, 2], False, monkeypatch, reduction="none")
    assert calls == [] and np.array_equal(ours, theirs)


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


@pytest.mark.parametrize("ignore_index,ignored", IGNORED)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("shape", [(128, 10), (37, 101), (1, 1)])
def test_compiled_cross_entropy_forward_equals_numpy(shape, reduction, dtype, ignore_index, ignored, monkeypatch):
    """Non-contiguous logits, large and tiny ones, and rows with inf, -inf, nan and signed zeros (ignored ones among
    them where some rows are ignored: their loss is nan times 0, as the NumPy version's)."""
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((shape[0], 2 * shape[1])) * rng.choice([1e-3, 1, 30], (shape[0], 1))).astype(dtype)
    target = _ignoring(rng.integers(0, shape[1], shape[0]), ignore_index, ignored, rng)
    if shape[0] > 4:
        logits[:4, :8:2] = [[np.inf, 1, 2, 3], [-np.inf, 0, 1, 2], [np.nan, 1, 2, 3], [-0.0, 0.0, -0.0, 0.0]]
        if ignored:
            target[[0, 3]] = ignore_index
    with np.errstate(invalid="ignore"):  # every row ignored: the mean is 0 / 0, nan as in PyTorch
        ours, calls = _forward(logits, target, True, monkeypatch, reduction=reduction, ignore_index=ignore_index)
        theirs, none = _forward(logits, target, False, monkeypatch, reduction=reduction, ignore_index=ignore_index)
    assert calls == [True] and none == []
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("target,ignore_index,bad", [([1, 16, 2], -100, 16), ([1, -100, -1], -1, -100),
                                                     ([1, 3, 5], 3, 5)])
def test_compiled_cross_entropy_forward_leaves_out_of_range_targets_to_numpy(target, ignore_index, bad, monkeypatch):
    """The kernels step aside and the NumPy version raises its error, the same in both modes."""
    logits = np.random.default_rng(1).standard_normal((3, 10)).astype(np.float32)
    errors = []
    for fast in (True, False):
        with pytest.raises(IndexError) as error:
            _forward(logits, np.array(target), fast, monkeypatch, reduction=1, ignore_index=ignore_index)
        errors.append(str(error.value))
    assert errors[0] == errors[1] == f"Target {bad} is out of bounds."


def test_cross_entropy_with_ignored_rows_matches_torch():
    """makemore's call: (512, 27) float32 logits, ~10% of targets -1 (padding); also every row ignored."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((512, 54)).astype(np.float32)[:, ::2]
    for target in (_ignoring(rng.integers(0, 27, 512), -1, "some", rng), np.full(512, -1)):
        ours, theirs = lantern.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
        with lantern.reference_mode(False), np.errstate(invalid="ignore"):
            loss = F.cross_entropy(ours, lantern.tensor(target), ignore_index=-1)
            loss.backward()
        expected = torch.nn.functional.cross_entropy(theirs, torch.tensor(target), ignore_index=-1)
        expected.backward()
        np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-6, equal_nan=True)
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-7)
