"""lantern/ops/tensor_shape.py against torch: values, dtypes, shapes, strides and error classes of every form, on
non-contiguous inputs; gradients equal torch's, and gradcheck + gradgradcheck pass in float64."""
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, check, matches_torch, noncontig, to_lib

RNG = np.random.default_rng(0)


def arr(*shape, dtype=np.float32):
    if dtype == np.bool_:
        return noncontig(RNG.random(shape) > 0.5)
    if np.dtype(dtype).kind in "iu":
        return noncontig(RNG.integers(0, 9, shape).astype(dtype))
    if np.dtype(dtype).kind == "c":
        return noncontig((RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype))
    return noncontig(RNG.standard_normal(shape).astype(dtype))


DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8, np.bool_, np.complex64]


# ---- forward against torch -----------------------------------------------------------------------------------

FORWARD = {
    "flip": [lambda m, x: m.flip(x, [0, 2]), lambda m, x: x.flip(-1), lambda m, x: x.flip(0, 1),
             lambda m, x: x.transpose(0, 2).flip(0), lambda m, x: m.flip(x, []), lambda m, x: x.flip(0, 0),
             lambda m, x: x.flip(3)],
    "fliplr": [lambda m, x: m.fliplr(x), lambda m, x: x.fliplr(), lambda m, x: m.fliplr(x[0, 0])],
    "flipud": [lambda m, x: m.flipud(x), lambda m, x: x.flipud(), lambda m, x: m.flipud(x[0, 0, 0])],
    "roll": [lambda m, x: m.roll(x, 1, 0), lambda m, x: x.roll(-2, -1), lambda m, x: x.roll((1, 2), (0, 2)),
             lambda m, x: x.roll(5), lambda m, x: x.transpose(0, 1).roll(3), lambda m, x: x.roll((1, 2), 0),
             lambda m, x: x.roll(1, 3)],
    "rot90": [lambda m, x: m.rot90(x), lambda m, x: x.rot90(2), lambda m, x: x.rot90(3, (2, 0)),
              lambda m, x: x.rot90(-1, [1, 2]), lambda m, x: x.rot90(4), lambda m, x: x.rot90(1, [0, 0]),
              lambda m, x: x.rot90(1, [0]), lambda m, x: x[0, 0].rot90()],
    "repeat": [lambda m, x: x.repeat(2, 1, 3), lambda m, x: x.repeat((1, 2, 1, 1)), lambda m, x: x.repeat(0, 1, 1),
               lambda m, x: x.repeat(2, 2), lambda m, x: x.repeat(-1, 1, 1), lambda m, x: x[0, 0, 0].repeat(3)],
    "tile": [lambda m, x: m.tile(x, (2,)), lambda m, x: x.tile(2, 1, 1, 2), lambda m, x: x.tile((1, 3, 1))],
    "repeat_interleave": [
        lambda m, x: m.repeat_interleave(x, 2), lambda m, x: x.repeat_interleave(2, dim=1),
        lambda m, x: x.repeat_interleave(m.tensor([1, 0, 3]), dim=1), lambda m, x: x.repeat_interleave(m.tensor(2), 0),
        lambda m, x: x.repeat_interleave(m.tensor([2]), -1), lambda m, x: x.repeat_interleave(-1),
        lambda m, x: x.repeat_interleave(m.tensor([1, 2]), dim=1), lambda m, x: x[0, 0, 0].repeat_interleave(3),
        lambda m, x: x.repeat_interleave(m.tensor([1, -1, 1]), dim=1),
        lambda m, x: x.repeat_interleave(m.tensor([1.0, 1.0, 1.0]), dim=1),
        lambda m, x: m.repeat_interleave(m.tensor([2, 0, 1])),
        lambda m, x: m.repeat_interleave(m.tensor([2, 0, 1]), output_size=3),
        lambda m, x: m.repeat_interleave(m.tensor([[2, 0, 1]])),
        lambda m, x: x[0, 0].repeat_interleave(m.tensor([1, 2, 0, 1])),
        lambda m, x: x.repeat_interleave(m.tensor([1, 2, 0]), dim=1, output_size=3)],
    "broadcast_to": [lambda m, x: m.broadcast_to(x, (2, 2, 3, 4)), lambda m, x: x[:, :1].broadcast_to((2, 5, 4)),
                     lambda m, x: x.broadcast_to((3, 3, 4))],
    "broadcast_tensors": [lambda m, x: m.broadcast_tensors(x, x[:1, :, :1], x[0, 0, 0]),
                          lambda m, x: m.broadcast_tensors(x, x[:, :2])],
    "stack_family": [
        lambda m, x: m.hstack([x, x]), lambda m, x: m.hstack((x[0, 0], x[1, 1])), lambda m, x: m.hstack([x[0, 0, 0]]),
        lambda m, x: m.vstack([x[0], x[1]]), lambda m, x: m.vstack([x[0, 0], x[1, 1]]),
        lambda m, x: m.row_stack([x[0, 0], x[1, 1]]), lambda m, x: m.dstack([x[0], x[1]]),
        lambda m, x: m.dstack([x[0, 0], x[1, 1]]), lambda m, x: m.column_stack([x[0, 0], x[1], x[0, 1, 0]]),
        lambda m, x: m.hstack([]), lambda m, x: m.vstack([x[0], x[0, 0, :2]]),
        lambda m, x: m.hstack([x[0], x[1]], out=m.empty(0, dtype=x.dtype)),
        lambda m, x: m.atleast_1d(x[0, 0, 0]), lambda m, x: m.atleast_2d(x[0, 0]), lambda m, x: m.atleast_3d(x[0]),
        lambda m, x: m.atleast_3d(x[0, 0]), lambda m, x: m.atleast_3d(x[0, 0, 0], x), lambda m, x: m.atleast_2d([x])],
    "diag": [lambda m, x: m.diag(x[0, 0]), lambda m, x: m.diag(x[0, 0], 2), lambda m, x: x[0, 0].diag(-1),
             lambda m, x: m.diag(x[0]), lambda m, x: x[0].diag(1), lambda m, x: x[0].diag(-5), lambda m, x: m.diag(x),
             lambda m, x: m.diag(x[0], out=m.empty(0, dtype=x.dtype))],
    "diag_embed": [lambda m, x: m.diag_embed(x), lambda m, x: x.diag_embed(1), lambda m, x: x.diag_embed(-2, 0, 2),
                   lambda m, x: x[0].diag_embed(0, -1, 0), lambda m, x: x.diag_embed(0, 1, 1),
                   lambda m, x: m.diag_embed(x[0, 0], out=m.empty(0, dtype=x.dtype))],
    "trace": [lambda m, x: m.trace(x[0]), lambda m, x: x[:, 0].trace(), lambda m, x: x.trace()],
    "outer": [lambda m, x: m.outer(x[0, 0], x[1, 1, :3]), lambda m, x: x[0, 0].outer(x[0, 1]),
              lambda m, x: m.ger(x[0, 0], x[1, 1]), lambda m, x: m.outer(x[0], x[0, 0]),
              lambda m, x: m.outer(x[0, 0], x[0, 0], out=m.empty(0, dtype=x.dtype))],
    "kron": [lambda m, x: m.kron(x[0], x[1, :2]), lambda m, x: x.kron(x[0, 0]), lambda m, x: m.kron(x[0, 0, 0], x),
             lambda m, x: m.kron(x[0], x[0], out=m.empty(0, dtype=x.dtype))],
    "tensordot": [lambda m, x: m.tensordot(x, x, ([1, 2], [1, 2])), lambda m, x: m.tensordot(x, x[0], 2),
                  lambda m, x: m.tensordot(x[0], x[1], dims=0), lambda m, x: m.tensordot(x, x[0].t(), ([2], [0])),
                  lambda m, x: m.tensordot(x, x, ([1], [2])), lambda m, x: m.tensordot(x, x, 4),
                  lambda m, x: m.tensordot(x, x, ([0, 1], [0]))],
    "block_diag": [lambda m, x: m.block_diag(x[0], x[1, 0], x[0, 0, 0], x[1, :1]),
                   lambda m, x: m.block_diag(x[0]), lambda m, x: m.block_diag(x)],
    "meshgrid": [lambda m, x: m.meshgrid(x[0, 0], x[1, :2, 0], indexing="ij"),
                 lambda m, x: m.meshgrid(x[0, 0], x[1, :2, 0], x[0, 0, 0], indexing="xy"),
                 lambda m, x: m.meshgrid([x[0, 0], x[1, 1]], indexing="xy"),
                 lambda m, x: m.meshgrid(x[0, 0], indexing="xy"), lambda m, x: m.meshgrid(x[0], indexing="ij"),
                 lambda m, x: m.meshgrid(x[0, 0], indexing="ji")],
    "cartesian_prod": [lambda m, x: m.cartesian_prod(x[0, 0], x[1, 1, :2]), lambda m, x: m.cartesian_prod(x[0, 0]),
                       lambda m, x: m.cartesian_prod(x[0, 0], x[0, 1], x[1, 0, :2]),
                       lambda m, x: m.cartesian_prod(x[0], x[0, 0])],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", sorted(FORWARD))
def test_forward_matches_torch(op, dtype):
    x = arr(2, 3, 4, dtype=dtype)
    for fn in FORWARD[op]:
        matches_torch(fn, x)


MIXED = [lambda m, a, b: m.outer(a[0], b[0]), lambda m, a, b: m.kron(a, b), lambda m, a, b: m.block_diag(a, b),
         lambda m, a, b: m.tensordot(a, b, ([1], [1])), lambda m, a, b: m.einsum("ij,ij->i", a, b),
         lambda m, a, b: m.cartesian_prod(a[0], b[0]), lambda m, a, b: m.hstack([a, b]), lambda m, a, b: m.cdist(a, b)]


@pytest.mark.parametrize("dtypes", [(np.float32, np.float64), (np.float32, np.int64), (np.int64, np.int64)],
                         ids=str)
def test_mixed_dtypes_promote_or_raise_like_torch(dtypes):
    a, b = arr(2, 3, dtype=dtypes[0]), arr(2, 3, dtype=dtypes[1])
    for fn in MIXED:
        matches_torch(fn, a, b)


def test_flip_out_and_empty():
    check(lambda m, x: m.flip(x, [0]), np.zeros((0, 3), np.float32))
    check(lambda m, x: m.roll(x, 2, 0), np.zeros((0, 3), np.float32))


PRODUCT_DTYPES = [np.float32, np.float64, np.int64, np.complex128]


@pytest.mark.parametrize("dtype", PRODUCT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_cross_matches_torch(dtype):
    a, b = arr(2, 3, 4, dtype=dtype), arr(2, 3, 4, dtype=dtype)
    matches_torch(lambda m, a, b: m.cross(a, b, dim=1), a, b)
    matches_torch(lambda m, a, b: a.cross(b, -2), a, b)
    matches_torch(lambda m, a, b: m.cross(a.transpose(1, 2), b.transpose(1, 2), dim=-1), a, b)
    matches_torch(lambda m, a, b: m.cross(a, b[:1], dim=1), a, b)
    matches_torch(lambda m, a, b: m.cross(a, b, dim=2), a, b)
    matches_torch(lambda m, a, b: m.cross(a, b[0], dim=1), a, b)
    matches_torch(lambda m, a, b: m.cross(a, b, dim=1, out=m.empty(0, dtype=a.dtype)), a, b)
    matches_torch(lambda m, a, b: m.cross(a, b.to(m.float16), dim=1), a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        matches_torch(lambda m, a, b: m.cross(a, b), a, b)


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 2)]), ("ij,kj", [(3, 4), (2, 4)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]),
    ("ij->", [(3, 4)]), ("ij->ji", [(3, 4)]), ("i,i->", [(4,), (4,)]), ("i,j->ij", [(3,), (2,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk", [(1, 3, 4), (2, 4, 5)]), ("i...->...", [(3, 2, 4)]), ("iij->j", [(3, 3, 2)]),
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]), ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
    ("a,b,c->abc", [(2,), (3,), (4,)]), ("ba,ab->", [(3, 2), (2, 3)]), ("i,i,i->i", [(3,), (3,), (3,)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("iji->j", [(2, 3, 2)]),
    ("...", [(2, 3)]), ("i j , j k -> i k", [(2, 3), (3, 2)]), ("ij,jk->ik", [(3, 4), (5, 2)]),
    ("ij,jk->il", [(3, 4), (4, 2)]), ("ij,jk", [(3, 4)]), ("ijk", [(3, 4)]), ("ij->ii", [(3, 4)]),
    ("ii", [(3, 4)]), ("i.j", [(3, 4)]), ("i1", [(3, 4)]), ("ij,ij->i", [(2, 1), (2, 3)]),
    ("ij,jk->ik", [(2, 1), (3, 2)]), ("...i,...i", [(2, 1, 3), (4, 3)]), ("ij,ij->ij", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex64], ids=lambda d: np.dtype(d).name)
def test_einsum_matches_torch(dtype):
    for equation, shapes in EINSUM:
        inputs = [arr(*s, dtype=dtype) for s in shapes]
        matches_torch(lambda m, *xs: m.einsum(equation, *xs), *inputs, atol=1e-4, rtol=1e-5, strides=False)
    matches_torch(lambda m, a, b: m.einsum("ij,jk", [a, b]), arr(2, 3), arr(3, 2))


CDIST = [lambda m, a, b: m.cdist(a, b), lambda m, a, b: m.cdist(a, b, 1.0), lambda m, a, b: m.cdist(a, b, 0.0),
         lambda m, a, b: m.cdist(a, b, 3.0), lambda m, a, b: m.cdist(a, b, 0.5),
         lambda m, a, b: m.cdist(a, b, p=float("inf")),
         lambda m, a, b: m.cdist(a, b[0]), lambda m, a, b: m.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
         lambda m, a, b: m.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"),
         lambda m, a, b: m.cdist(a, b, -1.0), lambda m, a, b: m.cdist(a, b[..., :2]),
         lambda m, a, b: m.cdist(a[0, 0], b),
         lambda m, a, b: m.cdist(a.long(), b.long()), lambda m, a, b: m.cdist(a, b.double())]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cdist_matches_torch(dtype):
    a, b = arr(2, 4, 3, dtype=dtype), arr(2, 5, 3, dtype=dtype)
    for fn in CDIST:
        matches_torch(fn, a, b, atol=1e-4, rtol=1e-4)
    matches_torch(lambda m, a, b: m.cdist(a, b), arr(30, 3, dtype=dtype), arr(4, 3, dtype=dtype), atol=1e-4, rtol=1e-4)


# ---- gradients ---------------------------------------------------------------------------------------------------

def floats(*shape):
    return RNG.uniform(-2, 2, shape)


GRAD_CASES = [
    ("flip", lambda m, x: x.flip(0, 2), [floats(2, 3, 2)]),
    ("roll", lambda m, x: x.roll((1, -1), (0, 1)), [floats(2, 3)]),
    ("roll_flat", lambda m, x: x.roll(2), [floats(2, 3)]),
    ("rot90", lambda m, x: x.rot90(1, (1, 0)), [floats(2, 3)]),
    ("repeat", lambda m, x: x.repeat(2, 1, 2), [floats(2, 3)]),
    ("tile", lambda m, x: x.tile(2), [floats(2, 3)]),
    ("repeat_interleave", lambda m, x: x.repeat_interleave(2, 1), [floats(2, 3)]),
    ("repeat_interleave_tensor", lambda m, x: x.repeat_interleave(m.tensor([2, 0, 1]), 1), [floats(2, 3)]),
    ("broadcast_tensors", lambda m, x, y: m.mul(*m.broadcast_tensors(x, y)), [floats(2, 3), floats(3)]),
    ("hstack", lambda m, x, y: m.hstack([x, y]), [floats(2, 3), floats(2, 1)]),
    ("dstack", lambda m, x, y: m.dstack([x, y]), [floats(2, 3), floats(2, 3)]),
    ("column_stack", lambda m, x, y: m.column_stack([x, y]), [floats(2), floats(2, 3)]),
    ("diag", lambda m, x: m.diag(x, 1), [floats(3)]),
    ("diag_matrix", lambda m, x: m.diag(x, -1), [floats(3, 3)]),
    ("diag_embed", lambda m, x: m.diag_embed(x, -1, 0, 2), [floats(2, 3)]),
    ("trace", lambda m, x: m.trace(x), [floats(3, 2)]),
    ("outer", lambda m, x, y: m.outer(x, y), [floats(3), floats(2)]),
    ("kron", lambda m, x, y: m.kron(x, y), [floats(2, 3), floats(2, 2)]),
    ("cross", lambda m, x, y: m.cross(x, y, dim=0), [floats(3, 2), floats(3, 1)]),
    ("tensordot", lambda m, x, y: m.tensordot(x, y, ([0, 2], [1, 0])), [floats(2, 3, 2), floats(2, 2, 3)]),
    ("einsum", lambda m, x, y: m.einsum("iij,jk->ik", x, y), [floats(2, 2, 3), floats(3, 2)]),
    ("einsum_ellipsis", lambda m, x, y: m.einsum("...ij,...j", x, y), [floats(2, 2, 3), floats(3)]),
    ("block_diag", lambda m, x, y: m.block_diag(x, y), [floats(2, 3), floats(2)]),
    ("cartesian_prod", lambda m, x, y: m.cartesian_prod(x, y), [floats(2), floats(3)]),
    ("meshgrid", lambda m, x, y: m.mul(*m.meshgrid(x, y, indexing="xy")), [floats(2), floats(3)]),
    ("cdist", lambda m, x, y: m.cdist(x, y), [floats(2, 3, 2), floats(4, 2)]),
    ("cdist_mm", lambda m, x, y: m.cdist(x, y, compute_mode="use_mm_for_euclid_dist"), [floats(3, 2), floats(4, 2)]),
    ("cdist_p1", lambda m, x, y: m.cdist(x, y, 1.0), [floats(3, 2), floats(4, 2)]),
    ("cdist_p3", lambda m, x, y: m.cdist(x, y, 3.0), [floats(3, 2), floats(4, 2)]),
    ("cdist_p0.5", lambda m, x, y: m.cdist(x, y, 0.5), [floats(3, 2), floats(4, 2)]),
    ("cdist_pinf", lambda m, x, y: m.cdist(x, y, float("inf")), [floats(3, 2), floats(4, 2)]),
]


def make_inputs(lib, arrays):
    return [to_lib(lib, noncontig(a)).requires_grad_() for a in arrays]


@pytest.mark.parametrize("name,fn,arrays", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(name, fn, arrays):
    results = []
    for lib in (torch, lantern):
        inputs = make_inputs(lib, arrays)
        out = fn(lib, *inputs)
        seed = lib.tensor(np.random.default_rng(3).uniform(-1, 1, tuple(out.shape)), dtype=out.dtype)
        results.append(lib.autograd.grad(out, inputs, seed))
    assert_same(results[1], results[0], atol=1e-6, rtol=1e-6, strides=False)


@pytest.mark.parametrize("name,fn,arrays", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(name, fn, arrays):
    inputs = make_inputs(lantern, arrays)
    f = lambda *xs: fn(lantern, *xs)  # noqa: E731
    assert lantern.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5)
    assert lantern.autograd.gradgradcheck(f, inputs, eps=1e-6, atol=1e-4)


def cfloats(*shape):
    return floats(*shape) + 1j * floats(*shape)


COMPLEX_GRAD_CASES = [
    ("einsum", lambda m, x, y: m.einsum("bij,bjk->bki", x, y), [cfloats(2, 2, 3), cfloats(2, 3, 2)]),
    ("repeat", lambda m, x: x.repeat(2, 1), [cfloats(2, 3)]),
    ("flip_roll", lambda m, x: x.flip(1).roll(1, 0), [cfloats(2, 3)]),
    ("trace", lambda m, x: m.trace(x), [cfloats(3, 3)]),
    ("cross", lambda m, x, y: m.cross(x, y, dim=1), [cfloats(2, 3), cfloats(2, 3)]),
]


@pytest.mark.parametrize("name,fn,arrays", COMPLEX_GRAD_CASES, ids=[c[0] for c in COMPLEX_GRAD_CASES])
def test_complex_gradients_match_torch(name, fn, arrays):
    test_gradients_match_torch(name, fn, arrays)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("p", [2.0, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("rows", [30, 5], ids=["matmul_route", "direct"])
def test_cdist_gradient_at_zero_distances_matches_torch(p, rows, dtype):
    points = floats(rows, 3).astype(dtype)
    points[1] = points[0]
    results = []
    for lib in (torch, lantern):
        x = to_lib(lib, noncontig(points)).requires_grad_()
        results.append(lib.autograd.grad(lib.cdist(x, x, p).sum(), x))
    assert_same(results[1], results[0], atol=1e-4, rtol=1e-4, strides=False)


def test_grad_fn_names_of_kernel_ops():
    x = lantern.ones(2, 3, requires_grad=True)
    names = [type(y.grad_fn).__name__ for y in (x.flip(0), x.roll(1), x.repeat(2, 1), x.diag_embed(), x.trace(),
                                                lantern.cdist(x, x))]
    assert names == ["FlipBackward0", "RollBackward0", "RepeatBackward0", "DiagEmbedBackward0", "TraceBackward0",
                     "CdistBackward0"]


def test_meta_device_shapes():
    x = lantern.empty(2, 3, 4, device="meta")
    assert x.flip(0).shape == (2, 3, 4) and x.roll(1, 0).device.type == "meta"
    assert x.repeat(2, 1, 1).shape == (4, 3, 4) and x.diag_embed().shape == (2, 3, 4, 4)
    assert lantern.einsum("bij,bjk->bik", x, x.transpose(1, 2)).shape == (2, 3, 3)
    assert lantern.cdist(x, x).shape == (2, 3, 3)
