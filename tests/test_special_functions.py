"""torch.special, all of it, against torch: values over grids with the edge cases (NaN, infinities, zeros,
negatives, large arguments and degrees), dtype promotion (integers and bools compute in float32), non-contiguous
inputs, out=, scalar arguments, float64 gradients and the error classes. lantern/ops/special_functions.py,
lantern/ops/special_polynomials.py and lantern/special.py; tests/test_special.py covers the older aliases."""
import numpy as np
import pytest
import torch

import lantern
import lantern.special
from deliberate_differences import DIFFERENCES
from oracle import check, noncontig, raises_like

nan, inf = np.nan, np.inf
GRID = np.array([[nan, inf, -inf, 0.0, -0.0, 1e-8], [0.3, 1.0, 2.5, 5.0, 8.1, 20.0],
                 [40.0, 100.0, 700.0, -1e-8, -0.3, -1.0], [-2.5, -5.0, -8.1, -20.0, -40.0, -700.0]])
UNIT = np.array([[nan, 0.0, 1.0, -0.1], [1.1, 1e-300, 0.3, 0.5], [0.999999, 1e-10, inf, 0.02]])
INTEGERS = np.array([[-3, 0, 2], [5, 1, 7]])
BOOLS = np.array([True, False, True])

# torch.special's one-argument functions added with the special_* ops: their inputs and, where torch's own OpInfos
# compare torch with SciPy at a looser precision (its Bessel kernels are less accurate than SciPy's),
# (rtol, atol) per dtype
ACCURATE_TO = {"float64": (1e-5, 1e-5), "float32": (1e-4, 1e-4)}
UNARY = {
    "airy_ai": (GRID, {}), "bessel_j0": (GRID, ACCURATE_TO), "bessel_j1": (GRID, ACCURATE_TO),
    "bessel_y0": (GRID, ACCURATE_TO), "bessel_y1": (GRID, ACCURATE_TO), "modified_bessel_i0": (GRID, {}),
    "modified_bessel_i1": (GRID, {}), "modified_bessel_k0": (GRID, {}), "modified_bessel_k1": (GRID, {}),
    "scaled_modified_bessel_k0": (GRID, {}), "scaled_modified_bessel_k1": (GRID, {}),
    "spherical_bessel_j0": (GRID, {}), "erfcx": (GRID, {}), "i0e": (GRID, {}),
    "i1": (GRID, {}), "i1e": (GRID, {}), "log_ndtr": (GRID, {"float32": (4e-6, 1e-5)}), "ndtr": (GRID, {}),
    "ndtri": (UNIT, {}), "entr": (GRID, {}),
}
HALF_PRECISION = {"i0e", "i1", "i1e", "entr", "ndtr"}   # the ones torch computes in float16/bfloat16
DIFFERENTIABLE = {"erfcx", "i0e", "i1", "i1e", "log_ndtr", "ndtr", "ndtri", "entr"}

POLYNOMIALS = sorted(n for n in torch.special.__all__ if "polynomial" in n)
X = np.array([-inf, -2.0, -1.0, -0.9999, -0.7, -0.5, 0.0, 1e-3, 0.25, 0.5, 0.9999, 1.0, 1.5, 3.0, inf])
DEGREES = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 8.0, 9.0, 12.0, 30.0, 2.9, nan, inf, -inf, 1e30])
HIGH_DEGREES = np.array([100.0, 127.0, 128.0, 129.0, 511.0, 512.0, 513.0, 2000.0])
# float32 kernels: torch's differ from SciPy's (and its recurrences contract to fused multiply-adds) by several ulp
FLOAT32_COMPUTED = {"rtol": 1e-4, "atol": 1e-5}


def tolerance(table, dtype):
    rtol, atol = table.get(np.dtype(dtype).name, (None, None))
    return {"rtol": rtol, "atol": atol}


def test_every_torch_special_function_is_in_lantern_special():
    missing = [n for n in torch.special.__all__ if not callable(getattr(lantern.special, n, None))]
    assert not missing
    assert sorted(lantern.special.__all__) == sorted(torch.special.__all__)


def test_the_tables_cover_torch_special():
    older = {"digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "log1p", "log_softmax",
             "logit", "logsumexp", "polygamma", "psi", "round", "sinc", "softmax", "xlogy"}  # tests/test_special.py
    here = set(UNARY) | set(POLYNOMIALS) | {"zeta", "xlog1py", "gammainc", "gammaincc", "multigammaln"}
    assert set(torch.special.__all__) == here | older


# ---- one argument -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_values_match_torch(name, dtype):
    values, tolerances = UNARY[name]
    assert tolerances is not ACCURATE_TO or DIFFERENCES["precision of torch.special's Bessel kernels"]
    assert dtype != np.float32 or DIFFERENCES["last digits of float32 special functions"]
    check(lambda lib, x: getattr(lib.special, name)(x), noncontig(values.astype(dtype)),
          **tolerance(tolerances, dtype))


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("values", [INTEGERS, BOOLS], ids=["int64", "bool"])
def test_unary_integer_and_bool_inputs_compute_in_float32(name, values):
    check(lambda lib, x: getattr(lib.special, name)(x), values, **tolerance(UNARY[name][1], np.float32))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_half_precision_and_complex_as_torch(name):
    x = np.array([0.25, 0.5, 2.0], dtype=np.float16)
    if name in HALF_PRECISION:
        check(lambda lib, a: getattr(lib.special, name)(a), x)
        check(lambda lib, a: getattr(lib.special, name)(a.to(lib.bfloat16)).float(), x.astype(np.float32))
    else:
        raises_like(lambda lib, a: getattr(lib.special, name)(a), x, match="not implemented for 'Half'")
    raises_like(lambda lib, a: getattr(lib.special, name)(a), x.astype(np.complex64), match="not implemented for")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_out(name):
    x = noncontig(np.array([0.2, 0.5, 0.9], dtype=np.float32))
    check(lambda lib, a: getattr(lib.special, name)(a, out=lib.empty(0, dtype=lib.float64)), x,
          **FLOAT32_COMPUTED)  # computed in float32, then widened
    raises_like(lambda lib, a: getattr(lib.special, name)(a, out=lib.empty(3, dtype=lib.int64)), x)
    raises_like(lambda lib: getattr(lib.special, name)(0.5))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients_match_torch(name):
    """float64 gradients of the differentiable ones (values, at the edges too, and gradcheck); the others give a
    result that does not require grad, as torch's do."""
    x = (UNIT if name == "ndtri" else GRID)[1:].ravel()
    x = x[np.isfinite(x)]

    def grad(lib, t):
        result = getattr(lib.special, name)(t.requires_grad_())
        if not result.requires_grad:
            return result.requires_grad
        return lib.autograd.grad(result.sum(), t)[0]

    check(grad, x, **tolerance(UNARY[name][1], np.float64))
    if name in DIFFERENTIABLE:
        inside = lantern.tensor([0.05, 0.3, 0.7] if name == "ndtri" else [-2.5, -0.4, 0.3, 1.7, 4.0],
                                dtype=lantern.float64, requires_grad=True)
        if name == "entr":
            inside = (inside.detach().abs() + 0.1).requires_grad_()
        assert lantern.autograd.gradcheck(getattr(lantern.special, name), (inside,))
        assert lantern.autograd.gradgradcheck(getattr(lantern.special, name), (inside,))


def test_airy_ai_far_out_as_torch():
    """Where SciPy gives up (|x| > ~1e6): 0 on the right, the asymptotic form on the left, as torch's kernel."""
    check(lambda lib, x: lib.special.airy_ai(x), np.array([1.3e6, 1e9, 1e300, -1e7, -1e9, -1e205]), rtol=1e-6)


# ---- two arguments: zeta, xlog1py, gammainc/igamma, gammaincc/igammac ----------------------------------------------

PAIR = np.array([nan, inf, -inf, 0.0, -0.0, 1e-8, 0.3, 1.0, 2.0, 2.5, 5.0, 30.0, -0.3, -1.0, -2.0, -2.5])
BINARY = ["zeta", "xlog1py", "gammainc", "gammaincc"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_values_match_torch(name, dtype):
    x, y = np.meshgrid(PAIR.astype(dtype), PAIR.astype(dtype), indexing="ij")
    check(lambda lib, a, b: getattr(lib.special, name)(a, b), noncontig(x), y)


@pytest.mark.parametrize("name", ["zeta", "xlog1py"])
def test_zeta_and_xlog1py_take_numbers_and_promote(name):
    x = np.array([[0.5, 2.0, 3.5], [1.0, 7.0, -2.0]])
    check(lambda lib, a: getattr(lib.special, name)(3.0, a), x)
    check(lambda lib, a: getattr(lib.special, name)(a, 2), x.astype(np.float32))
    check(lambda lib, a, b: getattr(lib.special, name)(a, b), INTEGERS, INTEGERS[::-1].copy())
    check(lambda lib, a, b: getattr(lib.special, name)(a, b), x.astype(np.float32), x)
    check(lambda lib, a: getattr(lib.special, name)(a, 2.0, out=lib.empty(0, dtype=lib.float64)), x)
    raises_like(lambda lib: getattr(lib.special, name)(2.0, 3.0))
    raises_like(lambda lib, a: getattr(lib.special, name)(a, a), x.astype(np.complex64))


def test_igamma_and_igammac_are_torch_functions_and_methods():
    a, x = np.array([[0.5, 2.0, 3.5], [1.0, 7.0, 0.1]]), np.array([[0.2, 1.0, 4.0], [9.0, 0.5, 3.0]])
    for name in ("igamma", "igammac"):
        check(lambda lib, p, q: getattr(lib, name)(p, q), noncontig(a), x)
        check(lambda lib, p, q: getattr(p, name)(q), a, x)
        check(lambda lib, p, q: getattr(p, name + "_")(q), a, x)
        check(lambda lib, p, q: getattr(lib, name)(p, q, out=lib.empty(0, dtype=lib.float64)), a, x)
        check(lambda lib, p, q: getattr(lib, name)(p, q), a.astype(np.float16), x.astype(np.float16))
        check(lambda lib, p, q: getattr(lib, name)(p, q), a.astype(np.float32), x)
        raises_like(lambda lib, p: getattr(lib, name)(p, p), INTEGERS, match="not implemented for 'Long'")
        raises_like(lambda lib, p: getattr(lib, name)(p, p), BOOLS, match="not implemented for 'Bool'")
        raises_like(lambda lib, p: getattr(lib, name)(p, 2.0), a)


def test_binary_gradients_match_torch():
    a = np.array([0.5, 1.5, 2.0, 3.5, 6.0])
    q = np.array([0.3, 1.0, 2.5, 4.0, 1.2])

    def grads(name, wrt):
        def fn(lib, p, r):
            inputs = (p, r)
            inputs[wrt].requires_grad_()
            return lib.autograd.grad(getattr(lib.special, name)(*inputs).sum(), inputs[wrt])[0]
        return fn

    check(grads("xlog1py", 0), np.array([0.0, 0.0, -1.0, 1.0, 0.5]), np.array([0.0, -1.0, -1.0, -2.0, 0.5]))
    check(grads("xlog1py", 1), np.array([0.0, 0.0, -1.0, 1.0, 0.5]), np.array([0.0, -1.0, -1.0, -2.0, 0.5]))
    for name in ("zeta", "gammainc", "gammaincc"):
        check(grads(name, 1), a + (1 if name == "zeta" else 0), q)
        raises_like(grads(name, 0), a + 1, q, match="the derivative for '(zeta|igamma: input|igammac: input)' is "
                                                   "not implemented")
    t = lantern.tensor(a + 1, requires_grad=True)
    u = lantern.tensor(q, dtype=lantern.float64, requires_grad=True)
    for name in ("zeta", "gammainc", "gammaincc"):
        assert lantern.autograd.gradcheck(lambda r: getattr(lantern.special, name)(t.detach(), r), (u,))
        assert lantern.autograd.gradgradcheck(lambda r: getattr(lantern.special, name)(t.detach(), r), (u,))
    assert lantern.autograd.gradcheck(lantern.special.xlog1py, (t, u))
    assert lantern.autograd.gradgradcheck(lantern.special.xlog1py, (t, u))
    check(lambda lib, r: lib.autograd.grad(lib.special.zeta(3.0, r.requires_grad_()).sum(), r)[0], q)


# ---- mvlgamma / multigammaln ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_mvlgamma_matches_torch(p):
    x = noncontig(np.array([[2.5, 3.0, 4.5], [7.0, 0.2, nan]]))
    check(lambda lib, a: lib.special.multigammaln(a, p), x)
    check(lambda lib, a: lib.mvlgamma(a, p), x.astype(np.float32))
    check(lambda lib, a: a.mvlgamma(p), x)
    check(lambda lib, a: a.clone().mvlgamma_(p), x)
    check(lambda lib, a: lib.mvlgamma(a, p=p, out=lib.empty(0, dtype=lib.float64)), x.astype(np.float32))
    check(lambda lib, a: lib.mvlgamma(a, p), INTEGERS + 3)
    check(lambda lib, a: lib.mvlgamma(a, p), (x + 3).astype(np.float16))
    check(lambda lib, a: lib.autograd.grad(lib.mvlgamma(a.requires_grad_(), p).sum(), a)[0], x + 1)
    t = lantern.tensor([2.5, 3.0, 4.5], dtype=lantern.float64, requires_grad=True)
    assert lantern.autograd.gradcheck(lambda a: lantern.mvlgamma(a, p), (t,))
    assert lantern.autograd.gradgradcheck(lambda a: lantern.mvlgamma(a, p), (t,))


def test_mvlgamma_errors_as_torch():
    raises_like(lambda lib, a: lib.mvlgamma(a, 0), np.array([2.0]), match="p has to be greater than or equal to 1")
    raises_like(lambda lib, a: lib.mvlgamma(a, 2), BOOLS, match="may not be a boolean tensor")
    raises_like(lambda lib, a: a.mvlgamma_(2), INTEGERS + 3)


# ---- the orthogonal polynomials ------------------------------------------------------------------------------------

def _grid(degrees, dtype):
    x, n = np.meshgrid(X, degrees, indexing="ij")
    return noncontig(x.astype(dtype)), n.astype(dtype)


@pytest.mark.parametrize("name", POLYNOMIALS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_polynomial_values_match_torch(name, dtype):
    """x and n over a grid: ends of the interval, |x| > 1, infinities, negative/fractional/NaN/huge n."""
    assert dtype != np.float32 or DIFFERENCES["last digits of float32 special functions"]
    check(lambda lib, x, n: getattr(lib.special, name)(x, n), *_grid(DEGREES, dtype),
          **(FLOAT32_COMPUTED if dtype == np.float32 else {}))


@pytest.mark.slow
@pytest.mark.parametrize("name", POLYNOMIALS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_polynomial_high_degrees_match_torch(name, dtype):
    """Up to the Hermite limits (128 in float32, 512 in float64: NaN past them) and beyond; overflow gives NaN.
    float32 recurrences this long round differently from torch's (which contracts to fused multiply-adds)."""
    check(lambda lib, x, n: getattr(lib.special, name)(x, n), *_grid(HIGH_DEGREES, dtype),
          **({"rtol": 2e-3, "atol": 1e-3} if dtype == np.float32 else {"rtol": 1e-7, "atol": 1e-10}))


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_scalars_dtypes_and_out(name):
    x = np.array([[-1.5, -0.3, 0.0, 0.6, 1.0, 2.0]])
    n = np.array([[0], [1], [4], [9]])

    def polynomial(lib, *args, **kwargs):
        return getattr(lib.special, name)(*args, **kwargs)

    check(lambda lib, a: polynomial(lib, 0.5, a), n, **FLOAT32_COMPUTED)
    check(lambda lib, a: polynomial(lib, a, 3), x.astype(np.float32), **FLOAT32_COMPUTED)
    check(lambda lib, a: polynomial(lib, a, 3), np.array([-1, 0, 1, 2]), **FLOAT32_COMPUTED)
    check(lambda lib, a, b: polynomial(lib, a, b), np.array([-2, 0, 1, 3]), np.array([3, 2, 1, 5]),
          **FLOAT32_COMPUTED)
    check(lambda lib, a, b: polynomial(lib, a, b), BOOLS, BOOLS)
    check(lambda lib, a, b: polynomial(lib, a, b), x.astype(np.float32), n, **FLOAT32_COMPUTED)
    check(lambda lib, a, b: polynomial(lib, a, b, out=lib.empty(0, dtype=lib.float64)), x.astype(np.float32), n,
          **FLOAT32_COMPUTED)
    check(lambda lib, a: polynomial(lib, a.requires_grad_(), 2).requires_grad, x)
    check(lambda lib, a: polynomial(lib, np.nan, a), np.array([-1, 0, 1]))


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_of_nan_are_nan(name):
    """For n >= 2 some of torch's kernels return an uninitialized value at x = NaN: lantern's answer is NaN."""
    assert DIFFERENCES["orthogonal polynomials at x = NaN"]
    result = getattr(lantern.special, name)(lantern.tensor([nan, nan, nan]), lantern.tensor([2, 3, 9]))
    assert result.isnan().all()


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_errors_as_torch(name):
    raises_like(lambda lib: getattr(lib.special, name)(0.5, 3))
    raises_like(lambda lib, a: getattr(lib.special, name)(a, a), np.array([0.5], dtype=np.float16),
                match="not implemented for 'Half'")
    raises_like(lambda lib, a: getattr(lib.special, name)(a, 2), np.array([0.5], dtype=np.complex64))
    raises_like(lambda lib, a, b: getattr(lib.special, name)(a, b), np.ones(3), np.ones(2))
    raises_like(lambda lib, a: getattr(lib.special, name)(a, 2, out=lib.empty(1, dtype=lib.int64)), np.ones(1))
