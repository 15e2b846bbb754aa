"""torch.linalg's LU, triangular, eig, matrix_exp, Householder, LDL and composite functions, and the torch-level
functions beside them (cholesky_solve, lu_unpack, geqrf, ormqr, svd_lowrank, ...) against torch: values, dtypes,
shapes, LAPACK strides, non-contiguous and batched inputs, out=, and error classes. Decompositions with a sign or
phase freedom are compared through invariants (the reconstruction, sorted eigenvalues), as torch's own tests do.
Gradients are in test_linalg_missing_grad.py.
"""
import math
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import check, raises_like
from test_linalg_extra import rand, raises_linalg_error, spd, tol, well_conditioned

pytestmark = pytest.mark.filterwarnings("ignore:torch\\.(lu|lu_solve|triangular_solve|cholesky|qr|chain_matmul) is "
                                        "deprecated:UserWarning")

DTYPES = ["float32", "float64", "complex64", "complex128"]


def empty_out(m, like):
    return m.empty(0, dtype=like.dtype)


def outs(m, like, count):
    return tuple(empty_out(m, like) for _ in range(count))


# ---- LU --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (2, 3, 5), (0, 3, 3), (1, 1)])
def test_lu_factor_lu_and_unpack(shape, dtype):
    a = rand(*shape, dtype=dtype)
    t = tol(dtype)
    check(lambda m, a: tuple(m.linalg.lu_factor_ex(a)), a, **t)
    check(lambda m, a: tuple(m.linalg.lu_factor(a)), a, **t)
    check(lambda m, a: tuple(m.linalg.lu(a)), a, **t)
    check(lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a))), a, **t)
    check(lambda m, a: (m.lu(a), m.lu(a, get_infos=True), a.lu()), a, **t)


def test_lu_unpack_options_and_out():
    a = rand(2, 3, 4)
    check(lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a), unpack_data=False)), a)
    check(lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a), unpack_pivots=False)), a)
    check(lambda m, a: tuple(m.linalg.lu(a, out=(empty_out(m, a), empty_out(m, a), empty_out(m, a)))), a, strides=False)
    check(lambda m, a: tuple(m.linalg.lu_factor(a, out=(empty_out(m, a), m.empty(0, dtype=m.int32)))), a,
          strides=False)
    check(lambda m, a: tuple(m.linalg.lu_factor_ex(a, out=(empty_out(m, a), m.empty(0, dtype=m.int32),
                                                          m.empty(0, dtype=m.int32)))), a, strides=False)
    check(lambda m, a: type(m.linalg.lu(a, out=outs(m, a, 3))).__name__, a)
    check(lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a), out=outs(m, a, 3))), a, strides=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_solve(dtype):
    a, t = well_conditioned(2, 3, 3, dtype=dtype), tol(dtype)
    for left in (True, False):
        for adjoint in (False, True):
            b = rand(3, 2, dtype=dtype) if left else rand(2, 3, dtype=dtype)
            check(lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=left, adjoint=adjoint).resolve_conj(),
                  a, b, strides=False, **t)
            check(lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=left).stride(), a, b)
    b = rand(4, 1, 3, 2, dtype=dtype)  # batches broadcast
    check(lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), a, b, **t)
    check(lambda m, a, b: m.lu_solve(b, *m.linalg.lu_factor(a)), a, b, **t)
    check(lambda m, a, b: b.lu_solve(*m.linalg.lu_factor(a)), a, b, **t)
    check(lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, out=empty_out(m, a)), a, b, strides=False, **t)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_solve_ex(dtype):
    a, t = well_conditioned(2, 3, 3, dtype=dtype), tol(dtype)
    check(lambda m, a, b: tuple(m.linalg.solve_ex(a, b)), a, rand(3, 2, dtype=dtype), **t)
    check(lambda m, a, b: tuple(m.linalg.solve_ex(a, b, left=False)), a, rand(4, 3, dtype=dtype), **t)
    check(lambda m, a, b: tuple(m.linalg.solve_ex(a, b)), a, rand(3, dtype=dtype), strides=False, **t)
    check(lambda m, a, b: tuple(m.linalg.solve_ex(a, b, out=(empty_out(m, a), m.empty(0, dtype=m.int32)))), a,
          rand(3, 1, dtype=dtype), strides=False, **t)


def test_singular_lu():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    batch = np.stack([np.eye(2), singular, np.zeros((2, 2))])
    check(lambda m, a: tuple(m.linalg.lu_factor_ex(a)), batch)
    check(lambda m, a: tuple(m.linalg.solve_ex(a, m.ones(3, 2, 1, dtype=a.dtype))), batch)
    check(lambda m, a: m.linalg.lu_solve(*m.linalg.lu_factor_ex(a)[:2], m.ones(2, 1, dtype=a.dtype)), np.zeros((2, 2)))
    for fn in (lambda m, a: m.linalg.lu_factor(a), lambda m, a: m.linalg.lu_factor_ex(a, check_errors=True)):
        for a in (np.zeros((2, 2)), batch):
            messages = []
            for lib in (torch, lantern):
                with pytest.raises(RuntimeError) as info:
                    fn(lib, to_tensor(lib, a))
                messages.append(str(info.value))
            assert messages[0] == messages[1]
    expected, got = raises_linalg_error(lambda m, a: m.linalg.solve_ex(a, m.ones(3, 2, 1, dtype=a.dtype),
                                                                       check_errors=True), batch)
    assert got == expected


def to_tensor(lib, a):
    return lib.tensor(a)


LU_ERRORS = {
    "1d": lambda m: m.linalg.lu_factor(m.ones(3)),
    "lu_1d": lambda m: m.linalg.lu(m.ones(3)),
    "int": lambda m: m.linalg.lu_factor(m.ones(3, 3, dtype=m.int64)),
    "no_pivot": lambda m: m.linalg.lu_factor(m.eye(3), pivot=False),
    "lu_no_pivot": lambda m: m.linalg.lu(m.eye(3), pivot=False),
    "solve_pivot_dtype": lambda m: m.linalg.lu_solve(m.eye(3), m.ones(3, dtype=m.int64), m.ones(3, 1)),
    "solve_dtype": lambda m: m.linalg.lu_solve(m.eye(3), m.ones(3, dtype=m.int32), m.ones(3, 1, dtype=m.float64)),
    "solve_vector": lambda m: m.linalg.lu_solve(m.eye(3), m.ones(3, dtype=m.int32), m.ones(3)),
    "solve_rect": lambda m: m.linalg.lu_solve(m.ones(3, 2), m.ones(2, dtype=m.int32), m.ones(3, 1)),
    "solve_pivots": lambda m: m.linalg.lu_solve(m.eye(3), m.ones(2, dtype=m.int32), m.ones(3, 1)),
    "solve_shapes": lambda m: m.linalg.lu_solve(m.eye(3), m.ones(3, dtype=m.int32), m.ones(4, 1)),
    "unpack_pivot_dtype": lambda m: m.lu_unpack(m.eye(3), m.ones(3, dtype=m.int64)),
    "unpack_pivot_range": lambda m: m.lu_unpack(m.eye(3), m.full((3,), 4, dtype=m.int32)),
    "solve_ex_shapes": lambda m: m.linalg.solve_ex(m.eye(3), m.ones(4)),
    "out_dtype": lambda m: m.linalg.lu_solve(m.eye(2), m.ones(2, dtype=m.int32), m.ones(2, 1),
                                             out=m.empty(0, dtype=m.float64)),
}


@pytest.mark.parametrize("name", list(LU_ERRORS))
def test_lu_errors(name):
    raises_like(LU_ERRORS[name])


# ---- triangular systems and Cholesky helpers -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_triangular(dtype):
    a, t = well_conditioned(2, 3, 3, dtype=dtype), tol(dtype)
    for upper in (True, False):
        for unitriangular in (False, True):
            check(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=upper, unitriangular=unitriangular), a,
                  rand(3, 4, dtype=dtype), **t)
            check(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=upper, left=False,
                                                            unitriangular=unitriangular), a, rand(4, 1, 2, 3, dtype=dtype), **t)
    check(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True, out=empty_out(m, a)), a, rand(3, 2, dtype=dtype),
          strides=False, **t)


def test_solve_triangular_promotes_and_singular():
    check(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False), well_conditioned(3, 3, dtype="float32"),
          rand(3, 2))
    check(lambda m: m.linalg.solve_triangular(m.zeros(3, 3), m.ones(3, 1), upper=True))  # inf / nan, no error


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_triangular_solve_and_cholesky_helpers(dtype):
    a, t = well_conditioned(2, 3, 3, dtype=dtype), tol(dtype)
    factor = np.linalg.cholesky(np.asarray(spd(2, 3, 3, dtype=dtype)))
    for upper, transpose, unit in ((True, False, False), (False, True, False), (True, True, True)):
        check(lambda m, b, a: tuple(m.triangular_solve(b, a, upper, transpose, unit)), rand(3, 2, dtype=dtype), a, **t)
    check(lambda m, b, a: tuple(b.triangular_solve(a, upper=False)), rand(2, 3, 1, dtype=dtype), a[0], **t)
    for upper in (False, True):
        L = np.swapaxes(factor, -1, -2).conj() if upper else factor
        check(lambda m, b, L: (m.cholesky_solve(b, L, upper), b.cholesky_solve(L, upper=upper)), rand(3, 2, dtype=dtype),
              L, **t)
        check(lambda m, L: (m.cholesky_inverse(L, upper), L.cholesky_inverse(upper=upper)), L, **t)
        check(lambda m, L: m.cholesky_inverse(L[0], upper), L, **t)
    s = spd(2, 3, 3, dtype=dtype)
    check(lambda m, a: (m.cholesky(a), a.cholesky(upper=True)), s, **t)
    check(lambda m, b, a: tuple(m.triangular_solve(b, a, out=(empty_out(m, a), empty_out(m, a)))), rand(3, 2, dtype=dtype),
          a, strides=False, **t)
    check(lambda m, L: m.cholesky_inverse(L, out=empty_out(m, L)), factor, strides=False, **t)
    check(lambda m, b, L: m.cholesky_solve(b, L, out=empty_out(m, L)), rand(3, 2, dtype=dtype), factor, strides=False,
          **t)


def test_cholesky_inverse_singular():
    expected, got = raises_linalg_error(lambda m, a: m.cholesky_inverse(a), np.stack([np.eye(2), np.diag([1.0, 0.0])]))
    assert got == expected


TRIANGULAR_ERRORS = {
    "upper_missing": lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(3, 1)),
    "vector": lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(3), upper=True),
    "rect": lambda m: m.linalg.solve_triangular(m.ones(2, 3), m.ones(2, 1), upper=True),
    "shapes": lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(4, 1), upper=True),
    "right_shapes": lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(3, 2), upper=True, left=False),
    "int": lambda m: m.linalg.solve_triangular(m.eye(3, dtype=m.int64), m.ones(3, 1, dtype=m.int64), upper=True),
    "half": lambda m: m.linalg.solve_triangular(m.eye(3).half(), m.ones(3, 1).half(), upper=True),
    "batch": lambda m: m.linalg.solve_triangular(m.eye(3).expand(2, 3, 3), m.ones(3, 3, 2), upper=True),
    "out_dtype": lambda m: m.linalg.solve_triangular(m.eye(2), m.ones(2, 1), upper=True,
                                                     out=m.empty(0, dtype=m.float64)),
    "triangular_solve_dtype": lambda m: m.triangular_solve(m.ones(3, 1), m.eye(3, dtype=m.float64)),
    "triangular_solve_1d": lambda m: m.triangular_solve(m.ones(3), m.eye(3)),
    "cholesky_solve_dtype": lambda m: m.cholesky_solve(m.ones(3, 1), m.eye(3, dtype=m.float64)),
    "cholesky_solve_shapes": lambda m: m.cholesky_solve(m.ones(4, 2), m.eye(3)),
    "cholesky_inverse_rect": lambda m: m.cholesky_inverse(m.ones(2, 3)),
    "cholesky_inverse_1d": lambda m: m.cholesky_inverse(m.ones(3)),
    "cholesky_not_pd": lambda m: m.cholesky(-m.eye(2)),
}


@pytest.mark.parametrize("name", list(TRIANGULAR_ERRORS))
def test_triangular_errors(name):
    raises_like(TRIANGULAR_ERRORS[name])


# ---- eig, eigvals, matrix_exp --------------------------------------------------------------------------------

def sorted_eigenvalues(m, values):
    """Eigenvalues in LAPACK's order may differ by rounding: compare them sorted (real part, then imaginary)."""
    keys = values.real * 1e6 + values.imag
    return values.gather(-1, keys.argsort(-1))


def residual(m, A, values, vectors):
    """max |A V - V diag(L)|, the invariant eigenvectors satisfy whatever their phase."""
    return (A.to(vectors.dtype) @ vectors - vectors * values.unsqueeze(-2)).abs().amax()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2)])
def test_eig(shape, dtype):
    a, t = rand(*shape, dtype=dtype), tol(dtype)
    check(lambda m, a: (sorted_eigenvalues(m, m.linalg.eig(a).eigenvalues), sorted_eigenvalues(m, m.linalg.eigvals(a))),
          a, **t)
    check(lambda m, a: [(v.dtype, v.shape, v.stride()) for v in m.linalg.eig(a)], a)
    check(lambda m, a: type(m.linalg.eig(a)).__name__, a)
    check(lambda m, a: m.linalg.eig(a).eigenvectors.abs().pow(2).sum(-2), a, **t)  # unit-norm columns
    for lib in (torch, lantern) if a.size else ():
        A = lib.tensor(np.asarray(a))
        assert residual(lib, A, *lib.linalg.eig(A)).item() < (1e-4 if dtype in ("float32", "complex64") else 1e-10)
    check(lambda m, a: sorted_eigenvalues(m, m.linalg.eigvals(a, out=m.empty(0, dtype=m.linalg.eigvals(a).dtype))), a,
          **t)


def test_eig_of_real_matrix_with_complex_eigenvalues():
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    check(lambda m, a: sorted_eigenvalues(m, m.linalg.eigvals(a)), rotation)
    check(lambda m, a: m.linalg.eig(a).eigenvectors.abs(), rotation)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2), (1, 1)])
def test_matrix_exp(shape, dtype):
    a, t = rand(*shape, dtype=dtype), tol(dtype)
    check(lambda m, a: (m.linalg.matrix_exp(a), m.matrix_exp(a), a.matrix_exp(), m.linalg.matrix_exp(a.mT)), a, **t)


EIG_ERRORS = {
    "eig_rect": lambda m: m.linalg.eig(m.ones(2, 3)),
    "eig_int": lambda m: m.linalg.eig(m.ones(2, 2, dtype=m.int64)),
    "eig_1d": lambda m: m.linalg.eig(m.ones(2)),
    "eigvals_rect": lambda m: m.linalg.eigvals(m.ones(2, 3)),
    "eig_phase_backward": lambda m: m.linalg.eig(m.tensor([[1.0, 2j], [0.5, -1j]], requires_grad=True))[1].real.sum()
    .backward(),
    "exp_rect": lambda m: m.linalg.matrix_exp(m.ones(2, 3)),
    "exp_int": lambda m: m.linalg.matrix_exp(m.ones(2, 2, dtype=m.int64)),
    "exp_1d": lambda m: m.linalg.matrix_exp(m.ones(2)),
}


@pytest.mark.parametrize("name", list(EIG_ERRORS))
def test_eig_errors(name):
    raises_like(EIG_ERRORS[name])


# ---- Householder reflectors: geqrf, householder_product / orgqr, ormqr ---------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 3), (2, 3, 5)])
def test_geqrf_householder_ormqr(shape, dtype):
    a, t = rand(*shape, dtype=dtype), tol(dtype)
    check(lambda m, a: tuple(m.geqrf(a)), a, **t)
    check(lambda m, a: a.geqrf(), a, **t)
    m_rows = shape[-2]
    if shape[-1] <= m_rows:
        check(lambda m, a: (m.linalg.householder_product(*m.geqrf(a)), m.orgqr(*m.geqrf(a)),
                            a.orgqr(m.geqrf(a).tau)), a, **t)
        check(lambda m, a: m.linalg.householder_product(m.geqrf(a).a, m.geqrf(a).tau[..., :1]), a, **t)
    for left in (True, False):
        for transpose in (False, True):
            c = rand(*shape[:-2], m_rows, 2, dtype=dtype) if left else rand(*shape[:-2], 2, m_rows, dtype=dtype)
            check(lambda m, a, c: (m.ormqr(*m.geqrf(a), c, left, transpose), a.ormqr(m.geqrf(a).tau, c, left=left,
                                                                                     transpose=transpose)), a, c, **t)


def test_householder_out():
    a = rand(4, 3)
    check(lambda m, a: m.linalg.householder_product(*m.geqrf(a), out=empty_out(m, a)), a, strides=False)
    check(lambda m, a, c: m.ormqr(*m.geqrf(a), c, out=empty_out(m, a)), a, rand(4, 2), strides=False)


HOUSEHOLDER_ERRORS = {
    "wide": lambda m: m.linalg.householder_product(m.ones(2, 3), m.ones(2)),
    "tau_long": lambda m: m.linalg.householder_product(m.ones(3, 2), m.ones(3)),
    "tau_dtype": lambda m: m.linalg.householder_product(m.ones(3, 2), m.ones(2, dtype=m.float64)),
    "tau_dims": lambda m: m.linalg.householder_product(m.ones(2, 3, 2), m.ones(2)),
    "1d": lambda m: m.linalg.householder_product(m.ones(3), m.ones(2)),
    "geqrf_1d": lambda m: m.geqrf(m.ones(3)),
    "geqrf_int": lambda m: m.geqrf(m.ones(3, 3, dtype=m.int64)),
    "ormqr_rows": lambda m: m.ormqr(m.ones(3, 2), m.ones(2), m.ones(4, 2)),
    "ormqr_dtype": lambda m: m.ormqr(m.ones(3, 2), m.ones(2), m.ones(3, 2, dtype=m.float64)),
    "ormqr_tau_length": lambda m: m.ormqr(m.ones(4, 3), m.ones(2), m.ones(4, 2)),
    "ormqr_tau_length_right": lambda m: m.ormqr(m.ones(4, 3), m.ones(4), m.ones(2, 4), left=False),
    "ormqr_batch": lambda m: m.ormqr(m.ones(2, 4, 3), m.ones(2, 3), m.ones(3, 4, 2)),
    "ormqr_1d": lambda m: m.ormqr(m.ones(3), m.ones(1), m.ones(3, 1)),
    "ormqr_int": lambda m: m.ormqr(m.ones(3, 0, dtype=m.int64), m.ones(3, dtype=m.int64), m.ones(3, 3, dtype=m.int64)),
}


@pytest.mark.parametrize("name", list(HOUSEHOLDER_ERRORS))
def test_householder_errors(name):
    raises_like(HOUSEHOLDER_ERRORS[name])


# ---- LDL -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_ldl(dtype):
    t = tol(dtype)
    a = np.asarray(rand(2, 3, 3, dtype=dtype))
    hermitian_choices = (False, True) if dtype.startswith("complex") else (False,)
    for hermitian in hermitian_choices:
        sym = a + (np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2))
        check(lambda m, s: tuple(m.linalg.ldl_factor_ex(s, hermitian=hermitian)), sym, **t)
        check(lambda m, s: tuple(m.linalg.ldl_factor(s, hermitian=hermitian)), sym, **t)
        check(lambda m, s, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(s, hermitian=hermitian), b, hermitian=hermitian),
              sym, rand(3, 2, dtype=dtype), **t)
    check(lambda m, s: tuple(m.linalg.ldl_factor_ex(s, out=(empty_out(m, s), m.empty(0, dtype=m.int32),
                                                            m.empty(0, dtype=m.int32)))), a + np.swapaxes(a, -1, -2),
          strides=False, **t)


def test_ldl_singular_reports_info():
    check(lambda m, a: tuple(m.linalg.ldl_factor_ex(a)), np.stack([np.eye(2), np.zeros((2, 2))]))
    raises_like(lambda m: m.linalg.ldl_factor(m.zeros(2, 2)))


LDL_ERRORS = {
    "rect": lambda m: m.linalg.ldl_factor(m.ones(2, 3)),
    "int": lambda m: m.linalg.ldl_factor(m.ones(3, 3, dtype=m.int64)),
    "solve_dtype": lambda m: m.linalg.ldl_solve(m.eye(3), m.ones(3, dtype=m.int32), m.ones(3, 1, dtype=m.float64)),
    "solve_shapes": lambda m: m.linalg.ldl_solve(m.eye(3), m.ones(3, dtype=m.int32), m.ones(4, 1)),
    "backward": lambda m: m.linalg.ldl_factor(m.eye(2, requires_grad=True) * 2)[0].sum().backward(),
}


@pytest.mark.parametrize("name", list(LDL_ERRORS))
def test_ldl_errors(name):
    raises_like(LDL_ERRORS[name])


# ---- composites: cond, vecdot, vander, multi_dot, tensorinv, tensorsolve, ... ----------------------------------

COND_ORDERS = [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf]


@pytest.mark.parametrize("p", COND_ORDERS)
def test_cond(p):
    check(lambda m, a: m.linalg.cond(a, p), well_conditioned(2, 3, 3))
    check(lambda m, a: m.linalg.cond(a, p), rand(3, 3, dtype="complex64"), atol=1e-4, rtol=1e-4)
    check(lambda m, a: m.linalg.cond(a, p), np.stack([np.eye(2), np.diag([1.0, 0.0]), np.zeros((2, 2))]))
    check(lambda m, a: (m.linalg.cond(a, p), m.linalg.cond(a, p, out=m.empty(0))), np.zeros((0, 3, 3), np.float32))
    if p in (None, 2, -2):
        check(lambda m, a: m.linalg.cond(a, p), rand(2, 3, 5))


COMPOSITE_ERRORS = {
    "cond_1d": lambda m: m.linalg.cond(m.ones(3)),
    "cond_order": lambda m: m.linalg.cond(m.eye(3), 3),
    "cond_rect": lambda m: m.linalg.cond(m.ones(2, 3), 1),
    "cond_rect_nuc": lambda m: m.linalg.cond(m.ones(2, 3), "nuc"),
    "cond_int": lambda m: m.linalg.cond(m.ones(2, 2, dtype=m.int64)),
    "vecdot_dtypes": lambda m: m.linalg.vecdot(m.ones(3), m.ones(3, dtype=m.float64)),
    "vecdot_int": lambda m: m.linalg.vecdot(m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64)),
    "vecdot_shapes": lambda m: m.linalg.vecdot(m.ones(2), m.ones(3)),
    "vander_bool": lambda m: m.linalg.vander(m.ones(3, dtype=m.bool)),
    "vander_half": lambda m: m.linalg.vander(m.ones(3).half()),
    "vander_N": lambda m: m.linalg.vander(m.ones(3), N=1),
    "vander_0d": lambda m: m.linalg.vander(m.tensor(1.0)),
    "torch_vander_2d": lambda m: m.vander(m.ones(2, 2)),
    "torch_vander_N": lambda m: m.vander(m.ones(2), N=-1),
    "multi_dot_one": lambda m: m.linalg.multi_dot([m.ones(3)]),
    "multi_dot_none": lambda m: m.linalg.multi_dot([]),
    "multi_dot_shapes": lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(2, 3)]),
    "multi_dot_first_3d": lambda m: m.linalg.multi_dot([m.ones(2, 3, 3), m.ones(3, 3)]),
    "multi_dot_last_3d": lambda m: m.linalg.multi_dot([m.ones(2, 2), m.ones(2, 2, 2)]),
    "multi_dot_dtypes": lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(3, 3, dtype=m.float64)]),
    "chain_matmul_none": lambda m: m.chain_matmul(),
    "chain_matmul_3d": lambda m: m.chain_matmul(m.ones(2, 2), m.ones(2, 2, 2)),
    "tensorinv_ind": lambda m: m.linalg.tensorinv(m.ones(4, 2, 2), ind=0),
    "tensorinv_shape": lambda m: m.linalg.tensorinv(m.ones(4, 2, 3)),
    "tensorsolve_shape": lambda m: m.linalg.tensorsolve(m.ones(2, 3, 6), m.ones(2, 2)),
    "pinverse_int": lambda m: m.pinverse(m.ones(2, 2, dtype=m.int64)),
    "lowrank_q": lambda m: m.pca_lowrank(m.ones(3, 4), q=10),
    "lowrank_niter": lambda m: m.pca_lowrank(m.ones(3, 4), niter=-1),
    "removed_eig": lambda m: m.eig(m.eye(2)),
    "removed_symeig": lambda m: m.eye(2).symeig(),
    "removed_lstsq": lambda m: m.lstsq(m.eye(2), m.eye(2)),
    "removed_solve": lambda m: m.eye(2).solve(m.eye(2)),
    "removed_matrix_rank": lambda m: m.matrix_rank(m.eye(2)),
}


@pytest.mark.parametrize("name", list(COMPOSITE_ERRORS))
def test_composite_errors(name):
    raises_like(COMPOSITE_ERRORS[name])


def test_singular_tensorinv_and_tensorsolve():
    raises_linalg_error(lambda m, a: m.linalg.tensorinv(a, ind=2), np.zeros((2, 2, 4)))
    raises_linalg_error(lambda m, a: m.linalg.tensorsolve(a, m.ones(6, dtype=a.dtype)), np.zeros((6, 2, 3)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_vecdot_vander_multi_dot(dtype):
    t = tol(dtype)
    check(lambda m, x, y: (m.linalg.vecdot(x, y), m.linalg.vecdot(x, y, dim=0), m.linalg.vecdot(x, y, out=m.empty(
        0, dtype=x.dtype))), rand(2, 3, dtype=dtype), rand(2, 3, dtype=dtype), **t)
    check(lambda m, x, y: m.linalg.vecdot(x, y), rand(2, 3, dtype=dtype), rand(3, dtype=dtype), **t)
    check(lambda m, x: (m.linalg.vander(x), m.linalg.vander(x, N=4), m.vander(x[0]), m.vander(x[0], 4, True),
                        m.vander(x[0], N=0)), rand(2, 3, dtype=dtype), **t)
    matrices = [rand(2, 5, dtype=dtype), rand(5, 3, dtype=dtype), rand(3, 7, dtype=dtype), rand(7, 2, dtype=dtype)]
    check(lambda m, *ms: (m.linalg.multi_dot(ms), m.chain_matmul(*ms)), *matrices, strides=False, **t)
    check(lambda m, a, b: m.linalg.multi_dot([a, b]), *matrices[:2], **t)
    check(lambda m, a, b, c: m.linalg.multi_dot((a[0], b, c[:, 0])), *matrices[:3], **t)
    check(lambda m, a, b, c: m.linalg.multi_dot([a, b, c], out=m.empty(0, dtype=a.dtype)), *matrices[:3],
          strides=False, **t)
    check(lambda m, a: m.chain_matmul(a), matrices[0])


def test_vander_integers_and_scalars():
    check(lambda m, x: (m.linalg.vander(x), m.vander(x), m.vander(x, N=0), m.vander(x.int())),
          np.array([1, 2, -3], np.int64))
    check(lambda m, x: m.linalg.vander(x, N=3), np.array(2.0))  # a 0-d x is a 1 x N matrix


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_tensorinv_tensorsolve_and_more(dtype):
    t = tol(dtype)
    a6 = well_conditioned(6, 6, dtype=dtype)
    check(lambda m, a: (m.linalg.tensorinv(a.reshape(2, 3, 6), ind=2), m.linalg.tensorinv(a.reshape(6, 2, 3), ind=1)),
          a6, **t)
    check(lambda m, a: m.linalg.tensorinv(a.reshape(6, 3, 2), ind=1, out=m.empty(0, dtype=a.dtype)), a6, strides=False,
          **t)
    check(lambda m, a, b: (m.linalg.tensorsolve(a.reshape(6, 2, 3), b), m.linalg.tensorsolve(a.reshape(2, 3, 6),
                                                                                               b.reshape(2, 3))),
          a6, rand(6, dtype=dtype), **t)
    check(lambda m, a, b: m.linalg.tensorsolve(a.reshape(2, 6, 3), b, dims=(0,)), a6, rand(6, dtype=dtype), **t)
    x = rand(2, 3, 4, dtype=dtype)
    check(lambda m, x: (m.linalg.diagonal(x), m.linalg.diagonal(x, offset=1, dim1=0, dim2=2)), x)
    check(lambda m, x, y: (m.linalg.matmul(x, y), m.linalg.matmul(x, y[..., 0], out=m.empty(0, dtype=x.dtype))), x,
          rand(4, 2, dtype=dtype), **t)
    check(lambda m, x: (m.pinverse(x), x.pinverse(rcond=0.3)), x, **t)
    check(lambda m, x: (tuple(m.qr(x)), tuple(x.qr(some=False))), x, **t)
    check(lambda m, x: tuple(m.qr(x, out=(empty_out(m, x), empty_out(m, x)))), x, strides=False, **t)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 6, 4)])
def test_svd_and_pca_lowrank_draw_as_torch(shape):
    """Seeded alike, both draw the same Gaussian matrix: same singular values, same reconstruction."""
    a = rand(*shape)
    calls = [lambda m, a: m.svd_lowrank(a, q=2), lambda m, a: m.svd_lowrank(a, q=3, niter=1, M=a.mean(-2, keepdim=True)),
             lambda m, a: m.pca_lowrank(a), lambda m, a: m.pca_lowrank(a, q=2, center=False, niter=0)]
    for fn in calls:
        def seeded(m, a, fn=fn):
            m.manual_seed(5)
            U, S, V = fn(m, a)
            return S, (U * S.unsqueeze(-2)) @ V.mT, [t.stride() for t in (U, S, V)]
        check(seeded, a)


def test_meta_device():
    for fn in (lambda m, a: m.linalg.lu_factor(a)[0], lambda m, a: m.linalg.lu(a)[2], lambda m, a: m.linalg.eig(a)[1],
               lambda m, a: m.linalg.matrix_exp(a), lambda m, a: m.linalg.ldl_factor_ex(a)[0],
               lambda m, a: m.linalg.solve_triangular(a, a, upper=True),
               lambda m, a: m.linalg.lu_solve(a, m.ones(2, 3, dtype=m.int32, device="meta"), a)):
        expected = fn(torch, torch.empty(2, 3, 3, device="meta"))
        got = fn(lantern, lantern.empty(2, 3, 3, device="meta"))
        assert got.device.type == "meta" and tuple(got.shape) == tuple(expected.shape)
        assert got.dtype.name == str(expected.dtype).replace("torch.", "")


@pytest.mark.parametrize("call", [lambda m: m.cholesky(m.eye(2)), lambda m: m.lu(m.eye(2)),
                                  lambda m: m.triangular_solve(m.ones(2, 1), m.eye(2)),
                                  lambda m: m.qr(m.eye(2)), lambda m: m.chain_matmul(m.eye(2), m.eye(2))])
def test_deprecated_functions_warn(call, monkeypatch):
    from lantern.ops import linalg_triangular
    monkeypatch.setattr(linalg_triangular, "_DEPRECATION_SHOWN", set())  # torch warns once per process
    with warnings.catch_warnings(record=True) as caught:  # torch's own warning is shown only once per process
        warnings.simplefilter("always")
        call(lantern)
    assert any(issubclass(w.category, UserWarning) and "deprecated" in str(w.message) for w in caught)


def test_out_variants_of_the_earlier_decompositions():
    a, s = rand(2, 3, 3), spd(2, 3, 3)
    check(lambda m, a: tuple(m.linalg.svd(a, out=outs(m, a, 2) + (m.empty(0, dtype=a.dtype),))), a, strides=False)
    check(lambda m, a: m.linalg.svdvals(a, out=empty_out(m, a)), a, strides=False)
    check(lambda m, a: tuple(m.linalg.qr(a, out=outs(m, a, 2))), a, strides=False)
    check(lambda m, s: (tuple(m.linalg.eigh(s, out=outs(m, s, 2)))[0], m.linalg.eigvalsh(s, out=empty_out(m, s))), s,
          strides=False)
    check(lambda m, s: tuple(m.linalg.cholesky_ex(s, out=(empty_out(m, s), m.empty(0, dtype=m.int32)))), s,
          strides=False)
    check(lambda m, a: tuple(m.linalg.inv_ex(well_conditioned_like(m, a), out=(empty_out(m, a),
                                                                               m.empty(0, dtype=m.int32)))), a,
          strides=False)
    check(lambda m, a: (m.slogdet(a), a.slogdet()), a)


def well_conditioned_like(m, a):
    return a + 3 * m.eye(a.shape[-1], dtype=a.dtype)


def test_every_torch_linalg_name_resolves():
    """Generated from torch.linalg's namespace: every public function (and the error class) exists in lantern."""
    names = [n for n in dir(torch.linalg) if not n.startswith("_") and callable(getattr(torch.linalg, n))]
    assert [n for n in names if not hasattr(lantern.linalg, n)] == []


def test_linalg_return_types_resolve():
    """torch.return_types' linalg named tuples (and their _out twins) exist with the same fields."""
    wanted = [n for n in dir(torch.return_types) if n.startswith(("linalg_", "lu_unpack", "geqrf", "triangular_solve",
                                                                   "qr", "slogdet", "svd"))]
    for name in wanted:
        assert getattr(lantern.return_types, name)._fields == getattr(torch.return_types, name).__match_args__, name
