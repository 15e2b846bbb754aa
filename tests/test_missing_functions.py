"""The torch functions issue 16 found missing (complex numbers, number theory, differences, statistics, index
arithmetic, histograms, splits and the *_copy functions, Tensor.__rdiv__), each compared with torch: values,
dtypes, shapes, strides on non-contiguous inputs, float64 gradients and error classes.
"""
import warnings

import numpy as np
import pytest
import torch

import lantern
from deliberate_differences import DIFFERENCES
from oracle import check, noncontig, raises_like, table_tests, to_lib, assert_same

RNG = np.random.default_rng(16)


def f64(*shape):
    return RNG.uniform(-2, 2, size=shape)


def f32(*shape):
    return f64(*shape).astype(np.float32)


def c64(*shape):
    return (f64(*shape) + 1j * f64(*shape)).astype(np.complex64)


def i64(*shape, low=-9, high=10):
    return RNG.integers(low, high, size=shape)


def _quiet(fn):
    """fn with the beta warning of index_reduce silenced (both libraries give it)."""
    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    return run


FORWARD = {
    # complex numbers
    "view_as_real": (lambda m, z: m.view_as_real(z), noncontig(c64(3, 4))),
    "view_as_real 0-d": (lambda m, z: m.view_as_real(z), np.array(1 + 2j, dtype=np.complex64)),
    "view_as_complex": (lambda m, x: m.view_as_complex(x.permute(1, 0, 2)), f32(3, 4, 2)),
    "complex": (lambda m, a, b: m.complex(a, b), noncontig(f32(3, 1)), f32(4)),
    "complex out": (lambda m, a, b: m.complex(a, b, out=m.empty(0, dtype=m.complex128)), f64(2), f64(2)),
    "polar": (lambda m, a, b: m.polar(a, b), noncontig(f64(2, 3)), f64(2, 3)),
    "angle real": (lambda m, x: m.angle(x), np.array([1.0, -2.0, np.nan, 0.0, -0.0, -np.inf], dtype=np.float32)),
    "angle int": (lambda m, x: m.angle(x), i64(5)),
    "angle complex": (lambda m, z: z.angle(), noncontig(c64(2, 3))),
    "angle out": (lambda m, x: m.angle(x, out=m.empty(0)), f32(3)),
    "isreal": (lambda m, z: (m.isreal(z), z.real.isreal()), np.array([1 + 0j, 1j, 2], dtype=np.complex64)),
    "conj and friends": (lambda m, z, x: (m.resolve_conj(z), m.resolve_neg(z), m.is_conj(z), m.is_neg(z),
                                          z.is_neg(), m.conj(x) is x), c64(3), f32(2)),
    "conj_physical_": (lambda m, z: z.clone().conj_physical_(), c64(3)),
    # number theory and floating point
    "gcd": (lambda m, a, b: m.gcd(a, b), noncontig(i64(3, 4)), i64(4)),
    "lcm int8": (lambda m, a, b: m.lcm(a.to(m.int8), b.to(m.int8)), i64(6, low=-5, high=6), i64(6, low=-5, high=6)),
    "gcd_ lcm_": (lambda m, a, b: (a.clone().gcd_(b), a.clone().lcm_(b)), i64(5), i64(5)),
    "nextafter": (lambda m, a, b: (m.nextafter(a, b), a.clone().nextafter_(b)), noncontig(f32(2, 3)), f32(2, 3)),
    "nextafter float64": (lambda m, a, b: m.nextafter(a, b), f64(4), np.array([np.inf, -np.inf, 0.0, np.nan])),
    "ldexp": (lambda m, a, b: (m.ldexp(a, b), a.ldexp(b)), noncontig(f32(2, 3)), i64(3, low=-4, high=5)),
    "ldexp ints": (lambda m, a, b: m.ldexp(a, b), i64(4), i64(4, low=0, high=5)),
    "ldexp_": (lambda m, a, b: a.clone().ldexp_(b), f64(4), i64(4, low=0, high=5)),
    "frexp": (lambda m, x: m.frexp(x), np.array([8.0, 0.5, 0.0, -3.0, np.inf, np.nan])),
    "frexp method noncontig": (lambda m, x: x.frexp(), noncontig(f32(2, 3))),
    "frexp out": (lambda m, x: m.frexp(x, out=(m.empty(0), m.empty(0, dtype=m.int32))), f32(3)),
    "isposinf isneginf": (lambda m, x: (m.isposinf(x), m.isneginf(x), x.isposinf(), m.isneginf(x.to(m.int64))),
                          np.array([np.inf, -np.inf, 1.0, np.nan])),
    "isin": (lambda m, a, b: (m.isin(a, b), m.isin(a, b, invert=True)), noncontig(i64(3, 4)), i64(5)),
    "isin scalars": (lambda m, a: (m.isin(a, 2), m.isin(2, a)), i64(5, low=0, high=4)),
    "isin mixed dtypes and nan": (lambda m, a, b: m.isin(a, b.to(m.int8)), np.array([1.0, np.nan, 2.5]),
                                  np.array([1, 3])),
    "isin empty": (lambda m, a, b: m.isin(a, b), f32(3), np.zeros(0, np.float32)),
    # products and norms
    "addr": (lambda m, x, a, b: m.addr(x, a, b, beta=2, alpha=0.5), noncontig(f32(3, 4)), f32(3), f32(4)),
    "addr ints": (lambda m, x, a, b: x.addr(a, b, beta=2, alpha=3), i64(2, 3), i64(2), i64(3)),
    "addr bool": (lambda m, x, a, b: m.addr(x > 0, a > 0, b > 0), f32(2, 3), f32(2), f32(3)),
    "addr broadcast beta 0": (lambda m, x, a, b: m.addr(x * float("nan"), a, b, beta=0), f32(1), f32(2), f32(3)),
    "addr_": (lambda m, x, a, b: x.clone().addr_(a, b, alpha=2), f64(2, 3), f64(2), f64(3)),
    "inner": (lambda m, a, b: (m.inner(a, b), a.inner(b)), noncontig(f32(2, 3)), f32(4, 3)),
    "inner 0-d": (lambda m, a, b: m.inner(a, b), f32(2, 3), np.array(2.0, dtype=np.float32)),
    "dist": (lambda m, a, b: (m.dist(a, b), a.dist(b, 3), m.dist(a, b, 0), m.dist(a, b, float("inf"))),
             noncontig(f32(3, 4)), f32(4)),
    "renorm": (lambda m, x: (m.renorm(x, 2, 0, 1.0), x.renorm(1, 1, 0.5)), noncontig(f32(3, 4))),
    "renorm_": (lambda m, x: x.clone().renorm_(3, -1, 1.0), f64(2, 3, 4)),
    "diagflat": (lambda m, x: (m.diagflat(x), x.diagflat(-1)), noncontig(f32(2, 2))),
    # differences, integrals, statistics
    "diff": (lambda m, x: (m.diff(x), x.diff(n=2, dim=0), m.diff(x, n=5)), noncontig(f32(4, 3))),
    "diff prepend append": (lambda m, x, p, a: m.diff(x, 1, 0, p, a), i64(3, 2), i64(1, 2), f32(2, 2)),
    "diff bool": (lambda m, x: m.diff(x > 0), f32(6)),
    "diff out": (lambda m, x: m.diff(x, out=m.empty(0)), f32(5)),
    "gradient": (lambda m, x: m.gradient(x), noncontig(f32(4, 5))),
    "gradient spacing": (lambda m, x: m.gradient(x, spacing=2.0, dim=1, edge_order=2), f64(3, 4)),
    "gradient ints": (lambda m, x: m.gradient(x, spacing=[2, 3]), i64(3, 4)),
    "gradient coordinates": (lambda m, x, c: m.gradient(x, spacing=[c], dim=0, edge_order=2), f64(4, 2),
                             np.array([0.0, 1.0, 3.0, 4.5])),
    "trapezoid": (lambda m, y, x: (m.trapezoid(y), m.trapezoid(y, x), m.trapezoid(y, dx=0.5, dim=0)),
                  noncontig(f32(3, 4)), f32(4)),
    "trapezoid ints": (lambda m, y: (m.trapezoid(y), m.trapz(y, dx=2)), i64(5)),
    "trapz": (lambda m, y, x: m.trapz(y, x, dim=0), f64(3, 2), f64(3, 2)),
    "trapezoid empty": (lambda m, y: m.trapezoid(y), np.zeros((2, 0), np.float32)),
    "cumulative_trapezoid": (lambda m, y, x: (m.cumulative_trapezoid(y), m.cumulative_trapezoid(y, x, dim=0)),
                             noncontig(f32(3, 4)), f32(3)),
    "cov": (lambda m, x: (m.cov(x), x.cov(correction=0), m.cov(x[0])), noncontig(f32(3, 5))),
    "cov weights": (lambda m, x, f, a: m.cov(x, fweights=f, aweights=a), f64(2, 4), i64(4, low=0, high=4),
                    RNG.uniform(0.1, 1, 4)),
    "cov ints": (lambda m, x: m.cov(x), i64(2, 5)),
    "cov complex": (lambda m, z: m.cov(z), c64(2, 4)),
    "cov of one variable in 2-d": (lambda m, x: (m.cov(x, correction=0), m.corrcoef(x)), f32(1, 4)),
    "diff n=0 leaves out prepend": (lambda m, x, p: m.diff(x, 0, 0, p), noncontig(f32(3, 2)), f32(1, 2)),
    "gradient spacing None": (lambda m, x: m.gradient(x, spacing=None), f32(5)),
    "histogram of nothing": (lambda m, x: (m.histogram(x, 1), m.histogram(x, 2, density=True),
                                           m.histogramdd(x.reshape(0, 2), [2, 2])), np.zeros((5, 0, 4), np.float32)),
    "unravel_index into a 0-d shape": (lambda m, i: m.unravel_index(i, ()), np.array(0)),
    "put with no indices": (lambda m, x, i, s: m.put(x > 0, i, s > 0), np.array(1.0), np.zeros(0, np.int64),
                            np.zeros(0)),
    "addr bool with number scales": (lambda m, x, a, b: m.addr(x > 0, a > 0, b > 0, beta=3, alpha=2), f32(5, 4),
                                     f32(5), f32(4)),
    "corrcoef": (lambda m, x: (m.corrcoef(x), x.corrcoef()), noncontig(f32(3, 5))),
    "corrcoef complex": (lambda m, z: m.corrcoef(z), c64(2, 4)),
    # index arithmetic and counting
    "tril_indices triu_indices": (lambda m: (m.tril_indices(3, 4, 1), m.triu_indices(4, 3, -1, dtype=m.int32),
                                             m.tril_indices(0, 3), m.triu_indices(3, 3, 5)),),
    "unravel_index": (lambda m, i: m.unravel_index(i, (3, 4)), noncontig(i64(2, 3, low=-12, high=12))),
    "unravel_index 0-d and int shape": (lambda m, i: (m.unravel_index(i, (2, 4)), m.unravel_index(i.to(m.int32), 8)),
                                        np.array(5)),
    "combinations": (lambda m, x: (m.combinations(x), m.combinations(x, 3), m.combinations(x, 2, True),
                                   m.combinations(x, 0), m.combinations(x, 5)), f32(4)),
    "put": (lambda m, x, i, s: (m.put(x, i, s), x.put(i, s, accumulate=True)), noncontig(f32(2, 3)),
            np.array([0, -1, 0]), f32(3)),
    "put_": (lambda m, x, i, s: x.clone().put_(i, s), f64(2, 3), np.array([[4], [1]]), f64(2, 1)),
    "index_reduce": (_quiet(lambda m, x, s: tuple(m.index_reduce(x, 0, m.tensor([0, 0, 2]), s, r)
                                                  for r in ("prod", "mean", "amax", "amin"))),
                     noncontig(f32(3, 2)), f32(3, 2)),
    "index_reduce exclude self": (_quiet(lambda m, x, s: x.index_reduce(1, m.tensor([1, 1]), s, "mean",
                                                                        include_self=False)), f32(2, 3), f32(2, 2)),
    "index_reduce ints": (_quiet(lambda m, x, s: x.index_reduce(0, m.tensor([0, 0, 2]), s, "mean")), i64(3, 2),
                          i64(3, 2)),
    "index_reduce_": (_quiet(lambda m, x, s: x.clone().index_reduce_(0, m.tensor([1, 0]), s, "amax")), f64(2, 3),
                      f64(2, 3)),
    "scalar_tensor": (lambda m: (m.scalar_tensor(3), m.scalar_tensor(True), m.scalar_tensor(2.5, dtype=m.float64),
                                 m.scalar_tensor(3, dtype=m.int64)),),
    "histogram": (lambda m, x: (m.histogram(x, 5), x.histogram(4, range=(-1.0, 1.0))), noncontig(f32(3, 10))),
    "histogram edges weight density": (lambda m, x, e, w: m.histogram(x, e, weight=w, density=True), f64(20),
                                       np.array([-2.0, -0.5, 0.0, 1.0, 2.0]), RNG.uniform(0, 1, 20)),
    "histogram constant": (lambda m, x: m.histogram(x * 0 + 1, 3), f32(4)),
    "histogram out": (lambda m, x: m.histogram(x, 3, out=(m.empty(0), m.empty(0))), f32(6)),
    "histogramdd": (lambda m, x, w: m.histogramdd(x, [3, 4], weight=w), f32(20, 2),
                    RNG.uniform(0, 1, 20).astype(np.float32)),
    "histogramdd range density": (lambda m, x: m.histogramdd(x, 3, range=[-1.0, 1.0, -2.0, 2.0, 0.0, 1.0],
                                                             density=True), f64(30, 3)),
    # splits and copies
    "hsplit vsplit dsplit": (lambda m, x: (m.hsplit(x, 3), m.vsplit(x, [1]), m.dsplit(x, [1, 3]), x.hsplit([1])),
                             noncontig(f32(2, 3, 4))),
    "hsplit 1-d": (lambda m, x: m.hsplit(x, 2), f32(6)),
    "split_with_sizes": (lambda m, x: (m.split_with_sizes(x, [1, 2], 1), x.split_with_sizes([2, 2], dim=-1)),
                         noncontig(f32(2, 3, 4))),
    "unsafe_split unsafe_chunk": (lambda m, x: (m.unsafe_split(x, 2), x.unsafe_chunk(3, 1), x.unsafe_split(1, 1),
                                                m.unsafe_split_with_sizes(x, [1, 2], 1)), f32(3, 3)),
    "permute_copy t_copy transpose_copy": (lambda m, x: (m.permute_copy(x, (2, 0, 1)), m.t_copy(x[0]),
                                                         m.transpose_copy(x, 0, 2)), noncontig(f32(2, 3, 4))),
    "expand_copy view_copy": (lambda m, x: (m.expand_copy(x[:, :1], (3, 4)), m.view_copy(x.contiguous(), [-1]),
                                            m.view_copy(x.contiguous(), m.int32)), f32(3, 4)),
    "select slice narrow diagonal unfold copies": (
        lambda m, x: (m.select_copy(x, 1, 0), m.slice_copy(x, 1, 1, 3), m.slice_copy(x), m.narrow_copy(x, 2, 1, 2),
                      m.diagonal_copy(x, 0, 1, 2), m.unfold_copy(x, 2, 2, 1)), noncontig(f32(2, 3, 4))),
    "squeeze unsqueeze alias detach as_strided copies": (
        lambda m, x: (m.squeeze_copy(x), m.squeeze_copy(x, 0), m.squeeze_copy(x, (0, 2)), m.unsqueeze_copy(x, 1),
                      m.alias_copy(x), m.detach_copy(x), m.as_strided_copy(x, (2, 2), (1, 1))), f32(1, 3, 1)),
    "split unbind copies": (lambda m, x: (m.split_copy(x, 1), m.split_with_sizes_copy(x, [1, 2], 1),
                                          m.unbind_copy(x, 1)), noncontig(f32(2, 3))),
    "view_as_real_copy view_as_complex_copy": (lambda m, z: (m.view_as_real_copy(z),
                                                             m.view_as_complex_copy(m.view_as_real(z))), c64(3)),
    "copy out": (lambda m, x: m.permute_copy(x, (1, 0), out=m.empty(0)), f32(2, 3)),
    "split_copy out": (lambda m, x: m.split_copy(x, 1, out=[m.empty(1, 3), m.empty(1, 3)]), f32(2, 3)),
    # Tensor.__rdiv__ and friends
    "__rdiv__ __div__ __idiv__": (lambda m, x: (x.__rdiv__(2), x.__div__(2), x.clone().__idiv__(4)), f32(3)),
}

ERRORS = {
    "view_as_real of a real tensor": (lambda m, x: m.view_as_real(x), f32(3)),
    "view_as_complex without a last dim of 2": (lambda m, x: m.view_as_complex(x), f32(3, 3)),
    "view_as_complex stride": (lambda m, x: m.view_as_complex(x.t()), f32(2, 3)),
    "view_as_complex int": (lambda m, x: m.view_as_complex(x), i64(3, 2)),
    "complex of ints": (lambda m, a: m.complex(a, a), i64(2)),
    "complex mixed dtypes": (lambda m, a, b: m.complex(a, b), f32(2), f64(2)),
    "gcd float": (lambda m, a: m.gcd(a, a), f32(2)),
    "gcd bool": (lambda m, a: m.lcm(a > 0, a > 0), f32(2)),
    "gcd number": (lambda m, a: m.gcd(a, 2), i64(2)),
    "nextafter int": (lambda m, a: m.nextafter(a, a), i64(2)),
    "frexp int": (lambda m, a: m.frexp(a), i64(2)),
    "isneginf complex": (lambda m, z: m.isneginf(z), c64(2)),
    "isin complex": (lambda m, z: m.isin(z, z), c64(2)),
    "isin numbers": (lambda m: m.isin(2, 3),),
    "addr 2-d vec": (lambda m, x: m.addr(x, x[0], x), f32(2, 3)),
    "addr float beta on ints": (lambda m, x, a: m.addr(x, a, a, beta=2.5), i64(2, 2), i64(2)),
    "inner last dims": (lambda m, a, b: m.inner(a, b), f32(2, 3), f32(2, 4)),
    "renorm p": (lambda m, x: m.renorm(x, -1, 0, 1), f32(2, 2)),
    "renorm maxnorm": (lambda m, x: m.renorm(x, 2, 0, -1), f32(2, 2)),
    "renorm 1-d": (lambda m, x: m.renorm(x, 2, 0, 1), f32(3)),
    "renorm int": (lambda m, x: m.renorm(x, 2, 0, 1), i64(2, 2)),
    "diff 0-d": (lambda m, x: m.diff(x), np.array(1.0)),
    "diff negative n": (lambda m, x: m.diff(x, n=-1), f32(3)),
    "diff prepend dims": (lambda m, x, p: m.diff(x, prepend=p), f32(2, 3), f32(3)),
    "gradient too short": (lambda m, x: m.gradient(x, edge_order=2), f32(2, 3)),
    "gradient repeated dim": (lambda m, x: m.gradient(x, spacing=0.1, dim=(1, 1)), f32(3, 3)),
    "narrow_copy negative dim": (lambda m, x: m.narrow_copy(x, -4, 0, 0), f32(4, 2, 3)),
    "gradient spacing length": (lambda m, x: m.gradient(x, spacing=[1.0, 2.0, 3.0]), f32(3, 3)),
    "cov 3-d": (lambda m, x: m.cov(x), f32(2, 2, 2)),
    "cov float fweights": (lambda m, x: m.cov(x, fweights=x[0]), f32(2, 3)),
    "tril_indices float": (lambda m: m.tril_indices(3, 3, dtype=m.float32),),
    "unravel_index float": (lambda m, i: m.unravel_index(i, (2, 3)), f32(2)),
    "unravel_index negative shape": (lambda m, i: m.unravel_index(i, (2, -3)), i64(2)),
    "combinations 2-d": (lambda m, x: m.combinations(x), f32(2, 2)),
    "put out of range": (lambda m, x: x.put(m.tensor([6]), m.tensor([1.0])), f32(2, 3)),
    "put dtype": (lambda m, x: x.put(m.tensor([0]), m.tensor([1])), f32(2, 3)),
    "put float index": (lambda m, x: x.put(m.tensor([0.0]), m.tensor([1.0])), f32(2, 3)),
    "put counts": (lambda m, x: x.put(m.tensor([0, 1]), m.tensor([1.0])), f32(2, 3)),
    "index_reduce sum": (_quiet(lambda m, x: x.index_reduce(0, m.tensor([0]), x[:1], "sum")), f32(2, 3)),
    "scalar_tensor complex in float": (lambda m: m.scalar_tensor(1 + 2j),),
    "histogram int": (lambda m, x: m.histogram(x, 3), i64(4)),
    "histogramdd int": (lambda m, x: m.histogramdd(x, 3), i64(4, 2)),
    "hsplit indivisible": (lambda m, x: m.hsplit(x, 2), f32(2, 3)),
    "hsplit 0-d": (lambda m, x: m.hsplit(x, 2), np.array(1.0)),
    "vsplit 1-d": (lambda m, x: m.vsplit(x, 2), f32(4)),
    "dsplit 2-d": (lambda m, x: m.dsplit(x, 2), f32(2, 2)),
    "split_with_sizes sum": (lambda m, x: m.split_with_sizes(x, [1, 1], 1), f32(2, 3)),
    "addr bool beta on floats": (lambda m, x, a: m.addr(x, a, a, beta=True), f32(2, 2), f32(2)),
    "histogramdd bins per dim": (lambda m, x: m.histogramdd(x, [1, 1, 1]), f32(5, 6)),
    "narrow_copy dim": (lambda m, x: m.narrow_copy(x, 3, 0, 0), f32(4, 2, 3)),
    "hsplit of a string": (lambda m, x: m.hsplit(x, "abc"), f32(2, 2, 2)),
}

test_forward_matches_torch, test_error_matches_torch = table_tests(FORWARD, ERRORS)


# ---- gradients: float64, non-contiguous, compared with torch ------------------------------------------------------

def _flat(outputs):
    if isinstance(outputs, (tuple, list)):
        return [t for out in outputs for t in _flat(out)]
    return [outputs]


def _loss(lib, outputs):
    """A fixed weighted sum of every floating output (complex ones through their real view)."""
    total = 0
    for out in _flat(outputs):
        if not out.dtype.is_floating_point and not out.dtype.is_complex:
            continue
        real = lib.view_as_real(out) if out.dtype.is_complex else out
        weights = lib.tensor(np.linspace(-1, 1.5, real.numel()).reshape(tuple(real.shape)), dtype=real.dtype)
        total = total + (real * weights).sum()
    return total


def grads_match(fn, *arrays, atol=1e-6):
    """The gradient of a fixed weighted sum of fn's outputs with respect to every floating input equals torch's."""
    def run(lib):
        inputs = [to_lib(lib, a) for a in arrays]
        leaves = [x.requires_grad_() for x in inputs if x.dtype.is_floating_point or x.dtype.is_complex]
        _loss(lib, fn(lib, *inputs)).backward()
        return [x.grad for x in leaves]
    assert_same(run(lantern), run(torch), atol=atol, rtol=1e-6, strides=False)


GRADIENTS = {
    "view_as_real": (lambda m, z: m.view_as_real(z) * 2, noncontig(c64(2, 3).astype(np.complex128))),
    "view_as_complex": (lambda m, x: m.view_as_complex(x) * (1 + 2j), f64(3, 2)),
    "complex polar": (lambda m, a, b: (m.complex(a, b), m.polar(a, b)), noncontig(RNG.uniform(0.1, 2, (2, 3))),
                      f64(3)),  # polar's abs is non-negative (torch differentiates through result.sgn())
    "angle": (lambda m, x, z: (m.angle(x), m.angle(z)), f64(4), noncontig(c64(3).astype(np.complex128))),
    "frexp": (lambda m, x: m.frexp(x).mantissa, noncontig(f64(2, 3) * 10)),
    "ldexp": (lambda m, x, e: m.ldexp(x, e), f64(4), i64(4, low=0, high=4)),
    "nextafter": (lambda m, a, b: m.nextafter(a, b), f64(3), f64(3)),
    "addr": (lambda m, x, a, b: m.addr(x, a, b, beta=0.5, alpha=2), noncontig(f64(3, 2)), f64(3), f64(2)),
    "inner dist": (lambda m, a, b: (m.inner(a, b), m.dist(a, b), m.dist(a, b, 1)), noncontig(f64(2, 3)), f64(2, 3)),
    "dist at zero": (lambda m, a: m.dist(a, a.detach()), f64(3)),
    "renorm": (lambda m, x: m.renorm(x, 2, 1, 0.7), noncontig(f64(3, 4))),
    "diagflat": (lambda m, x: m.diagflat(x, 1), noncontig(f64(2, 2))),
    "diff gradient": (lambda m, x: (m.diff(x, 2), m.gradient(x, spacing=0.5, edge_order=2)), noncontig(f64(4, 5))),
    "gradient coordinates": (lambda m, x, c: m.gradient(x, spacing=[c], dim=0), f64(4, 2),
                             np.array([0.0, 1.0, 3.0, 4.5])),
    "trapezoid": (lambda m, y, x: (m.trapezoid(y, x), m.trapezoid(y, dx=0.3, dim=0), m.cumulative_trapezoid(y, x)),
                  noncontig(f64(3, 4)), f64(4)),
    "cov corrcoef": (lambda m, x, a: (m.cov(x, aweights=a), m.corrcoef(x)), noncontig(f64(3, 5)),
                     RNG.uniform(0.2, 1, 5)),
    "combinations put": (lambda m, x, s: (m.combinations(x), m.put(x, m.tensor([0, 2]), s, accumulate=True)),
                         f64(4), f64(2)),
    "index_reduce": (_quiet(lambda m, x, s: tuple(x.index_reduce(0, m.tensor([0, 0, 2]), s, r)
                                                  for r in ("prod", "mean", "amax", "amin"))), f64(3, 2), f64(3, 2)),
    "split copies": (lambda m, x: (m.permute_copy(x, (1, 0)), m.split_copy(x, 1), m.hsplit(x, [1])),
                     noncontig(f64(2, 3))),
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradients_match_torch(name):
    fn, *arrays = GRADIENTS[name]
    grads_match(fn, *arrays)


@pytest.mark.parametrize("fn, make", [
    (lambda x: lantern.view_as_real(x), lambda: lantern.randn(3, dtype=lantern.complex128)),
    (lambda x: lantern.view_as_complex(x), lambda: lantern.randn(3, 2, dtype=lantern.float64)),
    (lambda x: lantern.angle(x), lambda: lantern.randn(3, dtype=lantern.complex128)),
    (lambda x: lantern.frexp(x).mantissa, lambda: lantern.tensor([0.3, 1.7, -5.5], dtype=lantern.float64)),
    (lambda x: lantern.nextafter(x, x.detach() + 1), lambda: lantern.randn(3, dtype=lantern.float64)),
], ids=["view_as_real", "view_as_complex", "angle", "frexp", "nextafter"])
def test_new_derivatives_second_order(fn, make):
    """The derivatives these ops declare (the others are composites), to second order."""
    x = make().requires_grad_()
    assert lantern.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-5)
    assert lantern.autograd.gradgradcheck(fn, (x,), eps=1e-6, atol=1e-4)


def test_conj_function():
    """torch.conj of a complex tensor: a conjugate view, sharing the input's memory and strides."""
    check(lambda m, z: (m.conj(z), m.conj(z).is_conj()), noncontig(c64(2, 3)))


def test_view_as_real_is_a_view():
    def run(m):
        z = m.zeros(2, dtype=m.complex64)
        r = m.view_as_real(z)
        r[0, 1] = 3
        return z, r._base is z
    check(lambda m: run(m))


def test_ldexp_gradient_for_negative_exponents():
    """torch 2.13 differentiates ldexp with an integer power of 2, which is 0 for negative integer exponents;
    lantern's gradient is 2**other (the derivative, checked by gradcheck)."""
    assert DIFFERENCES["ldexp gradient for negative integer exponents"]

    def grad(m):
        x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        m.ldexp(x, m.tensor([-2, 1])).sum().backward()
        return x.grad.tolist()
    assert grad(torch) == [0.0, 2.0] and grad(lantern) == [0.25, 2.0]
    assert lantern.autograd.gradcheck(lambda x: lantern.ldexp(x, lantern.tensor([-2, 1])),
                                      (lantern.tensor([1.0, 2.0], dtype=lantern.float64, requires_grad=True),))


# ---- every function of the issue, and every torch *_copy function, exists -----------------------------------

ISSUE_FUNCTIONS = ("addr angle combinations complex polar conj resolve_conj resolve_neg view_as_real view_as_complex "
                   "corrcoef cov diff dist diagflat gradient histogram histogramdd isin isneginf isposinf isreal lcm "
                   "gcd ldexp frexp nextafter renorm trapezoid trapz cumulative_trapezoid tril_indices triu_indices "
                   "unravel_index dsplit hsplit vsplit inner index_reduce put scalar_tensor split_with_sizes "
                   "unsafe_chunk unsafe_split").split()
PUBLIC_COPIES = sorted(n for n in dir(torch) if n.endswith("_copy") and not n.startswith("_"))


@pytest.mark.parametrize("name", ISSUE_FUNCTIONS + PUBLIC_COPIES)
def test_function_and_its_methods_exist(name):
    """The function, and the Tensor method and in-place method wherever torch has them."""
    assert hasattr(lantern, name)
    for method in (name, name + "_"):
        assert hasattr(lantern.Tensor, method) == hasattr(torch.Tensor, method), method


def test_view_as_complex_of_half_is_complex32():
    """Pairs of halves are complex32 (ComplexHalf) numbers, as in torch, never read as complex64."""
    pairs = np.array([[1.0, 2.0], [0.5, -0.25], [3.0, 0.0]], dtype=np.float16)
    check(lambda m, x: (m.view_as_complex(x), m.complex(x[:, 0], x[:, 1])), pairs)
