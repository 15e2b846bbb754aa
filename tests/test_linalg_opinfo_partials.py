"""Regressions from the linalg OpInfos of torch 2.13 that used to fail some samples (tools/opinfo_sweep.py):
outputs that torch keeps in the graph with a zero or empty gradient, per-matrix tensor tolerances, pinv's own
derivative at rank-deficient matrices. Each compares with torch in float64 on non-contiguous inputs.
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, check, noncontig, raises_like
from test_autograd_gradcheck_ops import Case, assert_gradcheck_and_gradgradcheck, assert_gradients_match_torch, vjp

RNG = np.random.default_rng(16)


def rand(*shape, dtype="float64"):
    values = RNG.uniform(-1, 1, size=shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * RNG.uniform(-1, 1, size=shape)
    return values.astype(dtype)


def low_rank(*shape, rank, dtype="float64"):
    """m x n matrices of the given rank: a product of m x rank and rank x n factors."""
    *batch, m, n = shape
    return rand(*batch, m, rank, dtype=dtype) @ rand(*batch, rank, n, dtype=dtype)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("rows", [2, 3, 4])
def test_lstsq_residuals_are_differentiable_even_when_empty(driver, rows):
    """torch's residuals are the second differentiable output of lstsq, an empty one included (lantern's lstsq
    is a composite, so its nodes are named after its steps)."""
    case = Case("lstsq", lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver=driver)[:2]),
                rand(3, rows, 3, dtype="complex128"), rand(3, rows, 2, dtype="complex128"))
    (l_out, _, l_grads), (t_out, _, t_grads) = vjp(lantern, case), vjp(torch, case)
    assert all(out.requires_grad for out in l_out)
    assert_same((l_out, l_grads), (t_out, t_grads), atol=1e-8, rtol=1e-8, strides=False)


def test_matrix_power_zero_stays_in_the_graph():
    """A^0 is the identity, still a function of A (zero gradient), as torch's CopyBackwards makes it."""
    assert_gradients_match_torch(Case("matrix_power", lambda m, a: m.linalg.matrix_power(a, 0), rand(2, 3, 3)))


@pytest.mark.parametrize("kwargs", [dict(atol="tensor"), dict(rtol="tensor"), dict(atol="tensor", rtol="tensor")])
@pytest.mark.parametrize("batch", [(), (0,), (2,), (1, 1)])
def test_tensor_tolerances_hold_one_value_per_matrix(kwargs, batch):
    """atol and rtol tensors of the batch's shape: one tolerance for each matrix (rtol 0 where atol > 0)."""
    A = rand(*batch, 5, 4) * 3
    tolerances = {k: (np.linspace(0.5, 2, int(np.prod(batch))).reshape(batch) if v == "tensor" else v)
                  for k, v in kwargs.items()}

    def ranks_and_inverses(m, a, *values):
        given = {k: (values[i] if isinstance(v, np.ndarray) else v) for i, (k, v) in enumerate(tolerances.items())}
        return m.linalg.matrix_rank(a, **given), m.linalg.pinv(a, **given)
    tensors = [noncontig(v) if isinstance(v, np.ndarray) else v for v in tolerances.values()]
    check(ranks_and_inverses, noncontig(A), *tensors, atol=1e-10, rtol=1e-10, strides=False)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (2, 5, 5)])
def test_pinv_gradient_at_rank_deficient_matrices(shape, dtype):
    """pinv differentiates by its own formula (LinalgPinvBackward0), not through an SVD whose repeated zero
    singular values make the gradient ill-defined: torch's values on a rank-2 product a @ b^T."""
    *batch, m, n = shape
    case = Case("pinv", lambda lib, a, b: lib.linalg.pinv(a @ b.mT), rand(*batch, m, 2, dtype=dtype),
                rand(*batch, n, 2, dtype=dtype))
    assert_gradients_match_torch(case)
    assert_gradcheck_and_gradgradcheck(case)


def test_positional_tolerances():
    """matrix_rank(A, tol) is atol=tol with rtol 0; pinv(A, rcond) is rtol=rcond (torch's older overloads)."""
    A = noncontig(np.diag([4.0, 1.0, 0.3, 0.02]) @ rand(4, 4))
    for tol in (0.05, 0.5, 2.0):
        check(lambda m, a: (m.linalg.matrix_rank(a, tol), m.linalg.matrix_rank(a, tol, True),
                            m.linalg.pinv(a, tol / 4), m.linalg.pinv(a, tol / 4, False)), A, strides=False)


def test_pinv_tolerances_are_not_inputs_of_the_gradient():
    """A float tolerance is a number, a tensor one a non-differentiable argument: the gradient is A's alone."""
    names = []
    for lib in (torch, lantern):
        A = lib.tensor(rand(3, 4), requires_grad=True)
        out = lib.linalg.pinv(A, atol=lib.tensor(0.1, dtype=lib.float64), rtol=0.2)
        (grad,) = lib.autograd.grad(out.sum(), [A])
        names.append(type(out.grad_fn).__name__)
        assert grad.shape == A.shape
    assert names[0] == names[1] == "LinalgPinvBackward0"


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0), (3, 0, 4)])
@pytest.mark.parametrize("ord", ["fro", "nuc", float("inf"), -float("inf"), 1, -1, 2, -2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norms_of_empty_matrices(shape, ord, keepdim):
    """The max-like matrix norms (inf, 1, 2) of an empty matrix are 0; the min-like ones raise amin's IndexError
    when the dim they minimise over is empty."""
    A = np.zeros(shape)

    def norms(m, a):
        return m.linalg.matrix_norm(a, ord, keepdim=keepdim), m.linalg.norm(a, ord, (-2, -1), keepdim)
    try:
        norms(torch, torch.from_numpy(A))
    except IndexError:
        raises_like(norms, A, match=r"amin\(\): Expected reduction dim")
    else:
        check(norms, A, strides=False)


@pytest.mark.parametrize("ord", [0.5, -0.5, -1, -2, -3.5])
def test_vector_norm_gradient_at_zero_for_orders_below_one(ord):
    """|x|^(ord-1) is infinite at 0: the subgradient there is 0, as torch's (no NaN)."""
    zero_and_not = np.array([0.0, 0.0, 0.0])
    some_zero = np.array([0.5, 0.0, -2.0])
    for x in (zero_and_not, some_zero):
        assert_gradients_match_torch(Case("vector_norm", lambda m, t: m.linalg.vector_norm(t, ord), x))


def test_the_sweep_compares_decompositions_up_to_sign():
    """tools/opinfo_sweep.py compares the outputs of the decompositions whose vectors are unique only up to sign
    through their samples' output_process_fn_grad when they differ as they are (as torch's own tests do): vectors
    of other signs pass, other values do not; other OpInfos' functions (linalg.lu's drops P) are never used so."""
    import opinfo_sweep
    op = opinfo_sweep.in_scope_ops()["linalg.svd"]
    runner = opinfo_sweep.OpRunner(op, opinfo_sweep.Translator(), "quick", report=None)
    sample = next(s for s in op.sample_inputs("cpu", torch.float64)
                  if s.input.numel() and s.output_process_fn_grad.__name__ == "fn_U")  # compares |U|

    def flipped(A, full_matrices=True):
        U, S, Vh = lantern.linalg.svd(A, full_matrices=full_matrices)
        return U * -1, S, Vh * -1

    def scaled(A, full_matrices=True):
        U, S, Vh = lantern.linalg.svd(A, full_matrices=full_matrices)
        return U * 2, S, Vh

    assert runner._forward_sample(flipped, sample) is None
    assert runner._forward_sample(scaled, sample).startswith("through output_process_fn_grad: mismatch")

    lu = opinfo_sweep.in_scope_ops()["linalg.lu"]
    lu_runner = opinfo_sweep.OpRunner(lu, opinfo_sweep.Translator(), "quick", report=None)
    lu_sample = next(s for s in lu.sample_inputs("cpu", torch.float64) if s.input.numel() and s.input.dim() == 2)

    def reversed_permutation(A, pivot=True):
        P, L, U = lantern.linalg.lu(A, pivot=pivot)
        return P.flip(-1), L, U

    assert lu_runner._forward_sample(reversed_permutation, lu_sample).startswith("mismatch")


@pytest.mark.parametrize("function", ["pinv", "matrix_rank"])
@pytest.mark.parametrize("argname", ["atol", "rtol"])
def test_complex_tolerance_tensors_are_refused(function, argname):
    raises_like(lambda m, a, tol: getattr(m.linalg, function)(a, **{argname: tol}), rand(3, 3),
                np.array(0.5 + 0j, dtype=np.complex64), match=f"{argname} tensor of complex type is not supported")


@pytest.mark.parametrize("function", ["pinv", "matrix_rank"])
@pytest.mark.parametrize("tolerances", [dict(atol=1.0, rtol="per matrix"), dict(atol="per matrix", rtol=0.5),
                                        dict(atol=1.0, rtol="0-d"), dict(atol="per matrix", rtol="per matrix")])
def test_a_number_beside_a_tensor_of_tolerances(function, tolerances):
    """Numbers or tensors for both: a number beside a per-matrix tensor is a TypeError (no signature of torch's
    takes it); a 0-d tensor passes for a number."""
    values = {"per matrix": noncontig(np.array([0.5, 2.0])), "0-d": np.array(0.5)}
    names = [k for k, v in tolerances.items() if isinstance(v, str)]

    def call(m, a, *tensors):
        given = {**tolerances, **dict(zip(names, tensors))}
        return getattr(m.linalg, function)(a, **given)
    inputs = (noncontig(rand(2, 4, 3) * 3), *[values[tolerances[k]] for k in names])
    if any(isinstance(v, float) for v in tolerances.values()) and "per matrix" in tolerances.values():
        raises_like(call, *inputs)
    else:
        check(call, *inputs, strides=False)


def test_a_tensor_tol_in_the_positional_form():
    """matrix_rank(A, tol) takes a tensor of one tolerance per matrix too (rtol 0 beside it)."""
    check(lambda m, a, tol: m.linalg.matrix_rank(a, tol), noncontig(rand(2, 4, 3) * 3), np.array([0.5, 2.0]))

