"""Every declared derivative (the derivatives section of each lantern/ops module), table-driven: gradients equal
torch's for the same non-contiguous inputs (and the node's name), gradcheck and gradgradcheck pass in float64, ops
without a derivative raise at backward, and nondifferentiable ops' outputs do not require grad.
"""
import numpy as np
import pytest
import torch

import lantern
from lantern.ops.registry import REGISTRY
import second_order
from oracle import as_numpy, assert_same, to_lib

RNG = np.random.default_rng(1234)


def uniform(*shape, low=-2.0, high=2.0, dtype=np.float64):
    """Values in [low, high], kept 0.05 away from integers (floor/round/remainder stay smooth under eps)."""
    vals = RNG.uniform(low, high, size=shape)
    vals = np.where(np.abs(vals - np.round(vals)) < 0.05, vals + 0.1, vals)
    return vals.astype(dtype)


def positive(*shape):
    return uniform(*shape, low=0.3, high=2.5)


def unit(*shape):
    return uniform(*shape, low=-0.8, high=0.8)


def cplx(*shape):
    return (uniform(*shape) + 1j * uniform(*shape)).astype(np.complex128)


def ints(values):
    return np.asarray(values, dtype=np.int64)


def aten(m, name):
    """lib.<name>, or torch.ops.aten.<name> for ops torch keeps out of its Python namespace."""
    return getattr(m, name) if m is lantern or hasattr(m, name) else getattr(torch.ops.aten, name)


class Case:
    """One way to call an op: fn(lib, *tensors) on inputs given as NumPy arrays (float ones require grad)."""

    def __init__(self, op, fn, *inputs, label="", check=True, compare=True, xfail=None):
        self.op, self.fn, self.inputs, self.label = op, fn, inputs, label
        self.check, self.compare, self.xfail = check, compare, xfail

    @property
    def id(self):
        return f"{self.op}-{self.label}" if self.label else self.op


def U(name, fn=None, sample=uniform, **kw):
    return Case(name, fn or (lambda m, x: getattr(m, name)(x)), sample(2, 3), **kw)


CASES = [
    U("abs"), U("neg"), U("sign"), U("sgn"), U("reciprocal", sample=positive), U("square"),
    U("sqrt", sample=positive), U("rsqrt", sample=positive), U("exp"), U("exp2"), U("expm1"),
    U("log", sample=positive), U("log2", sample=positive), U("log10", sample=positive), U("log1p", sample=positive),
    U("sin"), U("cos"), U("tan", sample=unit), U("asin", sample=unit), U("acos", sample=unit), U("atan"),
    U("sinh"), U("cosh"), U("tanh"), U("asinh"), U("acosh", sample=lambda *s: uniform(*s, low=1.2, high=3.0)),
    U("atanh", sample=unit), U("sigmoid"), U("floor"), U("ceil"), U("trunc"), U("frac"),

    Case("add", lambda m, x, y: m.add(x, y, alpha=2), uniform(2, 3), uniform(3)),
    Case("add", lambda m, x: x + 2, uniform(2, 3), label="scalar"),
    Case("sub", lambda m, x, y: m.sub(x, y, alpha=3), uniform(2, 3), uniform(2, 1)),
    Case("rsub", lambda m, x, y: m.rsub(x, y, alpha=2), uniform(2, 3), uniform(2, 3)),
    Case("rsub", lambda m, x: m.rsub(x, 2), uniform(2, 3), label="scalar"),
    Case("mul", lambda m, x, y: x * y, uniform(2, 3), uniform(1, 3)),
    Case("mul", lambda m, x: x * 2.5, uniform(2, 3), label="scalar"),
    Case("div", lambda m, x, y: x / y, uniform(2, 3), positive(2, 3)),
    Case("div", lambda m, x: 2 / x, positive(2, 3), label="rdiv"),
    Case("div", lambda m, x, y: m.div(x, y, rounding_mode="floor"), uniform(2, 3), positive(2, 3), label="floor"),
    Case("div", lambda m, x, y: m.div(x, y, rounding_mode="trunc"), uniform(2, 3), positive(2, 3), label="trunc"),
    Case("remainder", lambda m, x, y: m.remainder(x, y), uniform(2, 3), positive(2, 3)),
    Case("remainder", lambda m, x: m.remainder(x, 0.7), uniform(2, 3), label="scalar"),
    Case("fmod", lambda m, x, y: m.fmod(x, y), uniform(2, 3), positive(2, 3)),
    Case("fmod", lambda m, x: m.fmod(x, 0.7), uniform(2, 3), label="scalar"),
    Case("atan2", lambda m, x, y: m.atan2(x, y), uniform(2, 3), uniform(2, 3)),
    Case("maximum", lambda m, x, y: m.maximum(x, y), uniform(2, 3), uniform(2, 3)),
    Case("minimum", lambda m, x, y: m.minimum(x, y), uniform(2, 3), uniform(2, 3)),
    Case("maximum", lambda m, x, y: m.maximum(x, y), np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0]),
         label="ties", check=False),
    Case("pow", lambda m, x, y: m.pow(x, y), positive(2, 3), uniform(2, 3)),
    Case("pow", lambda m, x: x ** 3, uniform(2, 3), label="int_exponent"),
    Case("pow", lambda m, x: x ** 0.5, positive(2, 3), label="float_exponent"),
    Case("pow", lambda m, x: x ** 0, uniform(2, 3), label="zero_exponent"),
    Case("pow", lambda m, x: 2.5 ** x, uniform(2, 3), label="scalar_base"),
    Case("pow", lambda m, x, y: m.pow(x, y), np.array([0.0, 0.0, 2.0]), np.array([2.0, 0.0, 1.5]), label="zero_base",
         check=False),
    Case("clamp", lambda m, x: x.clamp(-0.5, 0.7), uniform(2, 3)),
    Case("clamp", lambda m, x: x.clamp(min=0.1), uniform(2, 3), label="min_only"),
    Case("clamp", lambda m, x, lo, hi: x.clamp(lo, hi), uniform(2, 3), uniform(2, 3, low=-1.5, high=-0.3),
         uniform(3, low=0.3, high=1.5), label="tensor_bounds"),
    Case("clamp", lambda m, x, lo: x.clamp(min=lo), uniform(2, 3), uniform(2, 3), label="tensor_min"),
    Case("clamp", lambda m, x, lo, hi: x.clamp(lo, hi), uniform(4), np.array([1.0, -1.0, 0.5, 2.0]),
         np.array([0.0, 1.0, -0.5, 3.0]), label="crossed_bounds", check=False),
    Case("where", lambda m, x, y: m.where(x > 0, x, y), uniform(2, 3), uniform(3)),

    Case("sum", lambda m, x: x.sum(), uniform(2, 3)),
    Case("sum", lambda m, x: x.sum(1), uniform(2, 3), label="dim"),
    Case("sum", lambda m, x: x.sum((0, 2), keepdim=True), uniform(2, 3, 2), label="dims_keepdim"),
    Case("sum", lambda m, x: x.sum(dtype=m.float32), uniform(2, 3), label="dtype", check=False),
    Case("prod", lambda m, x: x.prod(), uniform(2, 3)),
    Case("prod", lambda m, x: x.prod(1), uniform(2, 3), label="dim"),
    Case("prod", lambda m, x: x.prod(0, keepdim=True), uniform(2, 3), label="keepdim"),
    Case("prod", lambda m, x: x.prod(1), np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 2.0]]), label="zeros"),
    Case("prod", lambda m, x: x.prod(), np.array([[0.0, 2.0, 3.0], [1.5, 0.5, 2.0]]), label="one_zero"),
    Case("mean", lambda m, x: x.mean(), uniform(2, 3)),
    Case("mean", lambda m, x: x.mean((0, 1), keepdim=True), uniform(2, 3, 2), label="dims"),
    Case("amax", lambda m, x: x.amax(1), uniform(2, 3)),
    Case("amax", lambda m, x: x.amax((0, 1)), np.array([[1.0, 3.0], [3.0, 2.0]]), label="ties", check=False),
    Case("amin", lambda m, x: x.amin(0, keepdim=True), uniform(2, 3)),
    Case("max", lambda m, x: x.max(), uniform(2, 3)),
    Case("max", lambda m, x: x.max(), np.array([1.0, 3.0, 3.0]), label="ties", check=False),
    Case("min", lambda m, x: x.min(), uniform(2, 3)),
    Case("max.dim", lambda m, x: x.max(1)[0], uniform(2, 3)),
    Case("max.dim", lambda m, x: x.max(0, keepdim=True)[0], uniform(2, 3), label="keepdim"),
    Case("min.dim", lambda m, x: x.min(-1)[0], uniform(2, 3)),

    Case("view", lambda m, x: x.contiguous().view(3, 2) * 1, uniform(2, 3)),
    Case("_unsafe_view", lambda m, x: x.t().reshape(6) * 1, uniform(2, 3), label="reshape copy"),
    Case("as_strided", lambda m, x: x.contiguous().as_strided((2, 2), (1, 2), 1), uniform(2, 3)),
    Case("t", lambda m, x: x.t(), uniform(2, 3)),
    Case("transpose", lambda m, x: x.transpose(0, 2), uniform(2, 3, 2)),
    Case("permute", lambda m, x: x.permute(2, 0, 1), uniform(2, 3, 2)),
    Case("expand", lambda m, x: x.expand(2, 2, 3), uniform(1, 3)),
    Case("squeeze", lambda m, x: x.squeeze(), uniform(2, 1, 3)),
    Case("squeeze", lambda m, x: x.squeeze(1), uniform(2, 1, 3), label="dim"),
    Case("squeeze", lambda m, x: x.squeeze((1,)), uniform(2, 1, 3), label="dims"),
    Case("unsqueeze", lambda m, x: x.unsqueeze(1), uniform(2, 3)),
    Case("select", lambda m, x: x.select(1, -1), uniform(2, 3)),
    Case("slice", lambda m, x: aten(m, "slice")(x, 1, 0, 3, 2), uniform(2, 3)),
    Case("narrow", lambda m, x: x.narrow(1, 1, 2), uniform(2, 3)),
    Case("diagonal", lambda m, x: x.diagonal(1), uniform(3, 4)),
    Case("diagonal", lambda m, x: x.diagonal(-1, 0, 2), uniform(3, 2, 3), label="dims"),
    Case("unfold", lambda m, x: x.unfold(1, 2, 1), uniform(2, 4)),
    Case("unflatten", lambda m, x: x.unflatten(1, (3, 1)), uniform(2, 3)),
    Case("alias", lambda m, x: aten(m, "alias")(x), uniform(2, 3)),

    Case("index.Tensor", lambda m, x, i: x[i], uniform(4, 2), ints([0, 2, 0, 3])),
    Case("index.Tensor", lambda m, x: x[x > 0], uniform(2, 3), label="mask"),
    Case("index.Tensor", lambda m, x, i: x[:, i], uniform(2, 3), ints([2, 2]), label="second_dim"),
    Case("index_put_", lambda m, x, v, i: (x * 1).index_put_((i,), v), uniform(4, 2), uniform(2, 2), ints([3, 0])),
    Case("index_put_", lambda m, x, v, i: (x * 1).index_put_((i,), v, accumulate=True), uniform(4, 2), uniform(2),
         ints([1, 1]), label="accumulate"),

    Case("mm", lambda m, x, y: x.mm(y), uniform(2, 3), uniform(3, 2)),
    Case("bmm", lambda m, x, y: x.bmm(y), uniform(2, 2, 3), uniform(2, 3, 2)),
    Case("dot", lambda m, x, y: x.dot(y), uniform(3), uniform(3)),
    Case("mv", lambda m, x, y: x.mv(y), uniform(2, 3), uniform(3)),

    Case("cat", lambda m, x, y: m.cat([x, y], 1), uniform(2, 3), uniform(2, 1)),
    Case("cat", lambda m, x, y: m.cat([x, y]), uniform(2, 3), np.zeros(0), label="empty"),
    Case("stack", lambda m, x, y: m.stack([x, y], 1), uniform(2, 3), uniform(2, 3)),
    Case("clone", lambda m, x: x.clone(), uniform(2, 3)),
    Case("copy_", lambda m, x, y: (x * 1).copy_(y), uniform(2, 3), uniform(3)),
    Case("fill_", lambda m, x: (x * 1).fill_(2.0), uniform(2, 3)),
    Case("zero_", lambda m, x: (x * 1).zero_(), uniform(2, 3)),
    Case("_to_copy", lambda m, x: x.to(m.float32), uniform(2, 3), check=False),
    Case("tril", lambda m, x: x.tril(), uniform(3, 3)),
    Case("triu", lambda m, x: x.triu(1), uniform(3, 4)),

    Case("slice_scatter", lambda m, x, y: m.slice_scatter(x, y, 1, 0, 3, 2), uniform(2, 3), uniform(2, 2)),
    Case("select_scatter", lambda m, x, y: m.select_scatter(x, y, 0, 1), uniform(2, 3), uniform(3)),
    Case("diagonal_scatter", lambda m, x, y: m.diagonal_scatter(x, y, 1), uniform(3, 3), uniform(2)),
    # self's gradient is torch's, not the derivative (view_scatter.as_strided_scatter_self_backward): compared with
    # torch's; src's alone is checked numerically
    Case("as_strided_scatter", lambda m, x, y: m.as_strided_scatter(x.contiguous(), y, (2,), (2,), 1),
         uniform(2, 3), uniform(2), check=False),
    Case("as_strided_scatter", lambda m, y: m.as_strided_scatter(m.zeros(2, 3, dtype=y.dtype), y, (2,), (2,), 1),
         uniform(2), label="src"),
    Case("unfold_backward", lambda m, g: aten(m, "unfold_backward")(g, [2, 4], 1, 2, 1), uniform(2, 3, 2)),

    Case("real", lambda m, z: z.real * 1, cplx(2, 3)),
    Case("imag", lambda m, z: z.imag * 1, cplx(2, 3)),
    Case("normal.Tensor_float", lambda m, x: m.normal(x, 1.0) * 0, uniform(2, 3)),
    Case("normal.float_Tensor", lambda m, x: m.normal(1.0, x) * 0, positive(2, 3)),
    Case("normal.Tensor_Tensor", lambda m, x, y: m.normal(x, y) * 0, uniform(2, 3), positive(2, 3)),
    Case("uniform_", lambda m, x: (x * 1).uniform_() * 0, uniform(2, 3)),
    Case("normal_", lambda m, x: (x * 1).normal_() * 0, uniform(2, 3)),
    Case("exponential_", lambda m, x: (x * 1).exponential_() * 0, uniform(2, 3)),
    Case("random_.from", lambda m, x: (x * 1).random_(0, 3) * 0, uniform(2, 3)),
    Case("random_.from", lambda m, x: (x * 1).random_(3) * 0, uniform(2, 3), label="to"),
    Case("bernoulli", lambda m, x: m.bernoulli(x) * 0, uniform(2, 3, low=0.1, high=0.9)),
    Case("bernoulli_.float", lambda m, x: (x * 1).bernoulli_(0.5) * 0, uniform(2, 3)),
    Case("bernoulli_.Tensor", lambda m, x, p: (x * 1).bernoulli_(p) * 0, uniform(2, 3),
         uniform(2, 3, low=0.1, high=0.9)),
]

COMPLEX_CASES = [
    Case("conj_physical", lambda m, x: x.conj_physical(), cplx(2, 3)),
    Case("mul", lambda m, x, y: x * y, cplx(2, 3), cplx(2, 3)),
    Case("div", lambda m, x, y: x / y, cplx(2, 3), cplx(2, 3)),
    Case("abs", lambda m, x: x.abs(), cplx(2, 3)),
    Case("sgn", lambda m, x: x.sgn(), cplx(2, 3)),
    Case("exp", lambda m, x: x.exp(), cplx(2, 3)),
    Case("log", lambda m, x: x.log(), cplx(2, 3)),
    Case("sin", lambda m, x: x.sin(), cplx(2, 3)),
    Case("tanh", lambda m, x: x.tanh(), cplx(2, 3)),
    Case("sigmoid", lambda m, x: x.sigmoid(), cplx(2, 3)),
    Case("sqrt", lambda m, x: x.sqrt(), cplx(2, 3)),
    Case("reciprocal", lambda m, x: x.reciprocal(), cplx(2, 3)),
    Case("pow", lambda m, x: x ** 2, cplx(2, 3)),
    Case("square", lambda m, x: x.square(), cplx(2, 3)),
    Case("mm", lambda m, x, y: x.mm(y), cplx(2, 3), cplx(3, 2)),
    Case("dot", lambda m, x, y: x.dot(y), cplx(3), cplx(3)),
    Case("mv", lambda m, x, y: x.mv(y), cplx(2, 3), cplx(3)),
    Case("sum", lambda m, x: x.sum(0), cplx(2, 3)),
    Case("_to_copy", lambda m, x: x.to(m.complex128) * (1 + 2j), uniform(2, 3)),
]


def make_inputs(lib, case, dtype=None):
    """Non-contiguous tensors (every other element of a bigger buffer) with the case's values; floats require
    grad."""
    out = []
    for arr in case.inputs:
        arr = np.asarray(arr)
        if dtype is not None and arr.dtype.kind == "f":
            arr = arr.astype(dtype)
        big = np.zeros(arr.shape[:-1] + (arr.shape[-1] * 2,), arr.dtype) if arr.ndim else arr.copy()
        view = big[..., ::2] if arr.ndim else big
        view[...] = arr
        t = to_lib(lib, view) if arr.size else lib.tensor(arr)
        if arr.dtype.kind in "fc":
            t.requires_grad_()
        out.append(t)
    return out


def differentiable_outputs(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [o for o in outs if o.requires_grad]


def vjp(lib, case, dtype=None):
    """(output, grad_fn name, gradients of the inputs) for a fixed seed of the output's shape."""
    inputs = make_inputs(lib, case, dtype)
    out = case.fn(lib, *inputs)
    outs = differentiable_outputs(out)
    rng = np.random.default_rng(7)
    seeds = []
    for o in outs:
        vals = rng.uniform(-1, 1, size=tuple(o.shape))
        if o.dtype.is_complex:
            vals = vals + 1j * rng.uniform(-1, 1, size=tuple(o.shape))
        seeds.append(lib.tensor(vals, dtype=o.dtype))
    diff = [t for t in inputs if t.requires_grad]
    grads = lib.autograd.grad(outs, diff, seeds, allow_unused=True)
    if lib is torch:  # torch may answer with a ZeroTensor, which has no NumPy view
        grads = [g if g is None else torch.from_numpy(g.numpy(force=True).copy()) for g in grads]
    return out, type(outs[0].grad_fn).__name__, [g if g is not None else "none" for g in grads]


def assert_gradients_match_torch(case):
    """Outputs, the node's name and the gradients equal torch's (every ops area's gradient tests use this)."""
    assert_same(vjp(lantern, case), vjp(torch, case), atol=1e-6, rtol=1e-6, strides=False)


def assert_gradcheck_and_gradgradcheck(case, fn=None):
    """First and second derivatives match finite differences, in float64, on non-contiguous inputs."""
    inputs = make_inputs(lantern, case, np.float64)
    fn = fn or (lambda *xs: case.fn(lantern, *xs))
    assert lantern.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5)
    assert lantern.autograd.gradgradcheck(fn, inputs, eps=1e-6, atol=1e-4)


def test_as_strided_scatter_against_torch():
    """Values and both gradients equal torch's. torch 2.13 gives self the incoming gradient at the positions src
    overwrote (the reverse of the derivative), and so does lantern."""
    x, y, g = uniform(2, 3), uniform(2), uniform(2, 3)

    def run(m):
        xs, ys = m.tensor(x, requires_grad=True), m.tensor(y, requires_grad=True)
        out = m.as_strided_scatter(xs, ys, (2,), (2,), 1)
        out.backward(m.tensor(g))
        return out, ys.grad, xs.grad
    (t_out, t_src, t_self), (l_out, l_src, l_self) = run(torch), run(lantern)
    assert_same((l_out, l_src, l_self), (t_out, t_src, t_self))
    overwritten = np.zeros(6)
    overwritten[[1, 3]] = 1
    np.testing.assert_array_equal(as_numpy(l_self), g * overwritten.reshape(2, 3))


def test_as_strided_scatter_refuses_a_non_contiguous_self_that_requires_grad():
    """torch's backward formula reads self as contiguous, so its kernel refuses other layouts under autograd."""
    for m in (torch, lantern):
        x = m.zeros(3, 4, dtype=m.float64, requires_grad=True).t()
        with pytest.raises(RuntimeError, match="only supported for contiguous inputs"):
            m.as_strided_scatter(x, m.ones(2, dtype=m.float64), (2,), (2,), 1)


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(reason=c.xfail)) if c.xfail else c
                                  for c in CASES + COMPLEX_CASES if c.compare], ids=lambda c: c.id)
def test_gradients_match_torch(case):
    assert_gradients_match_torch(case)


@pytest.mark.parametrize("case", [c for c in CASES + COMPLEX_CASES if c.check], ids=lambda c: c.id)
def test_gradcheck_and_gradgradcheck_float64_noncontiguous(case):
    assert_gradcheck_and_gradgradcheck(case)


def test_every_derivative_is_exercised():
    """Every declared derivative is differentiated by a passing gradgradcheck: here, or in its area's own test file
    (tests/second_order.py records the backward nodes each gradgradcheck runs; conftest runs this test last)."""
    declared = {op.name for op in REGISTRY.values()
                if op.functional is op and op.derivative is not None and not op.derivative.nondifferentiable}
    assert declared - second_order.exercised_in_all_files() - FIRST_ORDER_ONLY == set()


# derivatives whose formula calls an op without a derivative (in torch too), so no gradgradcheck can pass; their
# first order is checked against torch's below (numerical gradcheck cannot: a sample's pathwise derivative is
# not the reparameterised one the formula gives)
FIRST_ORDER_ONLY = {"_standard_gamma"}


def test_standard_gamma_derivative_is_torchs_on_the_same_sample():
    alpha = lantern.tensor([0.3, 1.0, 2.5, 7.0], dtype=lantern.float64, requires_grad=True)
    sample = lantern._standard_gamma(alpha)
    (got,) = lantern.autograd.grad(sample.sum(), alpha)
    expected = torch._standard_gamma_grad(torch.tensor(alpha.tolist(), dtype=torch.float64),
                                          torch.tensor(sample.tolist(), dtype=torch.float64))
    assert type(sample.grad_fn).__name__ == "StandardGammaBackward0"
    # torch's kernel approximates the derivative (series and asymptotic fits) to about 1e-4 relative
    np.testing.assert_allclose(np.array(got.tolist()), expected.numpy(), rtol=1e-3)


def _has_tensor_inputs(op):
    return bool(op.tensor_positions or op.list_positions)


NO_DERIVATIVE = {"floor_divide", "heaviside", "scatter.reduce", "scatter.value_reduce", "bincount",  # nor has torch
                 "_sample_dirichlet", "_standard_gamma_grad", "binomial", "geqrf", "linalg_ldl_factor_ex",
                 "linalg_ldl_solve"}


def test_every_op_with_tensor_inputs_declares_its_derivative():
    # lantern's own ops: those a user defines through lantern.library ("mylib::op", as the doctests do) take
    # their gradient from register_autograd, and tests' probe ops ("_test_...") none
    missing = {op.name for op in REGISTRY.values() if op.functional is op and op.derivative is None
               and _has_tensor_inputs(op) and "::" not in op.name and not op.name.startswith("_test_")}
    assert missing == NO_DERIVATIVE


def test_op_without_derivative_raises_at_backward():
    def run(lib):
        x = lib.tensor([3.5, -2.5], requires_grad=True)
        y = x.floor_divide(2)
        facts = y.requires_grad, type(y.grad_fn).__name__
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        return facts, str(info.value)
    (t_facts, t_msg), (l_facts, l_msg) = run(torch), run(lantern)
    assert t_facts == l_facts == (True, "NotImplemented")
    assert l_msg.startswith(t_msg) and "the derivative for 'floor_divide' is not implemented" in l_msg


NONDIFF = [lambda m, x: x > 0, lambda m, x: x.eq(x), lambda m, x: x.isnan(), lambda m, x: x.argmax(),
           lambda m, x: (x > 0).logical_not(), lambda m, x: m.logical_and(x > 0, x < 1), lambda m, x: x.signbit(),
           lambda m, x: (x > 0).any(), lambda m, x: x.view(m.int64), lambda m, x: x.isfinite()]


@pytest.mark.parametrize("k", range(len(NONDIFF)))
def test_nondifferentiable_outputs_do_not_require_grad(k):
    for lib in (torch, lantern):
        y = NONDIFF[k](lib, lib.tensor([0.5, -1.5], dtype=lib.float64, requires_grad=True))
        assert not y.requires_grad and y.grad_fn is None
