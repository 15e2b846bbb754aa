"""The indexing ops against torch: gather, scatter (src, value, reduce), scatter_add, scatter_reduce, index_select,
index_add, index_copy, index_fill, masked_fill, masked_select, masked_scatter, take, take_along_dim, nonzero and
argwhere: functional, method, in-place and out= forms, several dtypes, non-contiguous inputs, errors, gradients
(compared with torch, then gradcheck and gradgradcheck in float64).
"""
import numpy as np
import pytest
import torch

import lantern
from lantern.ops.registry import REGISTRY
from oracle import check, matches_torch, noncontig, table_tests
from test_autograd_gradcheck_ops import (
    Case, assert_gradcheck_and_gradgradcheck, assert_gradients_match_torch, uniform,
)

RNG = np.random.default_rng(5)


def floats(*shape, dtype=np.float32):
    return noncontig(RNG.uniform(-3, 3, size=shape).astype(dtype))


def ints(values):
    return noncontig(np.asarray(values, dtype=np.int64))


X = floats(3, 4)
XI = noncontig(RNG.integers(-5, 5, size=(3, 4)).astype(np.int32))
IDX_GATHER = ints([[0, 3, 3], [1, 1, 0], [2, 0, 1]])  # (3, 3): smaller than X along dim 1
IDX_SCATTER = ints([[0, 2], [1, 0]])
IDX_PERM = ints([[2, 0, 1, 3], [3, 1, 0, 2], [0, 1, 2, 3]])  # a permutation per row: no duplicates
SRC = floats(3, 4)
MASK = noncontig(np.array([[True, False, True, True], [False, False, True, False], [True, True, False, False]]))
ROW_MASK = noncontig(np.array([True, False, True, False]))
VEC = ints([2, 0, 2])

FORWARD = {
    # gather
    "gather": (lambda m, x, i: m.gather(x, 1, i), X, IDX_GATHER),
    "gather method dim 0": (lambda m, x, i: x.gather(0, i[:2] % 3), X, IDX_GATHER),
    "gather int": (lambda m, x, i: x.gather(-1, i), XI, IDX_GATHER),
    "gather int32 index": (lambda m, x, i: x.gather(1, i.int()), X, IDX_GATHER),
    "gather out": (lambda m, x, i: m.gather(x, 1, i, out=m.empty(0)), X, IDX_GATHER),
    "gather empty index": (lambda m, x: x.gather(1, m.zeros(3, 0, dtype=m.int64)), X),
    "gather 0-dim": (lambda m: m.tensor(2.5).gather(0, m.tensor([0, 0])),),
    # scatter
    "scatter src": (lambda m, x, i, s: x.scatter(1, i, s), X, IDX_SCATTER, SRC),
    "scatter value": (lambda m, x, i: m.scatter(x, 0, i, 1.5), X, IDX_SCATTER),
    "scatter value kw": (lambda m, x, i: x.scatter(0, i, value=-2), XI, IDX_SCATTER),
    "scatter reduce add": (lambda m, x, i, s: x.scatter(1, i, s, reduce="add"), X, ints([[0, 0], [1, 1]]), SRC),
    "scatter reduce multiply": (lambda m, x, i: x.scatter(1, i, 2.0, reduce="multiply"), X, ints([[0, 0], [1, 1]])),
    "scatter_ src": (lambda m, x, i, s: x.clone().scatter_(1, i, s), X, IDX_SCATTER, SRC),
    "scatter_ value": (lambda m, x, i: x.clone().scatter_(1, i, 7), XI, IDX_SCATTER),
    "scatter_ reduce": (lambda m, x, i, s: x.clone().scatter_(1, i, s, reduce="multiply"), X, IDX_SCATTER, SRC),
    "scatter_add": (lambda m, x, i, s: x.scatter_add(1, i, s), X, ints([[0, 0, 0], [3, 3, 1]]), SRC),
    "scatter_add fn out": (lambda m, x, i, s: m.scatter_add(x, 0, i, s, out=m.empty(3, 4)), X, IDX_SCATTER, SRC),
    "scatter_add_": (lambda m, x, i, s: x.clone().scatter_add_(0, i, s), X, IDX_SCATTER, SRC),
    "scatter int32 index": (lambda m, x, i, s: x.scatter(1, i.int(), s), X, IDX_SCATTER, SRC),
    "scatter_add int": (lambda m, x, i: x.scatter_add(1, i, x), XI, ints([[1, 1, 1, 1], [0, 0, 0, 0]])),
    # scatter_reduce
    **{f"scatter_reduce {r} {s}": (lambda m, x, i, src, r=r, s=s: x.scatter_reduce(1, i, src, r, include_self=s),
                                   X, ints([[0, 0, 2], [3, 3, 3], [1, 0, 1]]), SRC)
       for r in ("sum", "prod", "mean", "amax", "amin") for s in (True, False)},
    "scatter_reduce int mean": (lambda m, x, i: x.scatter_reduce(0, i, x, "mean"), XI, ints([[0, 0], [0, 2]])),
    "scatter_reduce int amax no self": (lambda m, x, i: x.scatter_reduce(0, i, x, "amax", include_self=False), XI,
                                        ints([[0, 0], [0, 2]])),
    "scatter_reduce_": (lambda m, x, i, s: x.clone().scatter_reduce_(0, i, s, "sum"), X, IDX_SCATTER, SRC),
    "scatter_reduce out": (lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "amin", out=m.empty(3, 4)), X,
                           IDX_SCATTER, SRC),
    # index_select
    "index_select": (lambda m, x, i: m.index_select(x, 1, i), X, VEC),
    "index_select dim 0 int32": (lambda m, x, i: x.index_select(0, i.int()), X, VEC),
    "index_select out": (lambda m, x, i: m.index_select(x, -1, i, out=m.empty(0)), X, VEC),
    "index_select 0-dim index": (lambda m, x: x.index_select(0, m.tensor(1)), X),
    "index_select 0-dim self": (lambda m: m.tensor(4.0).index_select(0, m.tensor([0])),),
    "index_select int": (lambda m, x, i: x.index_select(1, i), XI, VEC),
    "index_add int32 index": (lambda m, x, i, s: x.index_add(0, i.int(), s), X, VEC, SRC),
    # index_add / index_copy / index_fill
    "index_add": (lambda m, x, i, s: x.index_add(1, i, s[:, :3]), X, VEC, SRC),
    "index_add alpha": (lambda m, x, i, s: m.index_add(x, 0, i, s, alpha=2.5), X, VEC, SRC),
    "index_add_": (lambda m, x, i, s: x.clone().index_add_(0, i, s), X, VEC, SRC),
    "index_add out": (lambda m, x, i, s: m.index_add(x, 0, i, s, out=m.empty(0)), X, VEC, SRC),
    "index_add int": (lambda m, x, i: x.index_add(0, i, x, alpha=3), XI, VEC),
    "index_copy": (lambda m, x, i, s: x.index_copy(1, i, s[:, :3]), X, ints([3, 0, 1]), SRC),
    "index_copy_": (lambda m, x, i, s: x.clone().index_copy_(0, i, s), X, ints([2, 1, 0]), SRC),
    "index_copy fn out": (lambda m, x, i, s: m.index_copy(x, 0, i, s, out=m.empty(3, 4)), X, ints([2, 1, 0]), SRC),
    "index_fill": (lambda m, x, i: x.index_fill(1, i, -1.5), X, VEC),
    "index_fill tensor": (lambda m, x, i: x.index_fill(0, i, m.tensor(9.0)), X, VEC),
    "index_fill_": (lambda m, x, i: x.clone().index_fill_(1, i, 3), XI, ints([-1, 0])),
    "index_fill fn": (lambda m, x, i: m.index_fill(x, 0, i, 2), X, VEC),
    # masks
    "masked_fill": (lambda m, x, k: x.masked_fill(k, -1.0), X, MASK),
    "masked_fill fn broadcast": (lambda m, x, k: m.masked_fill(x, k, 5), X, ROW_MASK),
    "masked_fill broadcast self": (lambda m, x, k: x[:1].masked_fill(k, 0.5), X, MASK),
    "masked_fill tensor": (lambda m, x, k: x.masked_fill(k, m.tensor(2.0)), X, MASK),
    "masked_fill int": (lambda m, x, k: x.masked_fill(k, 4), XI, MASK),
    "masked_fill_": (lambda m, x, k: x.clone().masked_fill_(k, 3.5), X, ROW_MASK),
    "masked_fill_ tensor": (lambda m, x, k: x.clone().masked_fill_(k, m.tensor(1.0)), X, MASK),
    "masked_select": (lambda m, x, k: m.masked_select(x, k), X, MASK),
    "masked_select broadcast": (lambda m, x, k: x.masked_select(k), X, ROW_MASK),
    "masked_select int": (lambda m, x, k: x.masked_select(k), XI, MASK),
    "masked_scatter": (lambda m, x, k, s: x.masked_scatter(k, s), X, MASK, SRC),
    "masked_scatter broadcast": (lambda m, x, k, s: x.masked_scatter(k, s), X, ROW_MASK, SRC),
    "masked_scatter_": (lambda m, x, k, s: x.clone().masked_scatter_(k, s), X, MASK, SRC),
    # take
    "take": (lambda m, x, i: m.take(x, i), X, ints([[0, -1], [5, 11]])),
    "take method 0-dim": (lambda m, x: x.take(m.tensor(3)), X),
    "take out": (lambda m, x, i: m.take(x, i, out=m.empty(0)), X, VEC),
    "take_along_dim": (lambda m, x, i: m.take_along_dim(x, i, 1), X, IDX_GATHER),
    "take_along_dim broadcast": (lambda m, x, i: x.take_along_dim(i, dim=0), X, ints([[0], [2]])),
    "take_along_dim argsort": (lambda m, x: m.take_along_dim(x, x.argmax(1, keepdim=True), 1), X),
    "take_along_dim flat": (lambda m, x, i: m.take_along_dim(x.contiguous(), i), X, VEC),
    "take_along_dim out": (lambda m, x, i: m.take_along_dim(x, i, 1, out=m.empty(0)), X, IDX_GATHER),
    # nonzero, argwhere
    "nonzero": (lambda m, k: m.nonzero(k), MASK),
    "nonzero float": (lambda m, x: (x > 0).float().nonzero(), X),
    "nonzero as_tuple": (lambda m, k: k.nonzero(as_tuple=True), MASK),
    "nonzero 1-d": (lambda m, k: k.nonzero(), ROW_MASK),
    "nonzero none": (lambda m: m.zeros(2, 3).nonzero(),),
    "nonzero 0-dim": (lambda m: m.tensor(3.0).nonzero(),),
    "nonzero 0-dim as_tuple": (lambda m: m.tensor(3.0).nonzero(as_tuple=True),),
    "nonzero 3-d": (lambda m, x: (x > 0).view(2, 3, 2).nonzero(), floats(3, 4).copy()),
    "argwhere": (lambda m, x: m.argwhere(x > 0), X),
    "argwhere method": (lambda m, x: x.argwhere(), XI),
    "where one argument": (lambda m, x: m.where(x > 0), X),
}

ERRORS = {
    "gather float index": (lambda m, x, i: x.gather(1, i.float()), X, IDX_GATHER),
    "gather index too big": (lambda m, x, i: x.gather(1, i.expand(4, 3)), X, IDX_GATHER[:1]),
    "gather ndim": (lambda m, x, i: x.gather(1, i[0]), X, IDX_GATHER),
    "gather out of range": (lambda m, x: x.gather(1, m.tensor([[4]])), X),
    "gather negative": (lambda m, x: x.gather(1, m.tensor([[-1]])), X),
    "gather bad dim": (lambda m, x, i: x.gather(2, i), X, IDX_GATHER),
    "scatter dtype": (lambda m, x, i, s: x.scatter(1, i, s.double()), X, IDX_SCATTER, SRC),
    "scatter reduce name": (lambda m, x, i, s: x.scatter(1, i, s, reduce="mean"), X, IDX_SCATTER, SRC),
    "scatter index > src": (lambda m, x, i, s: x.scatter(1, i, s[:1]), X, IDX_SCATTER, SRC),
    "scatter out of range": (lambda m, x: x.scatter(1, m.tensor([[5]]), 1.0), X),
    "scatter_reduce name": (lambda m, x, i, s: x.scatter_reduce(1, i, s, "add"), X, IDX_SCATTER, SRC),
    "scatter_add ndim": (lambda m, x, i, s: x.scatter_add(1, i[0], s), X, IDX_SCATTER, SRC),
    "index_select 2-d index": (lambda m, x, i: x.index_select(1, i), X, IDX_SCATTER),
    "index_select float index": (lambda m, x: x.index_select(1, m.tensor([1.0])), X),
    "index_select out of range": (lambda m, x: x.index_select(0, m.tensor([-1])), X),
    "index_add dtype": (lambda m, x, i, s: x.index_add(0, i, s.double()), X, VEC, SRC),
    "index_add count": (lambda m, x, i, s: x.index_add(0, i[:2], s), X, VEC, SRC),
    "index_add slice shape": (lambda m, x, i, s: x.index_add(0, i, s[:, :2]), X, VEC, SRC),
    "index_add out of range": (lambda m, x, s: x.index_add(0, m.tensor([0, 1, 3]), s), X, SRC),
    "index_copy count": (lambda m, x, i, s: x.index_copy(0, i[:1], s), X, VEC, SRC),
    "index_copy int32": (lambda m, x, i, s: x.index_copy(0, i.int(), s), X, VEC, SRC),
    "index_copy out of range": (lambda m, x, s: x.index_copy(0, m.tensor([0, 1, -1]), s), X, SRC),
    "index_fill 2-d index": (lambda m, x: x.index_fill(0, m.tensor([[0]]), 1.0), X),
    "index_fill int32 index": (lambda m, x, i: x.index_fill(0, i.int(), 1.0), X, VEC),
    "index_fill 1-d value": (lambda m, x, i: x.index_fill(1, i, m.tensor([1.0])), X, VEC),
    "index_fill out of range": (lambda m, x: x.index_fill(1, m.tensor([4]), 1.0), X),
    "masked_fill uint8 mask": (lambda m, x, k: x.masked_fill(k.to(m.uint8), 1.0), X, MASK),
    "masked_fill 1-d value": (lambda m, x, k: x.masked_fill(k, m.tensor([1.0])), X, MASK),
    "masked_fill_ broadcast self": (lambda m, x, k: x[:1].clone().masked_fill_(k, 1.0), X, MASK),
    "masked_fill shapes": (lambda m, x, k: x.masked_fill(k[:2, :3], 1.0), X, MASK),
    "masked_select uint8": (lambda m, x, k: x.masked_select(k.to(m.uint8)), X, MASK),
    "masked_scatter short source": (lambda m, x, k, s: x.masked_scatter(k, s[0]), X, MASK, SRC),
    "masked_scatter dtype": (lambda m, x, k, s: x.masked_scatter(k, s.double()), X, MASK, SRC),
    "take int32": (lambda m, x, i: x.take(i.int()), X, VEC),
    "take out of range": (lambda m, x: x.take(m.tensor([12])), X),
    "take empty": (lambda m: m.zeros(0).take(m.tensor([0])),),
    "take_along_dim ndim": (lambda m, x, i: m.take_along_dim(x, i, 1), X, VEC),
    "take_along_dim int32": (lambda m, x, i: m.take_along_dim(x, i.int(), 1), X, IDX_GATHER),
}


test_forward_matches_torch, test_error_matches_torch = table_tests(FORWARD, ERRORS)


def test_in_place_forms_return_self_and_bump_the_version():
    x = lantern.zeros(3, 4)
    before = x._version
    one = lantern.tensor([[0]])
    for y in (x.scatter_(1, one, 1.0), x.masked_fill_(x > 0, 2.0), x.index_fill_(0, one[0], 3),
              x.index_add_(0, one[0], lantern.ones(1, 4)), x.scatter_add_(0, one, x[:1].clone())):
        assert y is x
    assert x._version == before + 5


def test_errors_name_the_op_and_the_fix():
    with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int32/int64 for index .*index.long\(\)"):
        lantern.zeros(2, 2).gather(0, lantern.zeros(2, 2))
    with pytest.raises(RuntimeError, match=r"masked_fill_ only supports boolean masks.*mask.bool\(\)"):
        lantern.zeros(2).masked_fill(lantern.ones(2, dtype=lantern.uint8), 1.0)
    with pytest.raises(RuntimeError, match=r"index_add_\(\): self and source .* \(self\) Float and \(source\) Double"):
        lantern.zeros(2).index_add(0, lantern.tensor([0]), lantern.zeros(1, dtype=lantern.float64))


def test_meta_device_gives_shapes_and_refuses_data_dependent_sizes():
    x = lantern.empty(3, 4, device="meta")
    i = lantern.empty(3, 2, dtype=lantern.int64, device="meta")
    assert x.gather(1, i).shape == (3, 2) and x.scatter(1, i, 1.0).shape == (3, 4)
    assert x.index_select(0, lantern.empty(5, dtype=lantern.int64, device="meta")).shape == (5, 4)
    with pytest.raises(NotImplementedError, match="nonzero"):
        x.nonzero()


# ---- gradients: torch's, then gradcheck/gradgradcheck in float64 ------------------------------------------------

def idx(values):
    return np.asarray(values, dtype=np.int64)


GRAD_CASES = [
    Case("gather", lambda m, x, i: x.gather(1, i), uniform(3, 4), idx([[0, 3, 3], [1, 1, 0], [2, 0, 1]])),
    Case("scatter.src", lambda m, x, s, i: x.scatter(1, i, s), uniform(3, 4), uniform(2, 2), idx([[0, 2], [1, 0]])),
    Case("scatter.value", lambda m, x, i: x.scatter(0, i, 2.0), uniform(3, 4), idx([[0, 2], [1, 0]])),
    Case("scatter_add", lambda m, x, s, i: x.scatter_add(1, i, s), uniform(3, 4), uniform(2, 3),
         idx([[0, 0, 2], [3, 3, 3]])),
    Case("scatter_reduce", lambda m, x, s, i: x.scatter_reduce(1, i, s, "sum", include_self=False), uniform(3, 4),
         uniform(2, 3), idx([[0, 0, 2], [3, 3, 3]]), label="sum"),
    Case("scatter_reduce", lambda m, x, s, i: x.scatter_reduce(1, i, s, "mean"), uniform(3, 4), uniform(2, 3),
         idx([[0, 0, 2], [3, 3, 3]]), label="mean"),
    Case("scatter_reduce", lambda m, x, s, i: x.scatter_reduce(1, i, s, "mean", include_self=False), uniform(3, 4),
         uniform(2, 3), idx([[0, 0, 2], [3, 3, 3]]), label="mean_no_self"),
    Case("scatter_reduce", lambda m, x, s, i: x.scatter_reduce(1, i, s, "amax"), uniform(3, 4), uniform(2, 3),
         idx([[0, 0, 2], [3, 3, 3]]), label="amax"),
    Case("scatter_reduce", lambda m, x, s, i: x.scatter_reduce(1, i, s, "amin", include_self=False), uniform(3, 4),
         uniform(2, 3), idx([[0, 0, 2], [3, 3, 3]]), label="amin_no_self"),
    Case("scatter_reduce", lambda m, x, s, i: x.scatter_reduce(1, i, s, "amax"), np.array([[1.0, 2.0, 3.0]]),
         np.array([[2.0, 2.0, 0.5]]), idx([[1, 1, 2]]), label="amax_ties", check=False),
    Case("scatter_reduce", lambda m, x, s, i: x.scatter_reduce(1, i, s, "prod"), uniform(3, 4), uniform(2, 3),
         idx([[0, 0, 2], [3, 3, 3]]), label="prod"),
    Case("scatter_reduce", lambda m, x, s, i: x.scatter_reduce(1, i, s, "prod", include_self=False),
         np.array([[1.5, 0.0, 2.0, -1.0]]), np.array([[0.0, 3.0, 0.0, 2.0, 0.5]]), idx([[0, 0, 1, 1, 3]]),
         label="prod_zeros", check=False),
    Case("index_select", lambda m, x, i: x.index_select(1, i), uniform(3, 4), idx([2, 0, 2])),
    Case("index_add", lambda m, x, s, i: x.index_add(0, i, s, alpha=2.0), uniform(3, 4), uniform(3, 4), idx([2, 0, 2])),
    Case("index_copy", lambda m, x, s, i: x.index_copy(1, i, s), uniform(3, 4), uniform(3, 2), idx([3, 0])),
    Case("index_fill.int_Scalar", lambda m, x, i: x.index_fill(1, i, 2.0), uniform(3, 4), idx([3, 0, 3])),
    Case("index_fill.int_Tensor", lambda m, x, v, i: x.index_fill(1, i, v), uniform(3, 4), uniform(1).reshape(()),
         idx([3, 0, 3])),
    Case("masked_fill.Scalar", lambda m, x, k: x.masked_fill(k, 0.5), uniform(3, 4), MASK.copy()),
    Case("masked_fill.Scalar", lambda m, x, k: x.masked_fill(k, 0.5), uniform(1, 4), MASK.copy(), label="broadcast"),
    Case("masked_fill.Tensor", lambda m, x, v, k: x.masked_fill(k, v), uniform(3, 4), uniform(1).reshape(()),
         MASK.copy()),
    Case("masked_select", lambda m, x, k: x.masked_select(k), uniform(3, 4), MASK.copy()),
    Case("masked_select", lambda m, x, k: x.masked_select(k), uniform(4), MASK.copy(), label="broadcast"),
    Case("masked_scatter", lambda m, x, s, k: x.masked_scatter(k, s), uniform(3, 4), uniform(3, 4), MASK.copy()),
    Case("take", lambda m, x, i: x.take(i), uniform(3, 4), idx([[0, -1], [5, 0]])),
    Case("gather", lambda m, x, i: m.take_along_dim(x, i, 0), uniform(3, 4), idx([[0], [2]]), label="take_along_dim"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_gradients_match_torch(case):
    assert_gradients_match_torch(case)


@pytest.mark.parametrize("case", [c for c in GRAD_CASES if c.check], ids=lambda c: c.id)
def test_gradcheck_and_gradgradcheck_float64_noncontiguous(case):
    assert_gradcheck_and_gradgradcheck(case)


INDEXING_MODULES = {f"lantern.ops.{name}" for name in (
    "indexing", "indexing_gather_scatter", "indexing_slices", "indexing_masks")}


def test_every_indexing_derivative_has_a_gradient_case():
    declared = {op.name for op in REGISTRY.values() if op.functional is op and op.derivative is not None
                and not op.derivative.nondifferentiable
                and getattr(op.impl, "__module__", None) in INDEXING_MODULES}
    assert declared - {c.op for c in GRAD_CASES} == {"index.Tensor", "index_put_"}  # tested in test_indexing.py


def test_scatter_with_reduce_has_no_derivative_as_in_torch():
    for lib in (torch, lantern):
        x = lib.zeros(2, 2, dtype=lib.float64, requires_grad=True)
        y = x.scatter(1, lib.tensor([[0], [1]]), 2.0, reduce="add")
        assert type(y.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
            y.sum().backward()


def test_nonzero_and_indices_do_not_require_grad():
    x = lantern.tensor([0.0, 1.5], requires_grad=True)
    assert not x.nonzero().requires_grad and not lantern.argwhere(x).requires_grad


DTYPE_OPS = {
    "gather": lambda m, x: x.gather(1, m.tensor([[1, 0], [2, 2]])),
    "scatter": lambda m, x: x.scatter(0, m.tensor([[1, 0, 1]]), x[:1]),
    "scatter_add": lambda m, x: x.scatter_add(1, m.tensor([[0, 0, 1]]), x[:1]),
    "scatter_reduce amax": lambda m, x: x.scatter_reduce(1, m.tensor([[0, 0, 1]]), x[:1], "amax", include_self=False),
    "index_select": lambda m, x: x.index_select(1, m.tensor([2, 0])),
    "index_add": lambda m, x: x.index_add(0, m.tensor([1, 1]), x),
    "index_copy": lambda m, x: x.index_copy(0, m.tensor([1, 0]), x),
    "index_fill": lambda m, x: x.index_fill(1, m.tensor([0]), 1),
    "masked_fill": lambda m, x: x.masked_fill(m.tensor([True, False, True]), 2),
    "masked_select": lambda m, x: x.masked_select(m.tensor([True, False, True])),
    "masked_scatter": lambda m, x: x.masked_scatter(m.tensor([True, False, True]), x[:, 1:].clone()),
    "take": lambda m, x: x.take(m.tensor([5, 0])),
    "nonzero": lambda m, x: x.nonzero(),
}


# torch refuses index_add / scatter_add / scatter_reduce amax on bool in ways lantern need not copy: not compared
_DTYPE_CASES = [(name, dtype) for dtype in ["float16", "bfloat16", "complex64", "bool", "uint8"] for name in DTYPE_OPS
                if not (dtype == "bool" and name in ("index_add", "scatter_add", "scatter_reduce amax"))]


@pytest.mark.parametrize("name, dtype", _DTYPE_CASES)
def test_dtypes_match_torch(name, dtype):
    values = noncontig(np.array([[1.5, 0.0, -2.0], [3.0, 2.5, 0.0]], dtype=np.float32))
    matches_torch(lambda m, x: DTYPE_OPS[name](m, x.to(getattr(m, dtype))), values)
