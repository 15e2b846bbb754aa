"""Sorting and searching against torch: sort (stable, descending, dim), argsort, msort, topk, kthvalue, searchsorted
(right/side, sorter), bucketize, unique (sorted, return_inverse, return_counts, dim) and unique_consecutive, on
several dtypes and non-contiguous inputs; their errors; the gradients of sort, topk and kthvalue (compared with torch,
then gradcheck and gradgradcheck in float64).
"""
import numpy as np
import pytest

import lantern
from oracle import check, noncontig, table_tests
from test_autograd_gradcheck_ops import Case, assert_gradcheck_and_gradgradcheck, assert_gradients_match_torch

RNG = np.random.default_rng(11)


def distinct(*shape, dtype=np.float32):
    """Values with no ties (so every sort order, stable or not, is the same as torch's)."""
    return noncontig(RNG.permutation(int(np.prod(shape))).reshape(shape).astype(dtype) * 0.5 - 3)


X = distinct(3, 5)
XD = distinct(2, 3, 4, dtype=np.float64)
TIES = noncontig(np.array([[2, 1, 2, 0, 1, 2], [5, 5, 5, 1, 1, 0]], dtype=np.int64))
NANS = noncontig(np.array([1.0, np.nan, -2.0, np.inf, 0.5, np.nan], dtype=np.float32))
SEQ = noncontig(np.array([-1.0, 0.0, 0.5, 0.5, 2.0, 3.0], dtype=np.float32))
ROWS = noncontig(np.sort(RNG.integers(-4, 4, size=(2, 5)), axis=1).astype(np.float64))
VALUES = noncontig(np.array([[-2.0, 0.5, 0.25, 4.0], [0.0, 3.0, -1.0, 2.0]], dtype=np.float32))

FORWARD = {
    # sort / argsort / msort
    "sort": (lambda m, x: m.sort(x), X),
    "sort dim 0 descending": (lambda m, x: x.sort(0, descending=True), X),
    "sort 3-d middle dim": (lambda m, x: x.sort(dim=1), XD),
    "sort transposed": (lambda m, x: x.t().sort(1), X),
    "sort stable ties": (lambda m, x: x.sort(stable=True), TIES),
    "sort stable ties descending": (lambda m, x: m.sort(x, dim=1, descending=True, stable=True), TIES),
    "sort nan ascending": (lambda m, x: x.sort(), NANS),
    "sort nan descending": (lambda m, x: x.sort(descending=True), NANS),
    "sort int32": (lambda m, x: x.int().sort(0), X),
    "sort bool": (lambda m, x: (x > 0).sort(stable=True), X),
    "sort 0-dim": (lambda m: m.tensor(2.5).sort(),),
    "sort empty": (lambda m: m.zeros(2, 0).sort(),),
    "argsort": (lambda m, x: m.argsort(x), X),
    "argsort descending dim 0": (lambda m, x: x.argsort(0, True), X),
    "argsort stable": (lambda m, x: x.argsort(stable=True, descending=True), TIES),
    "msort": (lambda m, x: m.msort(x), X),
    "sort fields": (lambda m, x: x.sort().indices, X),
    "sort out": (lambda m, x: m.sort(x, 0, out=(m.empty(0), m.empty(0, dtype=m.int64))), X),
    "msort out": (lambda m, x: m.msort(x, out=m.empty(3, 5)), X),
    "topk out": (lambda m, x: m.topk(x, 2, out=(m.empty(3, 2), m.empty(3, 2, dtype=m.int64))), X),
    "kthvalue out": (lambda m, x: m.kthvalue(x, 2, 0, True, out=(m.empty(0), m.empty(0, dtype=m.int64))), X),
    # topk / kthvalue
    "topk": (lambda m, x: m.topk(x, 2), X),
    "topk smallest dim 0": (lambda m, x: x.topk(2, 0, largest=False), X),
    "topk k=0": (lambda m, x: x.topk(0), X),
    "topk all": (lambda m, x: x.topk(5, sorted=True), X),
    "topk int": (lambda m, x: (x * 2).long().topk(3, dim=-1), XD),
    "topk fields": (lambda m, x: x.topk(1).values, X),
    "kthvalue": (lambda m, x: m.kthvalue(x, 2), X),
    "kthvalue dim 0 keepdim": (lambda m, x: x.kthvalue(3, 0, keepdim=True), X),
    "kthvalue 3-d": (lambda m, x: x.kthvalue(1, dim=1), XD),
    "kthvalue fields": (lambda m, x: x.kthvalue(2).indices, X),
    # searchsorted / bucketize
    "searchsorted": (lambda m, s, v: m.searchsorted(s, v), SEQ, VALUES),
    "searchsorted right": (lambda m, s, v: m.searchsorted(s, v, right=True), SEQ, VALUES),
    "searchsorted side": (lambda m, s, v: m.searchsorted(s, v, side="right"), SEQ, VALUES),
    "searchsorted int32": (lambda m, s, v: m.searchsorted(s, v, out_int32=True), SEQ, VALUES),
    "searchsorted scalar": (lambda m, s: m.searchsorted(s, 0.5), SEQ),
    "searchsorted batched": (lambda m, s, v: m.searchsorted(s, v), ROWS, VALUES.astype(np.float64)),
    "searchsorted batched right": (lambda m, s, v: m.searchsorted(s, v, right=True), ROWS,
                                   VALUES.astype(np.float64)),
    "searchsorted sorter": (lambda m, s: m.searchsorted(s, m.tensor([0.0, 2.5]), sorter=s.argsort()),
                            noncontig(np.array([3.0, -1.0, 2.0, 0.0], dtype=np.float32))),
    "searchsorted out": (lambda m, s, v: m.searchsorted(s, v, out=m.empty(0, dtype=m.int64)), SEQ, VALUES),
    "bucketize": (lambda m, v, b: m.bucketize(v, b), VALUES, SEQ),
    "bucketize right int32": (lambda m, v, b: m.bucketize(v, b, right=True, out_int32=True), VALUES, SEQ),
    "bucketize scalar": (lambda m, b: m.bucketize(0.5, b), SEQ),
    "bucketize out": (lambda m, v, b: m.bucketize(v, b, out=m.empty(0, dtype=m.int64)), VALUES, SEQ),
    # unique / unique_consecutive
    "unique": (lambda m, x: m.unique(x), TIES),
    "unique inverse counts": (lambda m, x: x.unique(return_inverse=True, return_counts=True), TIES),
    "unique counts float": (lambda m, x: m.unique(x.float(), return_counts=True), TIES),
    "unique dim 0": (lambda m, x: m.unique(x, dim=0, return_inverse=True, return_counts=True),
                     noncontig(np.array([[1, 2], [0, 5], [1, 2], [0, 1]]))),
    "unique dim 1": (lambda m, x: x.unique(dim=1, return_inverse=True), noncontig(np.array([[1, 0, 1], [2, 3, 2]]))),
    "unique bool": (lambda m, x: m.unique(x > 0), X),
    "unique empty": (lambda m: m.zeros(0).unique(return_inverse=True, return_counts=True),),
    "unique_consecutive": (lambda m, x: m.unique_consecutive(x), TIES),
    "unique_consecutive inverse counts": (lambda m, x: x.unique_consecutive(return_inverse=True, return_counts=True),
                                          TIES),
    "unique_consecutive dim 1": (lambda m, x: m.unique_consecutive(x, return_counts=True, dim=1),
                                 noncontig(np.array([[1, 1, 2, 2, 1], [0, 0, 2, 2, 0]]))),
    "unique_consecutive dim 0": (lambda m, x: x.unique_consecutive(return_inverse=True, dim=0),
                                 noncontig(np.array([[1, 1], [1, 1], [2, 0]]))),
}

ERRORS = {
    "sort bad dim": (lambda m, x: x.sort(2), X),
    "topk k too big": (lambda m, x: x.topk(6), X),
    "topk negative k": (lambda m, x: x.topk(-1), X),
    "kthvalue k too big": (lambda m, x: x.kthvalue(6), X),
    "kthvalue k zero": (lambda m, x: x.kthvalue(0), X),
    "searchsorted side": (lambda m, s, v: m.searchsorted(s, v, side="middle"), SEQ, VALUES),
    "searchsorted opposite sides": (lambda m, s, v: m.searchsorted(s, v, right=True, side="left"), SEQ, VALUES),
    "searchsorted leading dims": (lambda m, s, v: m.searchsorted(s, v[:1]), ROWS, VALUES.astype(np.float64)),
    "searchsorted sorter dtype": (lambda m, s, v: m.searchsorted(s, v, sorter=s.argsort().int()), SEQ, VALUES),
    "searchsorted sorter shape": (lambda m, s, v: m.searchsorted(s, v, sorter=s[:2].argsort()), SEQ, VALUES),
    "searchsorted 0-dim boundaries": (lambda m, v: m.searchsorted(m.tensor(1.0), v), VALUES),
    "bucketize 2-d boundaries": (lambda m, v, b: m.bucketize(v, b), VALUES, ROWS.astype(np.float32)),
    "unique bad dim": (lambda m, x: x.unique(dim=2), TIES),
    "sort out dtype": (lambda m, x: m.sort(x, out=(m.empty(0, dtype=m.float64), m.empty(0, dtype=m.int64))), X),
    "sort out requires grad": (lambda m, x: m.sort(x.requires_grad_(), out=(m.empty(0), m.empty(0, dtype=m.int64))),
                               X),
}


test_forward_matches_torch, test_error_matches_torch = table_tests(FORWARD, ERRORS)


def test_results_are_named_tuples_that_print_like_torch():
    r = lantern.tensor([2.0, 1.0]).sort()
    assert r.values is r[0] and r.indices is r[1]
    assert repr(r).startswith("lantern.return_types.sort(\nvalues=tensor([1., 2.])")
    assert type(lantern.tensor([2.0]).topk(1)).__name__ == "topk"


def test_errors_name_the_op_and_the_fix():
    with pytest.raises(RuntimeError, match=r"selected index k out of range \(topk: k=3 for a dim of size 2"):
        lantern.zeros(2).topk(3)
    with pytest.raises(RuntimeError, match=r"sort\(\): does not support complex input"):
        lantern.zeros(2, dtype=lantern.complex64).sort()


def test_meta_device_sorts_shapes_and_refuses_unique():
    x = lantern.empty(3, 4, device="meta")
    assert x.sort(0).values.shape == (3, 4) and x.topk(2).indices.shape == (3, 2)
    assert x.kthvalue(1, 0).values.shape == (4,)
    assert lantern.searchsorted(lantern.empty(5, device="meta"), x).dtype is lantern.int64
    with pytest.raises(NotImplementedError, match="unique"):
        x.unique()


def test_outputs_other_than_values_do_not_require_grad():
    x = lantern.tensor([[0.5, 2.0, 1.0]], requires_grad=True)
    values, indices = x.sort()
    assert values.requires_grad and not indices.requires_grad
    assert not x.argsort().requires_grad and not lantern.searchsorted(x, x).requires_grad
    assert not x.unique().requires_grad


GRAD_CASES = [
    Case("sort", lambda m, x: x.sort(1)[0], distinct(3, 4, dtype=np.float64)),
    Case("sort", lambda m, x: x.sort(dim=0, descending=True, stable=True).values, distinct(3, 4, dtype=np.float64),
         label="descending_stable"),
    Case("sort", lambda m, x: m.msort(x), distinct(3, 4, dtype=np.float64), label="msort"),
    Case("topk", lambda m, x: x.topk(2, 1)[0], distinct(3, 4, dtype=np.float64)),
    Case("topk", lambda m, x: x.topk(2, 0, largest=False).values, distinct(3, 4, dtype=np.float64),
         label="smallest"),
    Case("kthvalue", lambda m, x: x.kthvalue(2, 1)[0], distinct(3, 4, dtype=np.float64)),
    Case("kthvalue", lambda m, x: x.kthvalue(3, 0, keepdim=True).values, distinct(3, 4, dtype=np.float64),
         label="keepdim"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_gradients_match_torch(case):
    assert_gradients_match_torch(case)


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_gradcheck_and_gradgradcheck_float64_noncontiguous(case):
    assert_gradcheck_and_gradgradcheck(case)


DTYPE_OPS = {
    "sort": lambda m, x: x.sort(descending=True),
    "argsort": lambda m, x: x.argsort(0),
    "topk": lambda m, x: x.topk(2),
    "kthvalue": lambda m, x: x.kthvalue(2),
    "searchsorted": lambda m, x: m.searchsorted(x.sort().values, x),
    "unique": lambda m, x: x.unique(return_inverse=True, return_counts=True),
    "unique_consecutive": lambda m, x: x.unique_consecutive(return_counts=True),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "uint8", "int16"])
@pytest.mark.parametrize("name", DTYPE_OPS)
def test_dtypes_match_torch(name, dtype):
    values = noncontig(np.array([[1.5, 7.0, 4.0], [3.0, 2.5, 9.0]], dtype=np.float32))
    check(lambda m, x: DTYPE_OPS[name](m, x.to(getattr(m, dtype))), values)
