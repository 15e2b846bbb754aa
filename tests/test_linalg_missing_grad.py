"""Gradients of the LU, triangular, eig, matrix_exp, Householder and composite linear-algebra functions: each
compared with torch's (outputs, node name, input gradients) and gradchecked to second order in float64 (complex128
where torch differentiates complex inputs) on non-contiguous inputs. Values are in test_linalg_missing.py.
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same
from test_autograd_gradcheck_ops import Case, make_inputs, vjp
from test_linalg_extra import rand, spd, well_conditioned

pytestmark = pytest.mark.filterwarnings("ignore:torch\\.(lu|lu_solve|triangular_solve|cholesky|qr|chain_matmul) is "
                                        "deprecated:UserWarning")


def u(*shape, dtype="float64"):
    return rand(*shape, dtype=dtype)


def wc(*shape, dtype="float64"):
    return well_conditioned(*shape, dtype=dtype)


def c(*shape):
    return rand(*shape, dtype="complex128")


def cwc(*shape):
    return well_conditioned(*shape, dtype="complex128")


def cholesky_factor(*shape, dtype="float64"):
    return np.linalg.cholesky(np.asarray(spd(*shape, dtype=dtype)))


def distinct_eigenvalues(*shape):
    """Real matrices with well-separated real eigenvalues (1, 2, 3, ...): eig's backward divides by their gaps."""
    n = shape[-1]
    rng = np.random.default_rng(5)
    basis = rng.uniform(-1, 1, size=shape) + n * np.eye(n)
    return basis @ (np.arange(1, n + 1) * np.eye(n)) @ np.linalg.inv(basis)


def upper_triangular(*shape, dtype="float64"):
    return np.triu(np.asarray(wc(*shape, dtype=dtype)))


def phase_free(t):
    return t.abs()


def geqrf_inputs(*shape, dtype="float64"):
    """(a, tau) as geqrf packs them (geqrf itself is not differentiable, in torch as in lantern)."""
    a, tau = torch.geqrf(torch.from_numpy(np.asarray(u(*shape, dtype=dtype)).copy()))
    return a.numpy(), tau.numpy()


GRAD_CASES = [
    Case("linalg_lu_factor_ex", lambda m, a: m.linalg.lu_factor(a).LU, wc(2, 3, 3)),
    Case("linalg_lu_factor_ex", lambda m, a: m.linalg.lu_factor_ex(a).LU, u(4, 3), label="tall"),
    Case("linalg_lu_factor_ex", lambda m, a: m.linalg.lu_factor(a).LU, u(2, 3, 5), label="wide"),
    Case("linalg_lu", lambda m, a: tuple(m.linalg.lu(a))[1:], wc(3, 3)),
    Case("linalg_lu", lambda m, a: tuple(m.linalg.lu(a))[1:], u(2, 5, 3), label="tall"),
    Case("linalg_lu", lambda m, a: m.linalg.lu(a).U, u(3, 4), label="wide_U_only"),
    Case("lu_unpack", lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a)))[1:], u(4, 3)),
    Case("lu_unpack", lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a)))[1:], u(3, 4), label="wide"),
    Case("linalg_lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), wc(2, 3, 3), u(3, 2)),
    Case("linalg_lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True), wc(3, 3),
         u(2, 3, 2), label="adjoint"),
    Case("linalg_lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False), wc(3, 3),
         u(2, 3), label="right"),
    Case("linalg_lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False, adjoint=True),
         wc(3, 3), u(2, 3), label="right_adjoint"),
    Case("linalg_solve_triangular", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), wc(2, 3, 3), u(3, 2)),
    Case("linalg_solve_triangular", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, left=False,
                                                                              unitriangular=True), wc(3, 3), u(2, 2, 3),
         label="right_unit"),
    Case("linalg_eig", lambda m, a: m.linalg.eigvals(a), distinct_eigenvalues(3, 3)),
    Case("linalg_eig", lambda m, a: tuple(phase_free(t) for t in m.linalg.eig(a)), distinct_eigenvalues(2, 3, 3),
         label="vectors"),
    Case("linalg_matrix_exp", lambda m, a: m.linalg.matrix_exp(a), u(2, 3, 3)),
    Case("linalg_matrix_exp", lambda m, a: m.matrix_exp(a), u(3, 3), label="torch"),
    Case("solve_ex", lambda m, a, b: m.linalg.solve_ex(a, b).result, wc(3, 3), u(3, 2), label="composite"),
    Case("lu_solve", lambda m, b, a: m.lu_solve(b, *m.linalg.lu_factor(a)), u(3, 1), wc(3, 3), label="composite"),
    Case("triangular_solve", lambda m, b, a: m.triangular_solve(b, a, transpose=True).solution, u(3, 2),
         upper_triangular(3, 3), label="composite"),
    Case("_cholesky_solve_helper", lambda m, b, L: m.cholesky_solve(b, L), u(2, 3, 2), cholesky_factor(3, 3)),
    Case("_cholesky_solve_helper", lambda m, b, U: m.cholesky_solve(b, U, upper=True), u(3, 2),
         cholesky_factor(3, 3).T.copy(), label="upper"),
    Case("_cholesky_inverse_helper", lambda m, L: m.cholesky_inverse(L), cholesky_factor(2, 3, 3)),
    Case("_cholesky_inverse_helper", lambda m, U: m.cholesky_inverse(U, upper=True), cholesky_factor(3, 3).T.copy(),
         label="upper"),
    Case("householder_product", lambda m, a, tau: m.linalg.householder_product(a, tau), *geqrf_inputs(4, 3),
         label="composite"),
    # no reflectors: Q = I, a function of (A, tau) with zero gradients (torch's are None): gradchecked only
    Case("householder_product", lambda m, a, tau: m.linalg.householder_product(a, tau[:0]), *geqrf_inputs(3, 2),
         label="no_reflectors", compare=False),
    Case("ormqr", lambda m, a, tau, c: m.ormqr(a, tau, c, left=False, transpose=True), *geqrf_inputs(3, 3), u(2, 3),
         label="composite"),
    Case("cond", lambda m, a: m.linalg.cond(a), u(2, 3, 3), label="composite"),
    Case("cond", lambda m, a: m.linalg.cond(a, "nuc"), wc(3, 3), label="composite"),
    Case("vecdot", lambda m, x, y: m.linalg.vecdot(x, y), u(2, 3), u(3), label="composite"),
    Case("vander", lambda m, x: m.linalg.vander(x), u(2, 3), label="composite"),
    Case("multi_dot", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), u(2, 4), u(4, 3), u(3), label="composite"),
    Case("tensorinv", lambda m, a: m.linalg.tensorinv(a.reshape(2, 3, 6)), wc(6, 6), label="composite"),
    Case("tensorsolve", lambda m, a, b: m.linalg.tensorsolve(a.reshape(6, 2, 3), b), wc(6, 6), u(6),
         label="composite"),
    Case("pinverse", lambda m, a: m.pinverse(a), u(4, 3), label="composite"),
]

COMPLEX_GRAD_CASES = [
    Case("linalg_lu_factor_ex", lambda m, a: m.linalg.lu_factor(a).LU, cwc(3, 3)),
    Case("linalg_lu", lambda m, a: tuple(m.linalg.lu(a))[1:], c(4, 3), label="tall"),
    Case("linalg_lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False, adjoint=True),
         cwc(3, 3), c(2, 3), label="right_adjoint"),
    Case("linalg_solve_triangular", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), cwc(3, 3), c(3, 2)),
    Case("linalg_eig", lambda m, a: m.linalg.eigvals(a), cwc(3, 3)),
    Case("linalg_eig", lambda m, a: phase_free(m.linalg.eig(a).eigenvectors), cwc(3, 3), label="vectors"),
    Case("linalg_matrix_exp", lambda m, a: m.linalg.matrix_exp(a), c(3, 3)),
    Case("householder_product", lambda m, a, tau: m.linalg.householder_product(a, tau),
         *geqrf_inputs(3, 2, dtype="complex128"), label="composite"),
    Case("_cholesky_solve_helper", lambda m, b, L: m.cholesky_solve(b, L), c(3, 2),
         cholesky_factor(3, 3, dtype="complex128")),
    # potri reads a complex diagonal as it is, so gradcheck's imaginary steps on it leave L L^H's derivative
    # (torch's gradcheck fails the same way): compared with torch only
    Case("_cholesky_inverse_helper", lambda m, L: m.cholesky_inverse(L), cholesky_factor(3, 3, dtype="complex128"),
         check=False),
]


@pytest.mark.parametrize("case", [c for c in GRAD_CASES + COMPLEX_GRAD_CASES if c.compare], ids=lambda c: c.id)
def test_gradients_match_torch(case):
    """Outputs, node name and gradients; composites (torch gives some of them nodes of their own) skip the name."""
    got, expected = vjp(lantern, case), vjp(torch, case)
    if case.label == "composite":
        got, expected = (got[0], got[2]), (expected[0], expected[2])
    assert_same(got, expected, atol=1e-6, rtol=1e-6, strides=False)


FACTOR_INPUT_OPS = {"_cholesky_solve_helper": -1, "_cholesky_inverse_helper": 0}


def triangular_factor(case):
    """cholesky_solve and cholesky_inverse read one triangle of the factor, but their gradients (torch's) are
    those of L L^H in the whole factor: gradcheck them through factor.tril() (triu with upper=True), as torch's
    OpInfos do."""
    if case.op not in FACTOR_INPUT_OPS:
        return lambda *xs: case.fn(lantern, *xs)
    position = FACTOR_INPUT_OPS[case.op] % len(case.inputs)

    def fn(*xs):
        factor = xs[position].triu() if case.label == "upper" else xs[position].tril()
        return case.fn(lantern, *xs[:position], factor, *xs[position + 1:])
    return fn


@pytest.mark.parametrize("case", [c for c in GRAD_CASES + COMPLEX_GRAD_CASES if c.check], ids=lambda c: c.id)
def test_gradcheck_float64_noncontiguous(case):
    inputs = make_inputs(lantern, case, np.float64)
    assert lantern.autograd.gradcheck(triangular_factor(case), inputs, eps=1e-6, atol=1e-5)


# second order on small inputs: each op's backward formulas are differentiable lantern code
SECOND_ORDER_CASES = [
    Case("linalg_lu_factor_ex", lambda m, a: m.linalg.lu_factor(a).LU, wc(2, 2)),
    Case("linalg_lu", lambda m, a: tuple(m.linalg.lu(a))[1:], u(3, 2), label="tall"),
    Case("lu_unpack", lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a)).U, u(2, 3)),
    Case("linalg_lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True), wc(2, 2),
         u(2, 1)),
    Case("linalg_solve_triangular", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, left=False), wc(2, 2),
         u(1, 2)),
    Case("linalg_eig", lambda m, a: phase_free(m.linalg.eig(a).eigenvectors), distinct_eigenvalues(2, 2)),
    Case("linalg_matrix_exp", lambda m, a: m.linalg.matrix_exp(a), u(2, 2)),
    Case("_cholesky_solve_helper", lambda m, b, L: m.cholesky_solve(b, L), u(2, 1), cholesky_factor(2, 2)),
    Case("_cholesky_inverse_helper", lambda m, L: m.cholesky_inverse(L), cholesky_factor(2, 2)),
    Case("householder_product", lambda m, a, tau: m.linalg.householder_product(a, tau), *geqrf_inputs(3, 2)),
]


@pytest.mark.parametrize("case", SECOND_ORDER_CASES, ids=lambda c: c.id)
def test_gradgradcheck_float64_noncontiguous(case):
    inputs = make_inputs(lantern, case, np.float64)
    assert lantern.autograd.gradgradcheck(triangular_factor(case), inputs, eps=1e-6, atol=1e-4)


DIFFERENTIABLE = {"linalg_lu_factor_ex", "linalg_lu", "lu_unpack", "linalg_lu_solve", "linalg_solve_triangular",
                  "linalg_eig", "linalg_matrix_exp", "_cholesky_solve_helper", "_cholesky_inverse_helper"}


def test_every_new_derivative_is_exercised():
    from lantern.ops.registry import get
    assert all(get(name).derivative is not None for name in DIFFERENTIABLE)
    assert DIFFERENTIABLE - {c.op for c in GRAD_CASES + COMPLEX_GRAD_CASES} == set()
    assert DIFFERENTIABLE - {c.op for c in SECOND_ORDER_CASES} == set()
