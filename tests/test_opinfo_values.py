"""Values the OpInfo sweep found wrong (area "values" of issue 16), pinned against torch in the same process.

Ties: torch's CPU sort (stable=False), topk, kthvalue and mode leave equal values where libstdc++'s std::sort,
std::partial_sort, std::nth_element and ATen's quick-select put them; lantern/ops/sorting_tie_order.py replays them.
"""
import numpy as np
import pytest

from oracle import check

RNG = np.random.default_rng(2024)


def tied(shape, distinct=3, dtype=np.float32, nan_fraction=0.0):
    """Values with many ties (`distinct` different ones), some NaN when asked."""
    x = RNG.integers(0, distinct, shape).astype(dtype)
    if nan_fraction:
        x[RNG.random(shape) < nan_fraction] = np.nan
    return x


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("dim", [0, 1])
def test_sort_leaves_ties_where_std_sort_does(dtype, dim, descending):
    x = tied((40, 70), dtype=dtype)
    check(lambda m, t: m.sort(t, dim=dim, descending=descending), x)
    check(lambda m, t: m.argsort(t, dim=dim, descending=descending), x)
    check(lambda m, t: m.sort(t, dim=dim, descending=descending, stable=True), x)


def test_sort_ties_with_nan_and_the_msort_and_noncontiguous_forms():
    x = tied((300,), nan_fraction=0.2)
    check(lambda m, t: m.sort(t), x)
    check(lambda m, t: m.sort(t, descending=True), x)
    check(lambda m, t: m.msort(t), tied((50, 4)))
    check(lambda m, t: m.sort(t.t(), 0), tied((5, 60)))


def test_long_ascending_integer_sort_is_the_stable_radix_sort():
    x = tied((40000,), distinct=50, dtype=np.int64)
    check(lambda m, t: m.sort(t), x)
    check(lambda m, t: m.sort(t, descending=True), x)  # descending stays std::sort
    check(lambda m, t: m.sort(t), x[:32767])          # one short of ATen's grain size: std::sort


@pytest.mark.parametrize("k", [1, 2, 7, 30])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("sorted", [True, False])
def test_topk_ties_through_partial_sort_and_nth_element(k, largest, sorted):
    x = tied((6, 500), distinct=4, nan_fraction=0.05)  # k * 64 <= 500 takes partial_sort, larger k nth_element
    check(lambda m, t: m.topk(t, k, largest=largest, sorted=sorted), x)
    check(lambda m, t: m.topk(t, min(k, 5), dim=0, largest=largest, sorted=sorted), x)


def test_topk_unsorted_order_without_ties():
    x = RNG.permutation(200).astype(np.float64)
    check(lambda m, t: m.topk(t, 20, sorted=False), x)


@pytest.mark.parametrize("k", [1, 3, 8, 20])
def test_kthvalue_ties_through_quick_select(k):
    x = tied((7, 20), distinct=5, nan_fraction=0.1)
    check(lambda m, t: m.kthvalue(t, k), x)
    check(lambda m, t: m.kthvalue(t, min(k, 7), 0, keepdim=True), x)
    check(lambda m, t: m.kthvalue(t, k), tied((3, 20), dtype=np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_mode_index_is_the_end_of_the_run_std_sort_leaves(dtype):
    x = tied((8, 3000), distinct=6, dtype=dtype)
    check(lambda m, t: m.mode(t), x)
    check(lambda m, t: m.mode(t, 0), x)


def test_mode_with_nan_compares_as_cpp_does():
    check(lambda m, t: m.mode(t), np.array([np.nan, 1, np.nan, 1, np.nan], np.float32))
    check(lambda m, t: m.mode(t), tied((4, 12), nan_fraction=0.3))


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("value", [2.5, -2.5])
def test_scatter_scalar_value_is_cast_to_self_dtype_before_reducing(reduce, value):
    index = np.array([[0, 1], [2, 0]])
    check(lambda m, t, i: m.scatter(t, 1, i, value, reduce=reduce), np.array([[-3, 4, 5], [6, -7, 8]]), index)
    check(lambda m, t, i: m.scatter(t, 1, i, value, reduce=reduce), np.array([[-3.5, 4, 5], [6, -7, 8]]), index)


# ---- matrix products round as torch's CPU kernels do ------------------------------------------------------------

def _exactly_as_torch(fn, *arrays):
    """fn(lib, *tensors) gives bit-identical results in torch and lantern."""
    import torch

    import lantern
    expected = fn(torch, *(torch.from_numpy(a) for a in arrays)).numpy()
    got = fn(lantern, *(lantern.tensor(a) for a in arrays)).numpy()
    np.testing.assert_array_equal(got, expected)


def _random(shape, dtype):
    x = RNG.standard_normal(shape) * 5
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape) * 5
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_small_bmm_and_baddbmm_sum_one_k_at_a_time(dtype):
    a, b = _random((5, 5, 10), dtype), _random((5, 10, 5), dtype)  # 10 * 5 * 5 < 400: ATen's own loop
    _exactly_as_torch(lambda m, x, y: m.bmm(x, y), a, b)
    _exactly_as_torch(lambda m, x, y: m.matmul(x[0], y), a, b)   # broadcast into bmm
    _exactly_as_torch(lambda m, x, y: m.matmul(x[0, 0], y), a, b)
    c = _random((5, 5, 5), dtype)
    beta, alpha = (1 + 2j, 2 + 3j) if np.dtype(dtype).kind == "c" else (0.5, 1.5)
    _exactly_as_torch(lambda m, s, x, y: m.baddbmm(s, x, y, beta=beta, alpha=alpha), c, a, b)
    _exactly_as_torch(lambda m, s, x, y: m.baddbmm(s, x, y, beta=0, alpha=alpha), c, a, b)


def test_complex_products_through_blas_sum_their_real_products_apart():
    a, b = _random((25, 10, 10), np.complex64), _random((25, 10, 5), np.complex64)
    _exactly_as_torch(lambda m, x, y: m.bmm(x, y), a, b)
    _exactly_as_torch(lambda m, x, y: m.mm(x[0], y[0]), a, b)
    check(lambda m, x, y: m.matmul(x.reshape(5, 5, 10, 10), y.reshape(5, 5, 10, 5)), a, b)


def test_complex_mv_is_atens_gemv_loop():
    a, v = _random((250, 10), np.complex64), _random((10,), np.complex64)
    _exactly_as_torch(lambda m, x, y: m.mv(x, y), a, v)
    _exactly_as_torch(lambda m, x, y: m.matmul(x.reshape(5, 5, 10, 10), y), a, v)


def test_cdist_matmul_route_is_one_product_of_padded_rows():
    """Near points far from the origin: |a|^2 + |b|^2 - 2 a.b cancels, so the summation order shows. (Exact
    equality is not asked: torch's float32 sqrt is not correctly rounded, NumPy's is.) Only a product small enough
    for ATen's bmm loop; a larger one goes to MKL's sgemm, whose order lantern does not reproduce."""
    x1 = _random((5, 5, 2), np.float32)
    x2 = (x1[:, :4] + RNG.standard_normal((5, 4, 2)).astype(np.float32) * 0.05).astype(np.float32)
    check(lambda m, x, y: m.cdist(x, y, compute_mode="use_mm_for_euclid_dist"), x1, x2)


# ---- complex logcumsumexp --------------------------------------------------------------------------------------

def test_complex_logcumsumexp_values_and_gradient():
    x = _random((4, 6), np.complex64) / 5
    check(lambda m, t: m.logcumsumexp(t, 1), x)
    check(lambda m, t: m.logcumsumexp(t, 0), x.T)
    check(lambda m, t: m.logcumsumexp(t, 0), np.array(1 + 2j, np.complex64))
    special = np.array([complex(-np.inf, 1), complex(-np.inf, 2), 1 + 1j, complex(np.inf, 0.5),
                        complex(np.inf, 0.25), complex(np.nan, 0), 2j], np.complex64)
    check(lambda m, t: m.logcumsumexp(t, 0), special)

    def gradient(m, t):
        t = t.clone().requires_grad_()
        weights = m.linspace(-1, 1, 24).reshape(4, 6) * (1 - 0.5j)
        (t.logcumsumexp(1) * weights.to(t.dtype)).sum().abs().backward()
        return t.grad
    check(gradient, x.astype(np.complex128))


# ---- quantile's gradient reaches q ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "midpoint", "lower"])
def test_quantile_gradient_reaches_q(name, interpolation):
    x = _random((3, 7), np.float64)
    x[0, 2] = np.nan

    def gradients(m, t, q):
        t, q = t.clone().requires_grad_(), q.clone().requires_grad_()
        out = getattr(m, name)(t, q, dim=1, interpolation=interpolation)
        (m.nan_to_num(out) * m.arange(1.0, 7.0, dtype=m.float64).reshape(2, 3)).sum().backward()
        return t.grad, q.grad
    check(gradients, x, np.array([0.3, 0.75]))


# ---- special functions computed as ATen computes them --------------------------------------------------------------

def test_trigamma_is_atens_reflection_recurrence_and_series():
    """float32 trigamma of negative x: ATen rounds pi * x in float32 before the sine, far from the true value."""
    x = np.array([-7.950587, -3.0336847, -3.973022, -0.5, 0.0, 0.25, 3.0, 40.0, np.inf, -np.inf, np.nan],
                 np.float32)
    check(lambda m, t: m.polygamma(1, t), x)
    check(lambda m, t: m.special.polygamma(1, t), x.astype(np.float64))
    check(lambda m, t: m.polygamma(1, t), _random((200,), np.float32))


@pytest.mark.parametrize("name", ["hermite_polynomial_he", "hermite_polynomial_h"])
def test_hermite_recurrence_fuses_its_multiply_add_in_float32(name):
    x = np.array([3.7644825, -3.327921, 0.5, -2.0], np.float32)
    n = np.array([7.958866, 6.7917824, 12.0, 20.0], np.float32)
    check(lambda m, t, k: getattr(m.special, name)(t, k), x, n)
    check(lambda m, t, k: getattr(m.special, name)(t, k), _random((400,), np.float32), RNG.integers(0, 30, 400)
          .astype(np.float32))


def test_hurwitz_zeta_and_higher_polygamma_follow_atens_cephes_zeta():
    """ATen's first term q^-x is a power in the input dtype (float32 digits go near negative q); q = inf is NaN;
    a q far below 0 sums millions of terms, in order."""
    q = np.array([-0.49933505, -0.4998715, 2.5, 1.0, np.inf, -3.0, 0.0, -2.5, np.nan, -13437.7], np.float32)
    for n in (2, 3, 4):
        check(lambda m, t: m.polygamma(n, t), q)
    check(lambda m, t: m.special.zeta(t, m.tensor(-0.49933505)), np.array([2.0, 3.0, 5.0, 0.5, 1.0], np.float32))
    check(lambda m, t, u: m.special.zeta(t, u), np.array([2.0, 5.0, 4.0, 2.5]), np.array([-4988429.3, 3.0, -2.5,
                                                                                        np.inf]))
    check(lambda m, t: m.special.zeta(t, 2.0), np.array([3.0, 1.0, 0.5], np.float32))


def test_mvlgamma_of_minus_infinity_is_infinity():
    check(lambda m, t: m.mvlgamma(t, 1), np.array([-np.inf, 2.5], np.float32))


@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"])
def test_bessel_beyond_five_is_atens_asymptotic_form(name):
    """Near the zeros past x = 5 ATen's form is ~1e-6 off the true values (SciPy's); infinity gives NaN."""
    x = np.array([-5.4215280659972755, 5.576059452216908, -5.439777184204883, 7.0, -12.5, 30.0, 4.0, -3.0, 0.0,
                  np.inf, -np.inf, np.nan])
    check(lambda m, t: getattr(m.special, name)(t), x)
    check(lambda m, t: getattr(m.special, name)(t), np.linspace(-40, 40, 801).astype(np.float32))
