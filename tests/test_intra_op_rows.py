"""Softmax, log_softmax and layer_norm (forward and backward) split by rows on the intra-op threads give the bits of
one call: each row's statistics are its own (docs/internals/intra-op-threads.md)."""
import numpy as np
import pytest

import lantern
import lantern.nn.functional as F
from intra_op_fixtures import fast_paths, threads  # noqa: F401 (fixtures)
from lantern.core import intra_op


@pytest.fixture
def pool_calls(monkeypatch):
    """The chunk counts of the parallel runs made meanwhile."""
    calls = []
    run = intra_op.run_on_pool
    monkeypatch.setattr(intra_op, "run_on_pool", lambda ranges, fn: (calls.append(len(ranges)), run(ranges, fn)))
    return calls


def values_and_grad(fn, x, seed=1):
    x = x.detach().clone().requires_grad_()
    y = fn(x)
    y.backward(lantern.tensor(np.random.default_rng(seed).standard_normal(y.shape).astype(np.float32)))
    return y.detach().numpy(), x.grad.numpy()


def transposed(*shape, seed=0):
    """A non-contiguous float32 input of `shape` (a transposed view)."""
    data = np.random.default_rng(seed).standard_normal(shape[::-1]).astype(np.float32) * 3
    return lantern.tensor(data).permute(*range(len(shape) - 1, -1, -1))


W, B = (lantern.tensor(np.random.default_rng(s).standard_normal(96).astype(np.float32)) for s in (2, 3))

KERNELS = {
    "softmax last dim": (lambda x: F.softmax(x, -1), (256, 700)),
    "softmax middle dim": (lambda x: F.softmax(x, 1), (256, 300, 5)),
    "log_softmax": (lambda x: F.log_softmax(x, -1), (256, 700)),
    "layer_norm affine": (lambda x: F.layer_norm(x, (96,), W, B), (24, 100, 96)),
    "layer_norm plain": (lambda x: F.layer_norm(x, (6, 16)), (2000, 6, 16)),
}


@pytest.mark.parametrize("name", KERNELS)
def test_rows_on_two_threads_give_the_bits_of_one(threads, pool_calls, name):
    fn, shape = KERNELS[name]
    x = transposed(*shape)
    threads(2)
    parallel = values_and_grad(fn, x)
    assert len(pool_calls) >= 2 and set(pool_calls) == {2}, "forward and backward should each run on both threads"
    threads(1)
    for got, expected in zip(parallel, values_and_grad(fn, x)):
        assert np.array_equal(got, expected)


def test_a_softmax_along_the_leading_dim_or_of_few_rows_runs_serially(threads, pool_calls):
    threads(2)
    F.softmax(transposed(700, 256), 0)
    F.softmax(transposed(4, 1000), 1)
    assert pool_calls == []
