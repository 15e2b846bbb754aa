"""lantern.core.parallel_gemm and the BLAS thread limit: one pool does the parallel work at more than one thread.
A float32 GEMM split in blocks on the pool must give the bits of one BLAS call (so results do not depend on the
thread count; OpenBLAS's float64 kernels round a block's edge differently, as its own threads do), and BLAS runs
one thread exactly while that pool is in use."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from threadpoolctl import ThreadpoolController

import lantern
from intra_op_fixtures import fast_paths, threads  # noqa: F401 (fixtures)
from lantern.core import intra_op, parallel_gemm


def blas_counts():
    return {lib.num_threads for lib in ThreadpoolController().select(user_api="blas").lib_controllers}


def operands(a_shape, b_shape, dtype, transposed):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape[:-2] + b_shape[:-3:-1] if transposed else b_shape).astype(dtype)
    return a, (b.swapaxes(-1, -2) if transposed else b)


SHAPES = [  # (a, b): blocks of rows, of columns (few rows), of the batch, of rows of each batch entry
    ((300, 257), (257, 130)),
    ((16, 512), (512, 1100)),
    ((8, 128, 96), (8, 96, 128)),
    ((1, 700, 96), (1, 96, 200)),
]


@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed", [False, True], ids=["b", "b transposed"])
def test_blocks_give_the_bits_of_one_call(threads, a_shape, b_shape, dtype, transposed, monkeypatch):
    threads(2)
    a, b = operands(a_shape, b_shape, dtype, transposed)
    blocks = []
    monkeypatch.setattr(intra_op, "run_on_pool",
                        lambda ranges, fn: [blocks.append(r) or fn(*r) for r in ranges] and None)
    got = parallel_gemm.matmul_on_pool(a, b)
    assert len(blocks) == 2
    if dtype == np.float32:
        assert np.array_equal(got, np.matmul(a, b))
    else:
        np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got, torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy(),
                               rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4 if dtype == np.float32 else 1e-10)


def test_blocks_run_on_two_threads_into_a_given_out(threads):
    threads(2)
    a, b = operands((512, 256), (256, 256), np.float32, False)
    out = np.empty((512, 256), np.float32)
    assert parallel_gemm.matmul(a, b, out=out) is out
    assert np.array_equal(out, np.matmul(a, b))


@pytest.mark.parametrize("case", ["one thread", "reference mode", "small", "mixed dtypes", "complex", "matrix @ vector"])
def test_one_blas_call_where_blocks_do_not_apply(threads, case, monkeypatch):
    threads(1 if case == "one thread" else 2)
    a, b = operands((512, 256), (256, 256), np.float32, False)
    a = {"small": a[:8, :8], "mixed dtypes": a.astype(np.float64), "complex": a.astype(np.complex64)}.get(case, a)
    b = {"small": b[:8, :8], "matrix @ vector": b[:, 0]}.get(case, b)
    monkeypatch.setattr(parallel_gemm, "matmul_on_pool", lambda *args: pytest.fail("split"))
    with lantern.reference_mode(case == "reference mode"):
        assert np.array_equal(parallel_gemm.matmul(a, b), np.matmul(a, b))


def test_blas_runs_one_thread_while_the_pool_works(threads):
    threads(2)
    assert lantern.get_num_threads() == 2 and blas_counts() == {1}
    with lantern.reference_mode():
        assert lantern.get_num_threads() == 2 and blas_counts() == {2}
    assert blas_counts() == {1}
    threads(1)
    assert lantern.get_num_threads() == 1 and blas_counts() == {1}


def linear_layers():
    return lantern.nn.Sequential(lantern.nn.Linear(784, 512), lantern.nn.ReLU(), lantern.nn.Linear(512, 64)), (128, 784)


def lstm():
    """Its weight gradient (512 × 512 @ 512 × 128, all steps at once) is large enough to split."""
    return lantern.nn.LSTM(64, 128), (32, 16, 64)


def step(threads, count, build):
    threads(count)
    lantern.manual_seed(0)
    model, shape = build()
    out = model(lantern.randn(*shape))
    out = out[0] if isinstance(out, tuple) else out
    out.square().sum().backward()
    return [out.detach()] + [p.grad for p in model.parameters()]


@pytest.mark.parametrize("build", [linear_layers, lstm])
def test_float32_layers_give_the_same_bits_at_one_and_two_threads(threads, build):
    one, two = step(threads, 1, build), step(threads, 2, build)
    for x, y in zip(one, two):
        assert np.array_equal(x.numpy(), y.numpy())


def test_the_first_matmul_holds_blas_to_one_thread_in_a_fresh_process():
    """Without set_num_threads, lantern's first product reads the count (BLAS's, 2 here) and holds BLAS to one
    thread before any threaded BLAS call could leave its threads spinning."""
    script = ("import lantern\n"
              "from threadpoolctl import threadpool_info\n"
              "def blas(): return sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'})\n"
              "before = blas()\n"
              "lantern.randn(4, 4) @ lantern.randn(4, 4)\n"
              "print(before, lantern.get_num_threads(), blas())\n")
    env = {k: v for k, v in os.environ.items() if k != "LANTERN_REFERENCE"}
    env.update(OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.split("\n")[0] == "[2] 2 [1]", done.stderr
