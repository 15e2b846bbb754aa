"""linalg.matrix_exp as torch computes it: Taylor polynomials of degree 1 to 18 chosen by each matrix's 1-norm,
scaling and squaring beyond, in float32 for float32/complex64 inputs. Large norms magnify rounding: a result
computed otherwise (a Padé approximant, or double precision rounded back) misses torch's float32 values."""
import numpy as np
import pytest
from oracle import check

# 1-norms that pick each degree in single precision (1, 2, 4, 8, 12, 18) and the squarings beyond
NORMS = [1e-8, 1e-4, 0.04, 0.5, 1.2, 2.5, 30.0, 45.0]


def _matrices(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((len(NORMS), n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(a.shape)
    a = a * (np.array(NORMS) / np.abs(a).sum(-2).max(-1))[:, None, None]
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float64, np.complex128])
@pytest.mark.parametrize("n", [2, 5])
def test_matrix_exp_matches_torch_at_every_degree(dtype, n):
    check(lambda m, a: m.linalg.matrix_exp(a), _matrices(dtype, n))


def test_matrix_exp_of_inf_or_nan_is_nan():
    a = np.stack([np.eye(3), np.eye(3), np.eye(3)]).astype(np.float32)
    a[0, 0, 1], a[1, 2, 2] = np.nan, np.inf
    check(lambda m, a: m.linalg.matrix_exp(a), a)
