"""Regression tests for OpInfo sample failures of torch 2.13's op_db that no other area owned, each compared with
torch: values, dtypes, shapes, strides and error classes (with the message's gist where it names the fault).
"""
import numpy as np
import pytest

from oracle import check, raises_like

RNG = np.random.default_rng(2613)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("dim", [None, 1])
@pytest.mark.parametrize("dtype", [np.bool_, np.int64, np.float64])
def test_unique_consecutive_of_an_empty_tensor(dim, dtype):
    empty = np.zeros((5, 0, 5), dtype=dtype)
    check(lambda m, x: m.unique_consecutive(x, return_inverse=True, return_counts=True, dim=dim), empty)


@pytest.mark.parametrize("unique", ["unique", "unique_consecutive"])
@pytest.mark.parametrize("dim", [0, -1])
def test_unique_refuses_empty_slices_along_another_dim(unique, dim):
    raises_like(lambda m, x: getattr(m, unique)(x, dim=dim), f32(5, 0, 5), match="0 sized dimensions")


@pytest.mark.parametrize("source, destination, role", [
    ((1, 0, 2), (0, 4, -5), "destination"),
    ((0, 4, -5), (1, 0, 2), "source"),
    ((1, 0, -4), (0, 4, -5), "source"),
])
def test_movedim_refuses_repeated_dims(source, destination, role):
    raises_like(lambda m, x: m.movedim(x, source, destination), f32(2, 3, 4, 5, 6),
                match=f"repeated dim in `{role}`")


@pytest.mark.parametrize("shape", [(0, 6, 5), (0, 6), (0, 6, 2, 3)])
def test_group_norm_of_an_empty_batch(shape):
    check(lambda m, x, w, b: m.nn.functional.group_norm(x, 3, w, b), f32(*shape), f32(6), f32(6))


def ints(*shape, dtype=np.int64):
    return RNG.integers(0 if dtype in (np.uint8, np.bool_) else -50, 2 if dtype == np.bool_ else 50,
                        shape).astype(dtype)


@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 6, 3, 4), (1, 5, 2, 2, 3)])
def test_local_response_norm_of_int64_floors_the_window_mean(shape):
    check(lambda m, x: m.nn.functional.local_response_norm(x, 3, alpha=1.0), ints(*shape))


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.bool_])
@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 6, 3, 4)])
def test_local_response_norm_refuses_other_integer_dtypes(dtype, shape):
    raises_like(lambda m, x: m.nn.functional.local_response_norm(x, 2), ints(*shape, dtype=dtype),
                match="not implemented for")


@pytest.mark.parametrize("call", [
    lambda m, x: m.kthvalue(x, 5, out=(x, m.empty((), dtype=m.int64))),
    lambda m, x: m.topk(x, 5, out=(x[:5], m.empty(5, dtype=m.int64))),
    lambda m, x: m.kthvalue(x[:4], 2, out=(x[3], m.empty((), dtype=m.int64))),
])
def test_topk_and_kthvalue_refuse_an_out_sharing_the_input(call):
    raises_like(call, f32(10), match="single memory location")


def test_topk_and_kthvalue_write_into_separate_outs():
    check(lambda m, x: (m.topk(x, 3, out=(m.empty(3), m.empty(3, dtype=m.int64))),
                        m.kthvalue(x, 4, out=(m.empty(()), m.empty((), dtype=m.int64)))), f32(10))


@pytest.mark.parametrize("margin", [-1.0, 0.0, 0])
def test_triplet_margin_loss_refuses_a_margin_not_above_zero(margin):
    raises_like(lambda m, a, p, n: m.nn.functional.triplet_margin_loss(a, p, n, margin=margin),
                f32(3, 4), f32(3, 4), f32(3, 4), match="margin must be greater than 0")


MULTI_MARGIN_ERRORS = {
    "empty classes": (f32(5, 0), ints(5), None, "non-empty vector or matrix"),
    "float target": (f32(5, 4), f32(5), None, "expected scalar type Long"),
    "0-d weight": (f32(5, 4), f32(5), f32(), "weight must be one-dimensional"),
    "2-d weight": (f32(5, 4), f32(5), f32(5, 4), "weight must be one-dimensional"),
    "weight of the wrong size": (f32(5, 4), f32(5), f32(5), "inconsistent weight size"),
}


@pytest.mark.parametrize("case", MULTI_MARGIN_ERRORS)
def test_multi_margin_loss_argument_errors(case):
    x, target, weight, gist = MULTI_MARGIN_ERRORS[case]
    inputs = (x, target) if weight is None else (x, target, weight)
    raises_like(lambda m, x, t, *w: m.nn.functional.multi_margin_loss(x, t, weight=w[0] if w else None), *inputs,
                match=gist)


@pytest.mark.parametrize("shape", [(5, 4), (4,), ()])
def test_multi_margin_loss_with_weight(shape):
    target = RNG.integers(0, shape[-1] if shape else 1, shape[:-1]).astype(np.int64)
    check(lambda m, x, t, w: m.nn.functional.multi_margin_loss(x, t, weight=w), f32(*shape), target,
          f32(shape[-1] if shape else 1))
