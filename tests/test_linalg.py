"""Matrix products against torch: mm, bmm, mv, dot, matmul over every dim combination (with batch broadcasting),
the `@` operator, out=, dtypes and the shape errors (spec row 31).
"""
import numpy as np
import pytest

from oracle import check, matches_torch, noncontig, raises_like


def mat(*shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed + len(shape))
    return noncontig(rng.integers(-3, 4, size=shape).astype(dtype))


MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3,)), ((3,), (5, 3, 4)),
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (6, 3, 4)), ((6, 2, 3), (1, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 4)), ((7, 1, 2, 3), (1, 5, 3, 4)), ((4, 5, 2, 3), (3,)), ((3,), (4, 5, 3, 2)),
    ((0, 3), (3, 4)), ((2, 0), (0, 4)), ((2, 3), (3, 0)), ((0, 2, 3), (3, 4)), ((1, 3), (3, 1)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "complex64", "float16", "uint8"])
@pytest.mark.parametrize("a,b", MATMUL_SHAPES)
def test_matmul(a, b, dtype):
    def fn(m, x, y):
        r = m.matmul(x, y)
        return (r, x @ y, x.matmul(y)) if r.numel() else (tuple(r.shape), r.dtype)
    check(fn, mat(*a, dtype=dtype), mat(*b, dtype=dtype, seed=1), atol=1e-2 if dtype == "float16" else 1e-5)


def test_spec_row_31():
    check(lambda m, x, y: (x @ y).shape, np.ones(3), np.ones(3))
    check(lambda m, x, y: m.matmul(x, y), np.ones((1, 2, 3)), np.ones((6, 3, 4)))
    check(lambda m, x, y: m.matmul(x, y), np.ones(3), np.ones((3, 4)))
    _, msg = raises_like(lambda m, x, y: m.mm(x, y), np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    assert "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)" in msg


MATMUL_ERRORS = [((3,), (4,)), ((2, 3), (4,)), ((3,), (4, 5)), ((2, 3), (4, 5)), ((5, 2, 3), (4,)),
                 ((5, 2, 3), (5, 4, 4)), ((2, 2, 3), (3, 3, 4)), ((), (3,)), ((3,), ()), ((2, 3, 4), (3, 5, 6))]


@pytest.mark.parametrize("a,b", MATMUL_ERRORS)
def test_matmul_errors(a, b):
    raises_like(lambda m, x, y: m.matmul(x, y), np.ones(a, np.float32), np.ones(b, np.float32))
    raises_like(lambda m, x, y: x @ y, np.ones(a, np.float32), np.ones(b, np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex128", "bfloat16"])
def test_mm_bmm_mv_dot(dtype):
    cast = (lambda m, t: t.to(m.bfloat16)) if dtype == "bfloat16" else (lambda m, t: t)
    d = "float32" if dtype == "bfloat16" else dtype
    tol = 0.1 if dtype == "bfloat16" else 1e-5
    check(lambda m, x, y: m.mm(cast(m, x), cast(m, y)), mat(2, 3, dtype=d), mat(3, 4, dtype=d), atol=tol)
    check(lambda m, x, y: cast(m, x).mm(cast(m, y).t().t()), mat(2, 3, dtype=d), mat(3, 4, dtype=d), atol=tol)
    check(lambda m, x, y: m.mm(cast(m, x).t(), cast(m, y)), mat(3, 2, dtype=d), mat(3, 4, dtype=d), atol=tol)
    check(lambda m, x, y: m.bmm(cast(m, x), cast(m, y)), mat(5, 2, 3, dtype=d), mat(5, 3, 4, dtype=d), atol=tol)
    check(lambda m, x, y: m.mv(cast(m, x), cast(m, y)), mat(2, 3, dtype=d), mat(3, dtype=d), atol=tol)
    check(lambda m, x, y: m.dot(cast(m, x), cast(m, y)), mat(3, dtype=d), mat(3, dtype=d, seed=2), atol=tol)
    check(lambda m, x, y: cast(m, x).dot(cast(m, y)), mat(3, dtype=d), mat(3, dtype=d, seed=2), atol=tol)


def test_expanded_and_transposed_operands():
    check(lambda m, x, y: m.mm(x.expand(4, 3), y), mat(1, 3), mat(3, 2))
    check(lambda m, x, y: m.matmul(x.t(), y.t()), mat(3, 2), mat(4, 3))
    check(lambda m, x, y: m.bmm(x.transpose(1, 2), y), mat(5, 3, 2), mat(5, 3, 4))
    check(lambda m, x, y: m.matmul(x.permute(2, 0, 1), y), mat(2, 3, 5), mat(3, 4))


def test_out():
    def fn(m, x, y):
        o = m.empty(0)
        r = m.mm(x, y, out=o)
        assert r is o and o._version == 1
        b = m.empty(0)
        m.bmm(x.unsqueeze(0), y.unsqueeze(0), out=b)
        v = m.empty(0)
        m.mv(x, y.select(1, 0), out=v)
        d = m.empty(0)
        m.dot(x.select(0, 0), y.select(1, 0), out=d)
        mm = m.empty(0)
        m.matmul(x, y, out=mm)
        return o, b, v, d, mm
    check(fn, mat(2, 3), mat(3, 4))


LINALG_ERRORS = {
    "mm_shapes": lambda m: m.mm(m.ones(2, 3), m.ones(4, 5)),
    "mm_1d": lambda m: m.mm(m.ones(3), m.ones(3, 4)),
    "mm_3d": lambda m: m.mm(m.ones(2, 3), m.ones(1, 3, 4)),
    "mm_dtypes": lambda m: m.mm(m.ones(2, 3), m.ones(3, 4, dtype=m.float64)),
    "mm_bool": lambda m: m.mm(m.ones(2, 3, dtype=m.bool), m.ones(3, 4, dtype=m.bool)),
    "bmm_2d": lambda m: m.bmm(m.ones(2, 3), m.ones(3, 4)),
    "bmm_batch": lambda m: m.bmm(m.ones(2, 2, 3), m.ones(3, 3, 4)),
    "bmm_inner": lambda m: m.bmm(m.ones(2, 2, 3), m.ones(2, 4, 4)),
    "bmm_dtypes": lambda m: m.bmm(m.ones(2, 2, 3), m.ones(2, 3, 4, dtype=m.int64)),
    "mv_shapes": lambda m: m.mv(m.ones(2, 3), m.ones(4)),
    "mv_dims": lambda m: m.mv(m.ones(2, 3), m.ones(3, 1)),
    "dot_sizes": lambda m: m.dot(m.ones(3), m.ones(4)),
    "dot_dims": lambda m: m.dot(m.ones(3, 1), m.ones(3)),
    "dot_dtypes": lambda m: m.dot(m.ones(3), m.ones(3, dtype=m.float64)),
    "matmul_dtypes": lambda m: m.matmul(m.ones(2, 3), m.ones(3, dtype=m.float64)),
    "matmul_number": lambda m: m.matmul(m.ones(2, 3), 2),
}


@pytest.mark.parametrize("name", list(LINALG_ERRORS))
def test_linalg_errors(name):
    raises_like(LINALG_ERRORS[name])


def test_bool_matmul():
    matches_torch(lambda m, x, y: m.matmul(x, y), np.ones((2, 3), bool), np.ones((3, 2), bool))
    matches_torch(lambda m, x, y: m.dot(x, y), np.ones(3, bool), np.ones(3, bool))


def test_out_dtype_must_match():
    raises_like(lambda m: m.mm(m.ones(2, 3), m.ones(3, 4), out=m.empty(0, dtype=m.float64)))
    raises_like(lambda m: m.mv(m.ones(2, 3), m.ones(3), out=m.empty(0, dtype=m.int64)))


def test_matmul_out_dtype():
    raises_like(lambda m: m.matmul(m.ones(2, 3), m.ones(3, 4), out=m.empty(0, dtype=m.float64)))
    check(lambda m: m.matmul(m.ones(1, 2, 3), m.ones(3, 4), out=m.empty(0)))
