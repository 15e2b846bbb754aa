"""embedding's backward as a numba loop (lantern/ops/nn_misc_numba.py), held to the readable SciPy product."""
import numpy as np
import pytest
import torch

import lantern
from lantern.core.reference import reference_mode

pytest.importorskip("numba")


def _weight_grad(indices, grad, dtype):
    weight = lantern.zeros(7, 3, dtype=dtype, requires_grad=True)
    lantern.nn.functional.embedding(lantern.tensor(indices), weight).backward(lantern.tensor(grad).to(dtype))
    return weight.grad.numpy()


@pytest.mark.parametrize("dtype", [lantern.float32, lantern.float64])
def test_compiled_rows_match_the_sparse_product(dtype):
    """The same sums, in the same order (bitwise), as the readable path and as torch, repeated indices included."""
    rng = np.random.default_rng(3)
    indices = rng.integers(0, 7, (4, 5))
    grad = rng.standard_normal((4, 5, 3))
    fast = _weight_grad(indices, grad, dtype)
    with reference_mode():
        readable = _weight_grad(indices, grad, dtype)
    np.testing.assert_array_equal(fast, readable)
    weight = torch.zeros(7, 3, dtype=getattr(torch, str(dtype).split(".")[1]), requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(indices), weight).backward(torch.tensor(grad).to(weight.dtype))
    np.testing.assert_allclose(fast, weight.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_out_of_range_rows_fall_back_to_the_readable_error():
    """embedding_dense_backward called with an index outside the weight reports what the readable path reports."""
    grad = lantern.ones(2, 3)
    errors = []
    for reference in (False, True):
        with reference_mode(reference), pytest.raises(Exception) as caught:
            lantern.embedding_dense_backward(grad, lantern.tensor([1, 9]), 5, -1, False)
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]


def test_without_numba_the_sparse_product_runs(monkeypatch):
    import sys
    from lantern.ops import nn_misc, numba_kernels
    rng = np.random.default_rng(4)
    indices, grad = rng.integers(0, 7, (6,)), rng.standard_normal((6, 3))
    fast = _weight_grad(indices, grad, lantern.float32)
    monkeypatch.setitem(sys.modules, "numba", None)                  # `import numba` now raises ImportError
    monkeypatch.delitem(sys.modules, "lantern.ops.nn_misc_numba", raising=False)
    monkeypatch.delattr(lantern.ops, "nn_misc_numba", raising=False)
    monkeypatch.delitem(numba_kernels._LOADED, "lantern.ops.nn_misc_numba", raising=False)
    assert nn_misc._rows_kernels() is None
    np.testing.assert_array_equal(_weight_grad(indices, grad, lantern.float32), fast)
