"""Reductions against torch: sum, mean, prod, max/min (full, dim -> (values, indices), other -> maximum), amax,
amin, argmax, argmin, any, all, over int/tuple/negative/None dims, keepdim, dtype=, out= and the errors.
"""
import numpy as np
import pytest
import torch

import lantern
from deliberate_differences import DIFFERENCES
from oracle import DTYPE_PAIRS, check, matches_torch, noncontig, raises_like
from device_generic import lantern_device  # noqa: F401  (the fixture: these tests run on cpu and openreg)

pytestmark = pytest.mark.usefixtures("lantern_device")

NAMES = [str(t).replace("torch.", "") for t, _ in DTYPE_PAIRS]
DIMS = [None, 0, 1, -1, (0, 2), (-1, 0), (), (2,)]


def sample(name, shape=(2, 3, 4)):
    n = int(np.prod(shape))
    i = (np.arange(n) * 7) % 11
    if name == "bool":
        vals = i % 3 != 0
    elif name == "uint8":
        vals = i % 4 + 1
    elif name.startswith("int"):
        vals = i % 5 - 2
    elif name.startswith("complex"):
        vals = (i - 5) * 0.25 + 0.5j * (i % 3)
    else:
        vals = (i - 5) * 0.25
    return noncontig(np.asarray(vals).astype("float32" if name == "bfloat16" else name).reshape(shape))


def as_(m, x, name):
    return x.to(getattr(m, name)) if name == "bfloat16" else x


def reduce_call(name, dim, keepdim, **kw):
    def fn(m, x):
        if dim is None:
            return getattr(m, name)(x, **kw)
        return getattr(m, name)(x, dim, keepdim=keepdim, **kw)
    return fn


@pytest.mark.parametrize("dtype", NAMES)
@pytest.mark.parametrize("op", ["sum", "prod", "mean"])
def test_sum_prod_mean(op, dtype):
    for dim in DIMS:
        for keepdim in (False, True):
            fn = reduce_call(op, dim, keepdim)
            matches_torch(lambda m, x: fn(m, as_(m, x, dtype)), sample(dtype))
            if op == "prod" and dim is None:
                continue  # a deliberate difference: test_prod_dim_none_is_accepted
            if op == "prod" and not isinstance(dim, int):
                raises_like(lambda m, x: x.prod(dim=dim), sample(dtype))  # prod takes one int dim
                continue
            matches_torch(lambda m, x: getattr(as_(m, x, dtype), op)(dim=dim, keepdim=keepdim), sample(dtype))


def test_prod_dim_none_is_accepted():
    """torch refuses x.prod(dim=None) (its overloads are prod() and prod(int dim)); lantern, whose one prod schema
    has an optional dim, reads it as x.prod(). Pinned here as a listed deliberate difference."""
    assert DIFFERENCES["prod(dim=None)"]
    with pytest.raises(TypeError, match="prod"):
        torch.ones(2, 3).prod(dim=None)
    check(lambda m, x: x.prod(dim=None) if m is lantern else x.prod(), sample("float32"))


@pytest.mark.parametrize("target", ["float64", "int32", "complex64", "float16", "bool"])
@pytest.mark.parametrize("op", ["sum", "prod", "mean"])
def test_dtype_argument(op, target):
    for src in ("int64", "float32", "bool"):
        matches_torch(lambda m, x: getattr(m, op)(x, dtype=getattr(m, target)), sample(src))
        matches_torch(lambda m, x: getattr(m, op)(x, 1, dtype=getattr(m, target)), sample(src))


def test_spec_row_30():
    check(lambda m, x: x.sum(), np.arange(6, dtype=np.int8))
    check(lambda m, x: x.sum(1).dtype, np.ones((2, 3), np.uint8))
    check(lambda m, x: x.sum(dim=(0, 1), keepdim=True), noncontig(np.ones((2, 3), np.int32)))
    _, msg = raises_like(lambda m, x: x.mean(), np.arange(6))
    assert "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. " \
           "Got: Long" in msg
    raises_like(lambda m, x: x.mean(0), np.arange(6, dtype=np.int32))
    raises_like(lambda m, x: x.mean(), np.ones(3, bool))
    check(lambda m, x: x.mean(dtype=m.float64), np.arange(6))
    _, msg = raises_like(lambda m, x: x.mean(dtype=m.int32), np.arange(6.))
    assert "Optional dtype must be either a floating point or complex dtype. Got: Int" in msg


def test_reduction_dim_errors():
    raises_like(lambda m, x: x.sum(3), sample("float32"))
    raises_like(lambda m, x: x.sum((0, 0)), sample("float32"))
    raises_like(lambda m, x: x.sum((0, -3)), sample("float32"))
    raises_like(lambda m, x: x.amax(5), sample("float32"))
    raises_like(lambda m, x: x.argmax(3), sample("float32"))
    raises_like(lambda m, x: x.max(3), sample("float32"))


def test_zero_dim_and_empty():
    for op in ("sum", "prod", "mean", "amax", "amin", "argmax", "argmin", "any", "all"):
        check(lambda m, x: getattr(m, op)(x), np.array(2.5, np.float32))
        check(lambda m, x: getattr(m, op)(x, 0), np.array(2.5, np.float32))
        check(lambda m, x: getattr(m, op)(x, -1, keepdim=True), np.array(2.5, np.float32))
    check(lambda m, x: (x.max(), x.min(), x.max(0), x.min(-1, keepdim=True)), np.array(2.5, np.float32))
    for op in ("sum", "prod", "mean", "any", "all"):
        check(lambda m, x: getattr(m, op)(x), np.zeros((0, 3), np.float32))
        check(lambda m, x: getattr(m, op)(x, 0), np.zeros((0, 3), np.float32))
        check(lambda m, x: getattr(m, op)(x, 1).shape, np.zeros((0, 3), np.float32))


@pytest.mark.parametrize("op", ["amax", "amin", "argmax", "argmin", "max", "min"])
def test_empty_errors(op):
    raises_like(lambda m, x: getattr(m, op)(x), np.zeros((0, 3), np.float32))
    raises_like(lambda m, x: getattr(m, op)(x, 0), np.zeros((0, 3), np.float32))
    check(lambda m, x: getattr(m, op)(x, 1)[0].shape if op in ("max", "min") else getattr(m, op)(x, 1).shape,
          np.zeros((0, 3), np.float32))


@pytest.mark.parametrize("dtype", [n for n in NAMES if not n.startswith("complex")])
@pytest.mark.parametrize("op", ["amax", "amin"])
def test_amax_amin(op, dtype):
    for dim in DIMS[1:]:
        for keepdim in (False, True):
            check(lambda m, x: getattr(m, op)(as_(m, x, dtype), dim, keepdim), sample(dtype))
    check(lambda m, x: getattr(m, op)(as_(m, x, dtype)), sample(dtype))
    check(lambda m, x: getattr(as_(m, x, dtype), op)(), sample(dtype))


@pytest.mark.parametrize("op", ["amax", "amin", "max", "min", "argmax", "argmin"])
def test_minmax_complex_errors(op):
    raises_like(lambda m, x: getattr(m, op)(x), sample("complex64"))
    raises_like(lambda m, x: getattr(m, op)(x, 0), sample("complex64"))


@pytest.mark.parametrize("dtype", [n for n in NAMES if not n.startswith("complex")])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_forms(op, dtype):
    check(lambda m, x: getattr(m, op)(as_(m, x, dtype)), sample(dtype))
    check(lambda m, x: getattr(as_(m, x, dtype), op)(), sample(dtype))
    for dim in (0, 1, -1, 2):
        for keepdim in (False, True):
            def fn(m, x):
                r = getattr(m, op)(as_(m, x, dtype), dim, keepdim)
                assert r.values is r[0] and r.indices is r[1]
                assert type(r).__name__ == op and len(r) == 2
                return tuple(r)
            check(fn, sample(dtype))
            check(lambda m, x: tuple(getattr(as_(m, x, dtype), op)(dim=dim, keepdim=keepdim)), sample(dtype))
    other = {"max": "maximum", "min": "minimum"}[op]
    check(lambda m, x, y: getattr(m, op)(as_(m, x, dtype), as_(m, y, dtype)), sample(dtype), sample(dtype)[::-1])
    check(lambda m, x, y: getattr(m, other)(as_(m, x, dtype), as_(m, y, dtype)), sample(dtype), sample(dtype)[:1])


def test_int64_reductions_are_exact():
    """Integers near 2**62 keep every bit (a float64 detour would drop the low ones); products wrap as torch's."""
    x = np.array([2**62, 3, -2**62 + 5, 7, 2**61 + 1])
    check(lambda m, x: (x.sum(), x.sum(0, keepdim=True), x.cumsum(0), x.prod(), (x * 3).max()), x)
    check(lambda m, x: x.sum().item(), x)


def test_max_indices_pick_first_of_ties():
    x = noncontig(np.array([[1, 3, 3], [2, 2, 1]], np.float32))
    check(lambda m, x: tuple(x.max(1)), x)
    check(lambda m, x: tuple(x.min(1)), x)
    check(lambda m, x: (x.argmax(1), x.argmin(0), x.argmax()), x)


@pytest.mark.parametrize("dtype", [n for n in NAMES if not n.startswith("complex")])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op, dtype):
    matches_torch(lambda m, x: getattr(m, op)(as_(m, x, dtype)), sample(dtype))
    matches_torch(lambda m, x: getattr(m, op)(as_(m, x, dtype), keepdim=True), sample(dtype))
    for dim in (0, 1, -1, 2):
        for keepdim in (False, True):
            matches_torch(lambda m, x: getattr(m, op)(as_(m, x, dtype), dim, keepdim), sample(dtype))
            matches_torch(lambda m, x: getattr(as_(m, x, dtype), op)(dim=dim, keepdim=keepdim), sample(dtype))


@pytest.mark.parametrize("dtype", NAMES)
@pytest.mark.parametrize("op", ["any", "all"])
def test_any_all(op, dtype):
    for dim in DIMS:
        for keepdim in (False, True):
            fn = reduce_call(op, dim, keepdim)
            check(lambda m, x: fn(m, as_(m, x, dtype)), sample(dtype))
    check(lambda m, x: getattr(m, op)(as_(m, x, dtype) * 0), sample(dtype))


@pytest.mark.parametrize("op", ["sum", "prod", "mean", "amax", "amin", "argmax", "argmin", "any", "all"])
def test_out(op):
    def fn(m, x):
        o = m.empty(0, dtype=getattr(m, op)(x, 1).dtype)
        r = getattr(m, op)(x, 1, out=o)
        assert r is o and o._version == 1
        return o
    check(fn, sample("float32"))


def test_out_dtype_rules():
    check(lambda m, x: m.sum(x, 0, out=m.empty(0, dtype=m.float64)), sample("float32"))
    check(lambda m, x: m.sum(x, 0, out=m.empty(0, dtype=m.float32)), sample("int32"))
    raises_like(lambda m, x: m.mean(x, 0, out=m.empty(0, dtype=m.int64)), sample("float32"))


def test_out_dtype_rules_per_op():
    check(lambda m, x: m.sum(x, 1, out=m.empty(0, dtype=m.int64)), np.array([[0.6, 0.6]], np.float32))
    raises_like(lambda m, x: m.amax(x, 1, out=m.empty(0, dtype=m.float64)), np.ones((2, 2), np.float32))
    raises_like(lambda m, x: m.any(x, 1, out=m.empty(0, dtype=m.int64)), np.ones((2, 2), np.float32))
    raises_like(lambda m, x: m.argmax(x, 1, out=m.empty(0, dtype=m.int32)), np.ones((2, 2), np.float32))


def test_noncontiguous_views():
    check(lambda m, x: x.t().sum(0), noncontig(np.arange(12.).reshape(3, 4)))
    check(lambda m, x: x.expand(3, 4).sum(0), np.arange(4.))
    check(lambda m, x: x.permute(2, 0, 1).amax((0, 2)), sample("float32"))
    check(lambda m, x: tuple(x.transpose(0, 2).max(1)), sample("float32"))
