"""relu's compiled backward (nn_activation.relu_backward_compiled over nn_activation_numba.relu_backward) against the
NumPy mask version it replaces and the readable derivative: the same bits, nan, inf and -0.0 in the gradient and
nan in the result included, at one and two intra-op threads."""
import numpy as np
import pytest
import torch

import lantern
from lantern.core import intra_op
from lantern.ops import nn_activation
from lantern.ops.nn_activation import relu_backward_on_arrays
from test_ops_specialisations import calls_of

pytest.importorskip("numba")


def values(n, dtype, seed):
    data = np.random.default_rng(seed).standard_normal(n)
    data[::7] = 0
    return lantern.tensor(data, dtype=dtype)


def special(grad, result):
    grad[1], grad[2], grad[3], grad[4] = float("nan"), float("inf"), float("-inf"), -0.0
    result[2], result[5], result[6] = float("nan"), -0.0, float("inf")
    return grad, result


@pytest.mark.parametrize("n", [1, 17, 300_001])  # past intra_op's chunk: two ranges at two threads
@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_relu_backward_matches_the_mask(n, dtype, threads, monkeypatch):
    grad, result = values(n, dtype, 0), values(n, dtype, 1).relu()
    if n > 6:
        grad, result = special(grad, result)
    before = intra_op.num_threads()
    intra_op.set_num_threads(threads)
    try:
        with lantern.reference_mode(False):
            with calls_of(nn_activation.relu_backward_compiled) as calls:
                compiled = relu_backward_on_arrays(grad, result).numpy()
            assert calls
            monkeypatch.setattr(nn_activation, "compiled_relu_backward_applies", lambda xp, grad: False)
            masked = relu_backward_on_arrays(grad, result).numpy()
    finally:
        intra_op.set_num_threads(before)
    bits = f"i{compiled.itemsize}"
    assert np.array_equal(compiled.view(bits), masked.view(bits))
    expected = torch.where(torch.from_numpy(result.numpy()) > 0, torch.from_numpy(grad.numpy()), 0).numpy()
    assert np.array_equal(compiled.view(bits), expected.view(bits))


def test_reference_mode_keeps_the_readable_derivative():
    x = values(50, lantern.float32, 0).requires_grad_()
    with lantern.reference_mode(), calls_of(nn_activation.relu_backward_compiled) as calls:
        x.relu().backward(values(50, lantern.float32, 1))
    assert not calls
    assert np.array_equal(x.grad.numpy(), np.where(x.detach().numpy() > 0, values(50, lantern.float32, 1).numpy(), 0))
