"""Fused numba kernels at more than one thread: ranges of the flat element index on lantern's intra-op pool,
never numba's own (OpenMP) threading layer."""
import numpy as np
import pytest

import lantern
from intra_op_fixtures import fast_paths, threads  # noqa: F401 (fixtures)
from lantern.core import intra_op

fusion_numba = pytest.importorskip("lantern.jit.fusion_numba", reason="the fused kernels need numba")

SOURCE = "def kernel(n, i0, s1, o0):\n    for k in loop(n):\n        o0[k] = tanh_float32(i0[k]) * s1 + i0[k]"


def test_kernel_on_the_pool_gives_the_bits_of_one_call(threads, monkeypatch):
    threads(2)
    kernel = fusion_numba.compile_kernel(SOURCE, parallel=False)
    x = np.random.default_rng(0).standard_normal(300_001).astype(np.float32)
    whole, ranges = np.empty_like(x), np.empty_like(x)
    kernel(len(x), x, np.float32(0.5), whole)
    calls = []
    run_on_pool = intra_op.run_on_pool
    monkeypatch.setattr(intra_op, "run_on_pool", lambda bounds, fn: calls.append(bounds) or run_on_pool(bounds, fn))
    fusion_numba.on_the_pool(kernel, len(x), x, np.float32(0.5), ranges)
    assert calls == [[(0, 150_000), (150_000, 300_001)]]
    assert np.array_equal(ranges, whole)


def test_a_compiled_function_uses_the_pool_not_numbas_threads(threads):
    import numba.np.ufunc.parallel as numba_threads
    threads(2)
    assert fusion_numba.use_threads(fusion_numba.PARALLEL_MIN_NUMEL)
    f = lantern.compile(lambda x: (x.tanh() * 2 + 1).sigmoid())
    x = lantern.randn(fusion_numba.PARALLEL_MIN_NUMEL + 1)
    np.testing.assert_allclose(f(x).numpy(), (x.tanh() * 2 + 1).sigmoid().numpy(), rtol=1e-6, atol=1e-6)
    assert not numba_threads._is_initialized


def test_one_thread_compiles_the_plain_kernel(threads):
    threads(1)
    assert not fusion_numba.use_threads(10 * fusion_numba.PARALLEL_MIN_NUMEL)
