"""Complex arithmetic at extremal values (infinite, NaN, signed-zero, huge and tiny parts) against torch: mul,
square, pow (tensor, number and number-base forms), float_power and logaddexp, over contiguous and strided
operands. ATen multiplies complex numbers differently in the two layouts (lantern/ops/complex_arithmetic.py), so
every exact comparison runs on both.
"""
import math

import numpy as np
import pytest
import torch

import lantern
from deliberate_differences import DIFFERENCES

PARTS = [math.inf, -math.inf, math.nan, 0.0, -0.0, 1.0, -1.0, 3.0, 0.5, 1e-30, 13437.7, 1e20, -1e20]
DTYPES = ["complex64", "complex128"]
LAYOUTS = ["contiguous", "strided"]


def values(dtype):
    """Every complex number whose parts are in PARTS, padded with ones to a multiple of 16 elements (so that no
    element falls in the leftover tail of ATen's vector loop: see test_product_at_the_end_of_a_contiguous_run)."""
    parts = np.array(PARTS, np.dtype(dtype).type(0).real.dtype)
    out = np.ones(-(-len(parts) ** 2 // 16) * 16, dtype)
    out.real[:len(parts) ** 2] = np.repeat(parts, len(parts))
    out.imag[:len(parts) ** 2] = np.tile(parts, len(parts))
    return out


def pairs(dtype):
    """(x, y): every value against every value, as two flat arrays."""
    v = values(dtype)
    return np.repeat(v, len(v)), np.tile(v, len(v))


def both(arr, layout):
    """arr as a torch tensor and a lantern tensor, contiguous or strided (every other element of a buffer)."""
    if layout == "contiguous":
        return torch.from_numpy(arr.copy()), lantern.tensor(arr)
    buffer = np.repeat(arr, 2)
    return torch.from_numpy(buffer)[::2], lantern.tensor(buffer)[::2]


def assert_identical(got, expected):
    """The same complex numbers part by part (NaN matching NaN), dtype included."""
    got, expected = got.numpy(), expected.numpy()
    assert got.dtype == expected.dtype
    for g, e in ((got.real, expected.real), (got.imag, expected.imag)):
        differ = ~((g == e) | (np.isnan(g) & np.isnan(e)))
        assert not differ.any(), f"{differ.sum()} differ, e.g. {got[differ.nonzero()][:3]} vs " \
                                 f"{expected[differ.nonzero()][:3]}"


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_mul(dtype, layout):
    (tx, lx), (ty, ly) = (both(a, layout) for a in pairs(dtype))
    with np.errstate(all="ignore"):
        assert_identical(lx * ly, tx * ty)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_mul_by_a_number_and_a_zero_dim_tensor(dtype, layout):
    tx, lx = both(values(dtype), layout)
    for number in (1e20 + 1e20j, complex(math.inf, 0), 13437.7 - 1e20j):
        assert_identical(lx * number, tx * number)
        assert_identical(lantern.tensor(number, dtype=lx.dtype) * lx, torch.tensor(number, dtype=tx.dtype) * tx)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent", [0, 1, 2, 3, -2, 0.5, 1.5, 2j, 2 + 0j])
def test_pow_number_exponent(dtype, layout, exponent):
    tx, lx = both(values(dtype), layout)
    assert_identical(lx ** exponent, tx ** exponent)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_square(dtype, layout):
    tx, lx = both(values(dtype), layout)
    assert_identical(lx.square(), tx.square())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_pow_tensor_exponent(dtype, layout):
    """C's cpow elementwise: 0 ** 0 is nan+nanj (NumPy says 1), (inf+infj) ** (1+nanj) is inf+nanj."""
    (tx, lx), (ty, ly) = (both(a, layout) for a in pairs(dtype))
    assert_identical(lx ** ly, tx ** ty)
    assert_identical(lantern.float_power(lx, ly), torch.float_power(tx, ty))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("base", [1, 2, 0j, -0.5 + 1e20j])
def test_pow_of_a_number_base(dtype, base):
    """number ** tensor: a base of 1 gives 1 whatever the exponent (nan included); other bases go through cpow."""
    tx, lx = both(values(dtype), "contiguous")
    assert_identical(base ** lx, base ** tx)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_logaddexp(dtype, layout):
    """ATen's complex logaddexp: infinities and NaNs exactly, finite values within torch's tolerances (the last
    bits of exp, atan2 and log1p may differ from the C library's)."""
    (tx, lx), (ty, ly) = (both(a, layout) for a in pairs(dtype))
    got, expected = lantern.logaddexp(lx, ly).numpy(), torch.logaddexp(tx, ty).numpy()
    finite = np.isfinite(expected)
    assert_identical(lantern.tensor(np.where(finite, 0, got)), torch.from_numpy(np.where(finite, 0, expected)))
    torch.testing.assert_close(torch.from_numpy(got[finite]), torch.from_numpy(expected[finite]))


def test_logaddexp_where_the_exponent_cancels():
    """exp(min - max) near -1 (imaginary parts apart by about pi) and a huge imaginary difference: the cases whose
    float32 rounding decides the answer (OpInfo reference samples)."""
    x = np.array([-0.001j, -501 - 1001.2j, -501 - 13437.7j], np.complex64)
    y = np.array([3.1415927j, -501 + 4.988429e+06j, -501 - 4.988429e+06j], np.complex64)
    got = lantern.logaddexp(lantern.tensor(x), lantern.tensor(y))
    torch.testing.assert_close(torch.from_numpy(got.numpy()), torch.logaddexp(torch.from_numpy(x), torch.from_numpy(y)))


def test_logcumsumexp_of_extremal_values():
    """logcumsumexp steps with the same logaddexp helper (in complex128, as ATen accumulates)."""
    v = values("complex64")
    expected = torch.logcumsumexp(torch.from_numpy(v), 0).numpy()
    got = lantern.logcumsumexp(lantern.tensor(v), 0).numpy()
    finite = np.isfinite(expected)
    assert_identical(lantern.tensor(np.where(finite, 0, got)), torch.from_numpy(np.where(finite, 0, expected)))
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1.3e-6, atol=1e-5)


def test_product_at_the_end_of_a_contiguous_run():
    """ATen finishes the last elements of a contiguous run (fewer than its vector loop takes at a time) with
    compiled code that fuses multiply and add, as strided data; lantern takes the schoolbook product over the
    whole run. Pinned on both sides: two complex64 elements, where the parts cancel."""
    assert DIFFERENCES["complex products at the end of a contiguous run"]
    x = np.array([13437.7 + 13437.7j] * 2, np.complex64)
    y = np.array([-1e20 + 1e20j] * 2, np.complex64)
    fused = (x * y)[0]  # NumPy's array loop: ad + bc rounded once, so the imaginary part is not 0
    assert fused.imag != 0
    assert (torch.from_numpy(x) * torch.from_numpy(y)).numpy()[0] == fused
    assert (lantern.tensor(x) * lantern.tensor(y)).numpy()[0] == np.complex64(-2.6875402e+24 + 0j)
