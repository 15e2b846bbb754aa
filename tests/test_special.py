"""torch.special: lantern.special's functions give torch's values, dtypes and gradients."""
import numpy as np
import pytest
import torch

import lantern
import lantern.special
from oracle import check, noncontig

VALUES = np.array([[-2.5, -1.0, 0.0, 1e-3], [0.5, 1.0, 3.0, np.nan]])
UNIT = np.array([[0.05, 0.2, 0.5], [0.7, 0.9, 0.99]])

UNARY = {
    "expit": VALUES, "gammaln": np.abs(VALUES) + 0.1, "psi": np.abs(VALUES) + 0.1, "digamma": np.abs(VALUES) + 0.1,
    "erf": VALUES, "erfc": VALUES, "erfinv": UNIT, "exp2": VALUES, "expm1": VALUES, "i0": VALUES,
    "log1p": np.abs(VALUES), "logit": UNIT, "sinc": VALUES, "round": VALUES * 1.7, "ndtr": VALUES, "entr": VALUES,
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_matches_torch(name, dtype):
    check(lambda lib, x: getattr(lib.special, name)(x), noncontig(UNARY[name].astype(dtype)))


@pytest.mark.parametrize("name", ["ndtr", "entr", "expit"])
def test_integer_input_promotes_as_torch(name):
    check(lambda lib, x: getattr(lib.special, name)(x), np.array([-2, 0, 3], dtype=np.int64))


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_binary_matches_torch(name):
    x = np.array([[0.0, 0.0, 1.5, -2.0], [3.0, 0.0, 2.0, 0.5]])
    y = np.array([[0.0, np.nan, 0.5, 4.0], [-0.5, 2.0, np.inf, 1.0]])
    check(lambda lib, a, b: getattr(lib.special, name)(a, b), x, y)
    check(lambda lib, a: getattr(lib.special, name)(a, 2.0), x)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_reductions_match_torch(name):
    check(lambda lib, x: getattr(lib.special, name)(x, 1), noncontig(np.random.default_rng(0).random((3, 4))))


@pytest.mark.parametrize("name", ["ndtr", "entr", "expit", "logit", "xlog1py"])
def test_gradients_match_torch(name):
    x = np.array([0.2, 0.5, 1.5, 3.0])
    args = {"xlog1py": (x, x[::-1].copy())}.get(name, (x,))

    def grads(lib):
        tensors = [lib.tensor(a, requires_grad=True) for a in args]
        getattr(lib.special, name)(*tensors).sum().backward()
        return [t.grad.numpy() for t in tensors]

    for ours, theirs in zip(grads(lantern), grads(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_names_are_torch_special_names():
    assert set(lantern.special.__all__) <= set(torch.special.__all__)
