"""Regression tests for the error_inputs and shape samples of torch 2.13's op_db (area errors+shapes), each compared
with torch: the exception class and the message's gist, values, dtypes and shapes.
"""
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import check, raises_like

RNG = np.random.default_rng(1604)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---- out= that shares memory with an input (ATen's assert_no_overlap / assert_no_internal_overlap) ----

INDEX = np.array([2, 1, 0])

OUT_OVERLAPS = {
    "take, out is the input": lambda m, x: m.take(x, m.tensor(INDEX), out=x),
    "take, out is a view of the input": lambda m, x: m.take(x, m.tensor(INDEX), out=x[:3]),
    "take, out overlaps the index": lambda m, x: m.take(x.long(), (i := m.tensor([2, 1, 0, 1]))[1:], out=i[:-1]),
    "take, out is expanded": lambda m, x: m.take(x, m.tensor(INDEX), out=m.zeros(1).expand(3)),
    "gather, out is the input": lambda m, x: m.gather(x, 0, m.tensor(INDEX), out=x),
    "gather, out grows over the index": lambda m, x: m.gather(x.long(), 0, (i := m.tensor([2, 1, 0]))[1:],
                                                              out=i[:1]),
    "index_select, out is expanded": lambda m, x: m.index_select(x.view(2, 3), 1, m.tensor([0, 1]),
                                                                 out=m.zeros(1, 6).expand(2, 6)),
    "index_select, out is the input": lambda m, x: m.index_select(x, 0, m.tensor(INDEX), out=x[3:]),
    "cat, out is an input": lambda m, x: m.cat([x[:3], x[3:]], out=x),
    "cat, an empty out grows into an input": lambda m, x: m.cat([(e := m.zeros(0)), x.view(2, 3)], out=e),
    "masked_select, out is the input": lambda m, x: m.masked_select(x, x > 0, out=x),
}


@pytest.mark.parametrize("case", OUT_OVERLAPS)
def test_out_sharing_memory_with_an_input_is_refused(case):
    _, message = raises_like(OUT_OVERLAPS[case], f32(6), match="unsupported operation")
    op = case.partition(",")[0]
    assert op in message or op == "masked_select", message  # lantern names the op (and the shapes)


OUT_ALLOWED = {
    "take into a separate part of the same storage": lambda m, x: (m.take(x[:3], m.tensor(INDEX), out=x[3:]), x),
    "gather, out is exactly the index": lambda m, x: m.gather(x.long(), 0, (i := m.tensor([2, 1, 0])), out=i),
    "cat into a fresh out": lambda m, x: m.cat([x[:3], x[3:]], out=m.empty(0)),
    "index_select, expanded out that is resized": lambda m, x: m.index_select(x.view(2, 3), 1, m.tensor([0, 1]),
                                                                              out=m.zeros(1, 6).expand(1, 6)[:, :4]),
    "masked_select into a separate part of the same storage": lambda m, x: m.masked_select(x[:3], x[:3] > 0,
                                                                                            out=x[3:]),
    "conj_physical into its input": lambda m, x: m.conj_physical(x, out=x),
    "bernoulli into its input": lambda m, x: m.bernoulli((x > 0).float(), out=x),
}


@pytest.mark.parametrize("case", OUT_ALLOWED)
def test_out_without_overlap_is_written(case):
    check(OUT_ALLOWED[case], f32(6))


# ---- reflected operators called unbound on a number, and rsub with a number first ----

@pytest.mark.parametrize("dunder", ["__radd__", "__rmul__", "__rand__", "__ror__", "__rxor__", "__rdiv__",
                                    "__rtruediv__"])
@pytest.mark.parametrize("other", ["tensor", "number"])
def test_reflected_operator_called_on_a_number(dunder, other):
    raises_like(lambda m, t: getattr(m.Tensor, dunder)(2, t if other == "tensor" else 3), np.array([1, 2, 3]))


@pytest.mark.parametrize("dunder", ["__radd__", "__rmul__", "__rand__", "__ror__", "__rxor__", "__rtruediv__",
                                    "__rsub__"])
def test_reflected_operators_still_compute(dunder):
    check(lambda m, t: getattr(t, dunder)(6), np.array([1, 2, 3]))


def test_rsub_refuses_a_number_first():
    raises_like(lambda m, t: m.rsub(2, t), np.array([1, 2, 3]), match="rsub")


# ---- reductions over a dim of a tensor of more than 64 dims ----

@pytest.mark.parametrize("op", ["amax", "amin", "aminmax"])
@pytest.mark.parametrize("dim", [-1, 64])
def test_reducing_a_dim_of_65_dims_is_refused(op, dim):
    def run(m):
        storage = m.zeros(1)
        return getattr(m, op)(storage.as_strided([1] * 65, [1] * 65), dim=dim)
    with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
        run(torch)
    with pytest.raises(RuntimeError, match=f"only tensors with up to 64 dims are supported \\({op}"):
        run(lantern)


def test_aminmax_out_dtype_is_checked():
    raises_like(lambda m, x: m.aminmax(x, dim=0, out=(m.empty(4), m.empty(4, dtype=m.float64))), f32(4, 4),
                match="Expected out tensor to have dtype")


def test_aminmax_out_is_written():
    check(lambda m, x: m.aminmax(x, dim=1, out=(m.empty(0), m.empty(0))), f32(3, 4))


# ---- as_strided of a slice reaching outside it, and histogramdd with edges out of order ----

@pytest.mark.parametrize("storage_offset", [0, 3, 10])
def test_as_strided_backward_of_a_partial_view(storage_offset):
    def grad(m):
        base = m.arange(20, dtype=m.float64)
        x = base[5:15].detach().requires_grad_(True)  # a tensor at storage offset 5 of a storage of 20
        out = m.as_strided(x, (2, 2), (1, 2), storage_offset)
        out.backward(m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64))
        return x.grad
    check(lambda m: grad(m))


@pytest.mark.parametrize("density", [False, True])
def test_histogramdd_with_edges_out_of_order(density):
    edges = [np.array([-1.0, 2.0, 0.5, 3.0], np.float32), np.array([1.0, -2.0, 4.0], np.float32)]
    check(lambda m, x, e0, e1: m.histogramdd(x, [e0, e1], density=density), f32(40, 2) * 2, *edges)


# ---- ops lantern lacked: nonzero_static, empty_permuted, fill, resize_as_ ----

@pytest.mark.parametrize("shape", [(), (5,), (5, 0, 5), (3, 4)])
@pytest.mark.parametrize("size", [0, 2, 9])
def test_nonzero_static(shape, size):
    x = np.array(RNG.integers(0, 3, shape) * (RNG.random(shape) > 0.3), dtype=np.float32)
    check(lambda m, x: (m.nonzero_static(x, size=size), x.nonzero_static(size=size, fill_value=7)), x)


def test_nonzero_static_refuses_a_negative_size():
    raises_like(lambda m, x: m.nonzero_static(x, size=-1), f32(3), match="'size' must be an non-negative integer")


@pytest.mark.parametrize("size, layout", [((2, 3, 4), (2, 0, 1)), ((1, 0, 5, 1), (3, 1, 0, 2)), ((), ())])
def test_empty_permuted_lays_dims_out_in_that_order(size, layout):
    check(lambda m: m.empty_permuted(size, layout, dtype=m.int64).zero_())


@pytest.mark.parametrize("size, layout, gist", [((2,), (0, 1), "does not match the length"),
                                                ((2,), (3,), "Dimension out of range"),
                                                ((2,), (-1,), "Dimension out of range"),
                                                ((2, 3), (0, 0), "Duplicate dim not allowed")])
def test_empty_permuted_errors(size, layout, gist):
    raises_like(lambda m: m.empty_permuted(size, layout), match=gist)


@pytest.mark.parametrize("value", [True, 2.7, -3])
def test_fill(value):
    check(lambda m, x: m.fill(x, value), np.zeros((2, 3), np.int64))
    check(lambda m, x: m.fill(x.t(), value), f32(3, 2))


def test_fill_gradients():
    def grads(m):
        x = m.tensor(f32(2, 3), requires_grad=True)
        value = m.tensor(2.0, requires_grad=True)
        m.fill(x, value).sum().backward()
        return x.grad, value.grad
    check(grads)


def test_resize_as_():
    def resized(m, x, template):
        result = m.resize_as_(x, template)
        return result is x, x.shape, x._version
    check(resized, f32(2), f32(3, 2))


# ---- complex32 (chalf): a real dtype, ml_dtypes' ----

C64 = np.array([[1 + 2j, 0.1 - 0.7j], [3.25 + 0j, -2 + 0.5j]], np.complex64)
COMPLEX32_CASES = {
    "chalf": lambda m, x: x.chalf(),
    "chalf of reals": lambda m, x: x.real.chalf(memory_format=m.contiguous_format),
    "back to complex64 and float32": lambda m, x: (x.chalf().to(m.complex64), x.chalf().float()),
    "real, imag, view_as_real": lambda m, x: (x.chalf().real, x.chalf().imag, m.view_as_real(x.chalf())),
    "view_as_complex and complex of halves": lambda m, x: (m.view_as_complex(m.view_as_real(x).half()),
                                                           m.complex(x.real.half(), x.imag.half())),
    "arithmetic": lambda m, x: (x.chalf() + x.chalf(), x.chalf() * 2.5, 1j - x.chalf(), -x.chalf()),
    "promotion": lambda m, x: (x.chalf() + x.real, x.chalf() * x.real.half(), x.real.half() * 1j,
                               x.chalf() + x.double()),
    "comparisons and predicates": lambda m, x: (x.chalf() == x.chalf().conj(), x.chalf().isfinite()),
    "abs, sgn, var": lambda m, x: (x.chalf().abs(), x.chalf().sgn(), x.chalf().var()),
    "copies and views": lambda m, x: (m.cat([x.chalf(), x.chalf()]), x.chalf().t().contiguous(), x.chalf()[:, 1],
                                      m.where(x.real > 0, x.chalf(), x.chalf().conj())),
    "tolist and item": lambda m, x: (x.chalf().tolist(), x.chalf()[1, 0].item()),
}


@pytest.mark.parametrize("case", COMPLEX32_CASES)
def test_complex32_matches_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "ComplexHalf support is experimental"
        check(COMPLEX32_CASES[case], C64)


def test_complex32_prints_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = repr(torch.tensor(C64).chalf()).replace("torch.", "lantern.")
    assert repr(lantern.tensor(C64).chalf()) == expected


def test_chalf_gradient():
    def grad(m):
        x = m.tensor([1.0, 2.0, -0.5], dtype=m.float64, requires_grad=True)
        weight = m.tensor([1 + 2j, 0.5j, -1], dtype=m.complex64).chalf()
        return m.autograd.grad(x.chalf(), x, weight)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(grad)


def test_complex32_into_a_real_tensor_keeps_the_real_part_with_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns once per process
        check(lambda m, x: m.zeros(2, 2).copy_(x.chalf()), C64)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        lantern.zeros(2, 2).copy_(lantern.tensor(C64).chalf())


def test_angle_of_complex32_is_refused_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_like(lambda m, x: x.chalf().angle(), C64, match="not implemented for 'ComplexHalf'")


# ---- as_strided_scatter addresses self's storage ----

@pytest.mark.parametrize("view", ["strided", "offset", "gapped"])
def test_as_strided_scatter_keeps_selfs_storage_geometry(view):
    def scattered(m):
        base = m.arange(20.0)
        self = {"strided": base.view(4, 5)[:, ::2], "offset": base[1:].view(1, 19)[:, :1].view(1),
                "gapped": base[1::2].view(2, 5)[:, :3]}[view]
        src = -m.arange(4.0).view(2, 2) - 1 if view != "offset" else m.tensor(-1.0)
        size, stride = ((2, 2), (1, 2)) if view != "offset" else ((), ())
        return m.as_strided_scatter(self, src, size, stride, 1 if view == "gapped" else 0)
    check(scattered)


# ---- complex add/sub scale the second operand by alpha as a complex product, as PyTorch's kernel ----

INF = float("inf")
EXTREMAL = np.array([1 + 0j, complex(INF, 0), complex(0, INF), complex(INF, INF), complex(-INF, INF), 0j],
                    np.complex64)


@pytest.mark.parametrize("form", ["add", "sub", "rsub", "radd", "alpha"])
def test_complex_add_with_infinite_parts(form):
    a, b = np.repeat(EXTREMAL, len(EXTREMAL)), np.tile(EXTREMAL, len(EXTREMAL))
    run = {"add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b, "rsub": lambda m, a, b: m.rsub(a, b),
           "radd": lambda m, a, b: b.__radd__(a), "alpha": lambda m, a, b: m.add(a, b, alpha=2)}[form]
    check(run, a, b)


def test_rsub_dunder_on_numbers_is_not_implemented():
    check(lambda m, t: (m.Tensor.__rsub__(2, t), 2 - t), np.array([1, 2, 3]))
