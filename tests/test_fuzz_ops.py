"""Fuzz: common ops called with random valid AND invalid shapes, dtypes and arguments, on torch and lantern.

Each op has a case generator that draws (from hypothesis) the inputs and arguments of one call, skewed towards the
mistakes people make: shapes that do not broadcast or multiply, dims out of range, integer or bool tensors where
floats are needed, negative sizes, empty tensors, non-contiguous layouts. `oracle.matches_torch` then runs the call
on both libraries and requires the same result (values, dtype, shape, strides, aliasing) or, where torch raises,
exactly the same exception class. The draws are derandomized, so every run makes the same calls.

The default run makes EXAMPLES_PER_OP calls per op (about a thousand in all, tens of seconds). To measure the agreement
over a larger run, without failing on the first disagreement, run this file as a script:

    .venv/bin/python tests/test_fuzz_ops.py 60      # 60 calls per op; prints per-op agreement and the misses

Disagreements that remain on purpose are listed in KNOWN_DISAGREEMENTS with their reasons.
"""
import sys
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from oracle import matches_torch, noncontig

EXAMPLES_PER_OP = 10

FLOATS = ["float32", "float64", "float16"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
# float32 is what most programs use: draw it most often; every other dtype still comes up
DTYPES = ["float32"] * 6 + ["float64", "float16", "int64", "int64", "int32", "int16", "int8", "uint8", "bool",
                            "complex64"]


# ---- drawing inputs ----------------------------------------------------------------------------------------------

def _shape(draw, min_dims=0, max_dims=4, max_side=4, min_side=0):
    ndim = draw(st.integers(min_dims, max_dims))
    # zero-sized dims are drawn now and then, not as often as the others
    sides = st.one_of(st.integers(max(min_side, 1), max_side), st.integers(min_side, max_side))
    return tuple(draw(st.lists(sides, min_size=ndim, max_size=ndim)))


def _array(draw, shape, dtype=None, *, distinct=False):
    """Random values of `dtype` (drawn when None) and shape; non-contiguous half of the time."""
    dtype = dtype or draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    n = int(np.prod(shape, dtype=np.int64))
    if distinct:  # sorts and top-k: no ties, so the index outputs are unique
        values = rng.permutation(n).astype(np.float64) - n // 2
        values = values * 0.25 if dtype in FLOATS or dtype.startswith("complex") else values
    elif dtype == "bool":
        values = rng.random(n) < 0.5
    elif dtype in INTS:
        values = rng.integers(0 if dtype == "uint8" else -4, 5, n)
    else:
        values = np.round(rng.standard_normal(n), 2)
    if dtype.startswith("complex"):
        values = values + 1j * np.round(rng.standard_normal(n), 2)
    arr = np.asarray(values).astype(dtype).reshape(shape)
    return noncontig(arr) if arr.ndim and draw(st.booleans()) else arr


def _tensor(draw, *, dtype=None, min_dims=0, max_dims=4, max_side=4, min_side=0, distinct=False):
    return _array(draw, _shape(draw, min_dims, max_dims, max_side, min_side), dtype, distinct=distinct)


def _other_shape(draw, shape):
    """A second operand's shape: the same, broadcastable with `shape`, or anything."""
    kind = draw(st.sampled_from(["same", "broadcast", "broadcast", "random"]))
    if kind == "same":
        return shape
    if kind == "broadcast":
        dims = [1 if draw(st.booleans()) else s for s in shape]
        return tuple(dims[draw(st.integers(0, len(dims))):])
    return _shape(draw)


def _dim(draw, ndim, *, allow_bad=True):
    """A dim for a tensor of ndim dims: mostly valid (negative too), sometimes out of range."""
    n = max(ndim, 1)
    low, high = (-n - 1, n) if allow_bad else (-n, n - 1)
    return draw(st.integers(low, high))


def _float_dtype(draw):
    """Mostly a floating dtype; sometimes an integer one, which float-only ops refuse."""
    return draw(st.sampled_from(["float32"] * 4 + ["float64", "int64", "int32", "bool"]))


# ---- one case generator per op: draw -> (fn(lib, *tensors), *numpy inputs) ---------------------------------------

CASES = {}


def case(fn):
    """Register a case generator under its op's name (a trailing _ keeps builtins like sum unshadowed)."""
    CASES[fn.__name__.rstrip("_")] = fn
    return fn


def _binary(name):
    def draw_case(draw):
        a = _tensor(draw)
        b = _array(draw, _other_shape(draw, a.shape))
        if draw(st.integers(0, 4)) == 0:  # a Python number on the right
            scalar = draw(st.sampled_from([0, 2, -1, 0.5, True, 1.5j]))
            return (lambda m, x: getattr(m, name)(x, scalar)), a
        return (lambda m, x, y: getattr(m, name)(x, y)), a, b
    draw_case.__name__ = name
    return case(draw_case)


for _name in ("add", "sub", "mul", "div", "floor_divide", "remainder", "maximum", "eq", "bitwise_and", "fmod",
              "atan2", "lt", "logical_and", "minimum"):
    _binary(_name)


def _unary(name, functional=False):
    def draw_case(draw):
        a = _tensor(draw)
        return (lambda m, x: getattr(m.nn.functional if functional else m, name)(x)), a
    draw_case.__name__ = name
    return case(draw_case)


for _name in ("abs", "neg", "log", "sigmoid", "tanh", "round", "sign", "logical_not", "bitwise_not", "isnan",
              "reciprocal", "floor"):
    _unary(_name)
for _name in ("relu", "gelu", "silu"):
    _unary(_name, functional=True)


def _arg(draw, value, *, none=True):
    """value, or now and then an argument of the wrong type: a float, a string or (unless none=False) None."""
    kind = draw(st.integers(0, 15))
    wrong = {0: float(value) + 0.5 if isinstance(value, int) else 1.5, 1: str(value)}
    if none:
        wrong[2] = None
    return wrong.get(kind, value)


@case
def pow_(draw):
    a = _tensor(draw)
    exponent = draw(st.sampled_from([2, 3, -1, 0.5, 0, "tensor"]))
    if exponent == "tensor":
        b = _array(draw, _other_shape(draw, a.shape))
        return (lambda m, x, y: m.pow(x, y)), a, b
    return (lambda m, x: m.pow(x, exponent)), a


@case
def div_rounding(draw):
    a, mode = _tensor(draw), draw(st.sampled_from(["floor", "trunc", None, "nearest"]))
    b = _array(draw, _other_shape(draw, a.shape))
    return (lambda m, x, y: m.div(x, y, rounding_mode=mode)), a, b


@case
def clamp(draw):
    a = _tensor(draw)
    low = draw(st.sampled_from([None, -1, 0.5, 2]))
    high = draw(st.sampled_from([None, 1, -2, 3.5]))
    return (lambda m, x: m.clamp(x, low, high)), a


@case
def where(draw):
    cond = _tensor(draw, dtype=draw(st.sampled_from(["bool"] * 4 + ["uint8", "float32"])))
    a = _array(draw, _other_shape(draw, cond.shape))
    b = _array(draw, _other_shape(draw, cond.shape))
    return (lambda m, c, x, y: m.where(c, x, y)), cond, a, b


@case
def exp(draw):
    return (lambda m, x: m.exp(x)), _tensor(draw)


@case
def sqrt(draw):
    return (lambda m, x: m.sqrt(x)), _tensor(draw)


@case
def sum_(draw):
    a = _tensor(draw)
    dim = draw(st.one_of(st.none(), st.just("dim"), st.just("dims")))
    keepdim = draw(st.booleans())
    dtype = draw(st.sampled_from([None, None, "float64", "int64"]))
    if dim is None:
        return (lambda m, x: m.sum(x, dtype=dtype and getattr(m, dtype))), a
    dims = _dim(draw, a.ndim) if dim == "dim" else (_dim(draw, a.ndim), _dim(draw, a.ndim))
    return (lambda m, x: m.sum(x, dims, keepdim=keepdim, dtype=dtype and getattr(m, dtype))), a


@case
def mean(draw):
    a = _tensor(draw)
    if draw(st.booleans()):
        return (lambda m, x: m.mean(x)), a
    dim, keepdim = _dim(draw, a.ndim), draw(st.booleans())
    return (lambda m, x: m.mean(x, dim, keepdim)), a


@case
def amax(draw):
    a = _tensor(draw)
    dim, keepdim = _dim(draw, a.ndim), draw(st.booleans())
    return (lambda m, x: m.amax(x, dim, keepdim)), a


@case
def argmax(draw):
    a = _tensor(draw, distinct=True)
    dim = draw(st.one_of(st.none(), st.integers(-5, 4)))
    return (lambda m, x: m.argmax(x, dim)), a


@case
def cumsum(draw):
    a = _tensor(draw)
    dim = _dim(draw, a.ndim)
    return (lambda m, x: m.cumsum(x, dim)), a


@case
def matmul(draw):
    a = _tensor(draw, min_dims=1, max_dims=3)
    shape = list(_other_shape(draw, a.shape)) or [draw(st.integers(0, 3))]
    if draw(st.booleans()) and len(shape) >= 2:  # usually line the inner dims up
        shape[-2] = a.shape[-1]
    elif draw(st.booleans()):
        shape[-1] = a.shape[-1]
    dtype = draw(st.sampled_from(["float32"] * 3 + ["float64", "int64", "bool"]))
    b = _array(draw, tuple(shape), dtype)
    return (lambda m, x, y: m.matmul(x, y)), a, b


@case
def mm(draw):
    n, k, j = (draw(st.integers(0, 3)) for _ in range(3))
    a = _array(draw, (n, k), _float_dtype(draw))
    b = _array(draw, (draw(st.sampled_from([k, k, k + 1])), j), _float_dtype(draw))
    return (lambda m, x, y: m.mm(x, y)), a, b


def _new_shape(draw, shape):
    """A target shape for reshape/view: a factorization of the same numel, with a -1 or a mistake now and then."""
    n = int(np.prod(shape, dtype=np.int64))
    kind = draw(st.sampled_from(["flat", "factor", "minus1", "wrong", "two_minus1", "negative"]))
    if kind == "flat":
        return (n,)
    if kind == "wrong":
        return (n + 1,)
    if kind == "two_minus1":
        return (-1, -1)
    if kind == "negative":
        return (-2, n)
    divisors = [d for d in range(1, n + 1) if n % d == 0] or [1]
    d = draw(st.sampled_from(divisors))
    return (d, -1) if kind == "minus1" else (d, n // d)


@case
def reshape(draw):
    a = _tensor(draw)
    shape = _new_shape(draw, a.shape)
    return (lambda m, x: m.reshape(x, shape)), a


@case
def view(draw):
    a = _tensor(draw)
    shape = _new_shape(draw, a.shape)
    if draw(st.booleans()):
        return (lambda m, x: x.transpose(0, -1).view(shape)), a
    return (lambda m, x: x.view(shape)), a


@case
def expand(draw):
    a = _tensor(draw, max_dims=3)
    extra = tuple(draw(st.lists(st.integers(-1, 3), max_size=2)))  # see KNOWN_DISAGREEMENTS["expand"]
    sizes = extra + tuple(draw(st.sampled_from([s, -1, 3, 1, -2, 0])) for s in a.shape)
    return (lambda m, x: x.expand(*sizes)), a


def _tensor_list(draw, min_size=0):
    shape = _shape(draw, max_dims=3)
    count = draw(st.integers(min_size, 3))
    shapes = [shape if draw(st.integers(0, 3)) else _other_shape(draw, shape) for _ in range(count)]
    dtype = draw(st.sampled_from(DTYPES))
    return [_array(draw, s, dtype if draw(st.integers(0, 3)) else None) for s in shapes]


@case
def cat(draw):
    tensors = _tensor_list(draw)
    dim = _dim(draw, tensors[0].ndim if tensors else 1)
    return (lambda m, *xs: m.cat(xs, dim)), *tensors


@case
def stack(draw):
    tensors = _tensor_list(draw)
    dim = _dim(draw, (tensors[0].ndim if tensors else 0) + 1)
    return (lambda m, *xs: m.stack(xs, dim)), *tensors


def _index(draw, size, shape=None, *, dtype=None):
    """Indices into a dim of `size`: in range, negative, past the end, or of the wrong dtype."""
    shape = shape if shape is not None else (draw(st.integers(0, 4)),)
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    kind = draw(st.sampled_from(["ok", "ok", "ok", "negative", "past_end"]))
    low, high = {"ok": (0, max(size, 1)), "negative": (-size - 1, 0), "past_end": (0, size + 2)}[kind]
    idx = rng.integers(low, high, n).reshape(shape)
    return idx.astype(dtype or draw(st.sampled_from(["int64"] * 4 + ["int32", "float32", "int16"])))


@case
def index_select(draw):
    a = _tensor(draw, min_dims=0, max_dims=3)
    dim = _dim(draw, a.ndim)
    size = a.shape[dim] if -a.ndim <= dim < a.ndim else 2
    idx = _index(draw, size)
    if draw(st.integers(0, 5)) == 0:
        idx = idx.reshape(-1, 1)
    return (lambda m, x, i: m.index_select(x, dim, i)), a, idx


@case
def gather(draw):
    a = _tensor(draw, min_dims=1, max_dims=3)
    dim = _dim(draw, a.ndim)
    shape = tuple(draw(st.integers(0, s)) for s in a.shape)
    if draw(st.integers(0, 4)) == 0:
        shape = _shape(draw, max_dims=3)
    size = a.shape[dim] if -a.ndim <= dim < a.ndim else 2
    return (lambda m, x, i: m.gather(x, dim, i)), a, _index(draw, size, shape)


@case
def narrow(draw):
    a = _tensor(draw, min_dims=0, max_dims=3)
    dim = _dim(draw, a.ndim)
    start, length = draw(st.integers(-4, 4)), draw(st.integers(-1, 4))
    return (lambda m, x: m.narrow(x, dim, start, length)), a


@case
def transpose(draw):
    a = _tensor(draw)
    d0, d1 = _dim(draw, a.ndim), _dim(draw, a.ndim)
    return (lambda m, x: m.transpose(x, d0, d1)), a


@case
def permute(draw):
    a = _tensor(draw)
    dims = list(draw(st.permutations(range(a.ndim))))
    kind = draw(st.sampled_from(["ok", "ok", "negative", "repeat", "short"]))
    if kind == "negative" and dims:
        dims[0] -= a.ndim
    elif kind == "repeat" and len(dims) > 1:
        dims[0] = dims[1]
    elif kind == "short":
        dims = dims[1:]
    return (lambda m, x: m.permute(x, dims)), a


@case
def squeeze(draw):
    a = _tensor(draw, max_side=2)
    if draw(st.booleans()):
        return (lambda m, x: m.squeeze(x)), a
    dim = _dim(draw, a.ndim)
    return (lambda m, x: m.squeeze(x, dim)), a


@case
def unsqueeze(draw):
    a = _tensor(draw)
    dim = _dim(draw, a.ndim + 1)
    return (lambda m, x: m.unsqueeze(x, dim)), a


@case
def flatten(draw):
    a = _tensor(draw)
    start, end = _dim(draw, a.ndim), _dim(draw, a.ndim)
    return (lambda m, x: m.flatten(x, start, end)), a


@case
def softmax(draw):
    a = _tensor(draw, dtype=_float_dtype(draw))
    dim = _dim(draw, a.ndim)
    dtype = draw(st.sampled_from([None, None, "float64"]))
    return (lambda m, x: m.softmax(x, dim, dtype=dtype and getattr(m, dtype))), a


@case
def log_softmax(draw):
    a = _tensor(draw, dtype=_float_dtype(draw))
    dim = _dim(draw, a.ndim)
    return (lambda m, x: m.nn.functional.log_softmax(x, dim)), a


@case
def cross_entropy(draw):
    n, c = draw(st.integers(0, 4)), draw(st.integers(1, 4))
    logits = _array(draw, (n, c) if draw(st.integers(0, 4)) else _shape(draw, max_dims=3), _float_dtype(draw))
    target_n = draw(st.sampled_from([n, n, n, n + 1]))
    target = _index(draw, c, (target_n,), dtype=draw(st.sampled_from(["int64"] * 4 + ["float32", "int32"])))
    smoothing = draw(st.sampled_from([0.0, 0.0, 0.1]))
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    return (lambda m, x, t: m.nn.functional.cross_entropy(x, t, reduction=reduction, label_smoothing=smoothing),
            logits, target)


@case
def linear(draw):
    k = draw(st.integers(0, 4))
    x = _array(draw, _shape(draw, max_dims=2) + (k,), _float_dtype(draw))
    out_features = draw(st.integers(0, 3))
    w = _array(draw, (out_features, draw(st.sampled_from([k, k, k, k + 1]))), _float_dtype(draw))
    if draw(st.booleans()):
        b = _array(draw, (draw(st.sampled_from([out_features, out_features, 1, out_features + 1])),),
                   _float_dtype(draw))
        return (lambda m, x, w, b: m.nn.functional.linear(x, w, b)), x, w, b
    return (lambda m, x, w: m.nn.functional.linear(x, w)), x, w


@case
def conv2d(draw):
    n, cin = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    groups = draw(st.sampled_from([1, 1, 2]))
    cout, kh = draw(st.sampled_from([1, 2, 4])), draw(st.integers(1, 3))
    x = _array(draw, (n, cin, h, w) if draw(st.integers(0, 5)) else (cin, h, w), _float_dtype(draw))
    wt = _array(draw, (cout, draw(st.sampled_from([cin // groups or 1, cin])), kh, kh), _float_dtype(draw))
    stride, padding = draw(st.sampled_from([1, 1, 2, 0])), draw(st.sampled_from([0, 0, 1, "same", -1]))
    return (lambda m, x, w: m.nn.functional.conv2d(x, w, stride=stride, padding=padding, groups=groups)), x, wt


@case
def max_pool2d(draw):
    x = _array(draw, (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 6)),
                      draw(st.integers(1, 6))), _float_dtype(draw))
    kernel, stride = draw(st.integers(0, 3)), draw(st.sampled_from([None, 1, 2]))
    padding, ceil = draw(st.integers(0, 2)), draw(st.booleans())
    return (lambda m, x: m.nn.functional.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil)), x


@case
def avg_pool2d(draw):
    x = _array(draw, (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 6)),
                      draw(st.integers(1, 6))), _float_dtype(draw))
    kernel, stride, padding = draw(st.integers(1, 3)), draw(st.sampled_from([None, 1, 2])), draw(st.integers(0, 2))
    return (lambda m, x: m.nn.functional.avg_pool2d(x, kernel, stride, padding)), x


@case
def layer_norm(draw):
    x = _tensor(draw, dtype=_float_dtype(draw), min_dims=1, max_dims=3)
    k = draw(st.integers(1, x.ndim))
    shape = x.shape[-k:] if draw(st.integers(0, 4)) else tuple(s + 1 for s in x.shape[-k:])
    if draw(st.booleans()):
        w = _array(draw, shape, _float_dtype(draw))
        return (lambda m, x, w: m.nn.functional.layer_norm(x, shape, w)), x, w
    return (lambda m, x: m.nn.functional.layer_norm(x, shape)), x


@case
def embedding(draw):
    rows = draw(st.integers(1, 5))
    weight = _array(draw, (rows, draw(st.integers(0, 3))), _float_dtype(draw))
    idx = _index(draw, rows, _shape(draw, max_dims=2))
    padding_idx = draw(st.sampled_from([None, None, 0, -1]))  # out of range: AssertionError, see test_bad_input
    return (lambda m, i, w: m.nn.functional.embedding(i, w, padding_idx)), idx, weight


@case
def topk(draw):
    a = _tensor(draw, distinct=True)
    k, dim = draw(st.integers(-1, 4)), _dim(draw, a.ndim)
    largest = draw(st.booleans())
    return (lambda m, x: m.topk(x, k, dim, largest)), a


@case
def sort_(draw):
    a = _tensor(draw, distinct=True)
    dim, descending = _dim(draw, a.ndim), draw(st.booleans())
    return (lambda m, x: m.sort(x, dim=dim, descending=descending, stable=True)), a


@case
def repeat(draw):
    a = _tensor(draw, max_dims=3)
    reps = tuple(draw(st.lists(st.integers(-1, 3), min_size=max(0, a.ndim - 1), max_size=a.ndim + 1)))
    return (lambda m, x: x.repeat(*reps)), a


@case
def flip(draw):
    a = _tensor(draw)
    dims = tuple(_dim(draw, a.ndim) for _ in range(draw(st.integers(0, 2))))
    return (lambda m, x: m.flip(x, dims)), a


@case
def masked_fill(draw):
    a = _tensor(draw)
    mask = _array(draw, _other_shape(draw, a.shape), draw(st.sampled_from(["bool"] * 4 + ["uint8", "int64"])))
    value = draw(st.sampled_from([0.0, -1, 2.5, True]))
    return (lambda m, x, k: m.masked_fill(x, k, value)), a, mask


@case
def tril(draw):
    a, diagonal = _tensor(draw), draw(st.integers(-2, 2))
    return (lambda m, x: m.tril(x, diagonal)), a


@case
def prod(draw):
    a = _tensor(draw)
    dim, keepdim = _arg(draw, _dim(draw, a.ndim), none=False), draw(st.booleans())  # see KNOWN_DISAGREEMENTS
    return (lambda m, x: m.prod(x, dim, keepdim)), a


@case
def var(draw):
    a = _tensor(draw, dtype=_float_dtype(draw))
    dim, correction = _dim(draw, a.ndim), draw(st.sampled_from([0, 1, 2]))
    return (lambda m, x: m.var(x, dim, correction=correction)), a


@case
def max_dim(draw):
    a = _tensor(draw, distinct=True)
    dim, keepdim = _arg(draw, _dim(draw, a.ndim), none=False), draw(st.booleans())  # see KNOWN_DISAGREEMENTS
    return (lambda m, x: m.max(x, dim, keepdim)), a


@case
def any_all(draw):
    a = _tensor(draw)
    which, dim = draw(st.sampled_from(["any", "all"])), draw(st.one_of(st.none(), st.integers(-4, 3)))
    return (lambda m, x: getattr(m, which)(x) if dim is None else getattr(m, which)(x, dim)), a


@case
def logsumexp(draw):
    a = _tensor(draw)
    dim = _arg(draw, _dim(draw, a.ndim))
    return (lambda m, x: m.logsumexp(x, dim)), a


@case
def chunk_split(draw):
    a = _tensor(draw, min_dims=0, max_dims=3)
    dim, which = _dim(draw, a.ndim), draw(st.sampled_from(["chunk", "split", "split_sizes"]))
    n = draw(st.integers(-1, 4))
    if which == "split_sizes":
        size = a.shape[dim] if -a.ndim <= dim < a.ndim else 2
        sizes = [draw(st.integers(0, size)) for _ in range(draw(st.integers(1, 3)))]
        sizes[-1] = size - sum(sizes[:-1]) if draw(st.integers(0, 3)) else sizes[-1]
        return (lambda m, x: m.split(x, sizes, dim)), a
    return (lambda m, x: getattr(m, which)(x, n, dim)), a


@case
def select_unbind(draw):
    a = _tensor(draw, min_dims=0, max_dims=3)
    dim, index = _dim(draw, a.ndim), draw(st.integers(-4, 4))
    if draw(st.booleans()):
        return (lambda m, x: m.unbind(x, dim)), a
    return (lambda m, x: m.select(x, dim, index)), a


@case
def movedim(draw):
    a = _tensor(draw)
    src, dst = _dim(draw, a.ndim), _dim(draw, a.ndim)
    return (lambda m, x: m.movedim(x, src, dst)), a


@case
def t(draw):
    a = _tensor(draw, max_dims=3)
    return (lambda m, x: m.t(x)), a


@case
def roll(draw):
    a = _tensor(draw)
    shifts = draw(st.integers(-5, 5))
    dims = draw(st.sampled_from([None, "one", "two"]))
    if dims is None:
        return (lambda m, x: m.roll(x, shifts)), a
    ds = (_dim(draw, a.ndim),) if dims == "one" else (_dim(draw, a.ndim), _dim(draw, a.ndim))
    shifts = (shifts,) * len(ds) if draw(st.booleans()) else shifts
    return (lambda m, x: m.roll(x, shifts, ds)), a


@case
def repeat_interleave(draw):
    a = _tensor(draw, max_dims=3)
    repeats, dim = draw(st.integers(-1, 3)), draw(st.one_of(st.none(), st.integers(-3, 3)))
    return (lambda m, x: m.repeat_interleave(x, repeats, dim)), a


@case
def scatter(draw):
    a = _tensor(draw, min_dims=1, max_dims=3)
    dim = _dim(draw, a.ndim)
    shape = tuple(draw(st.integers(0, s)) for s in a.shape)
    size = a.shape[dim] if -a.ndim <= dim < a.ndim else 2
    index = _index(draw, size, shape)
    src = _array(draw, shape, draw(st.sampled_from([str(a.dtype)] * 3 + ["float64"])))
    return (lambda m, x, i, s: m.scatter(x, dim, i, s)), a, index, src


@case
def index_add(draw):
    a = _tensor(draw, min_dims=1, max_dims=3)
    dim = _dim(draw, a.ndim)
    size = a.shape[dim] if -a.ndim <= dim < a.ndim else 2
    index = _index(draw, size)
    src_shape = list(a.shape)
    if -a.ndim <= dim < a.ndim:
        src_shape[dim] = index.shape[0] if draw(st.integers(0, 3)) else index.shape[0] + 1
    src = _array(draw, tuple(src_shape), draw(st.sampled_from([str(a.dtype)] * 3 + ["float64"])))
    return (lambda m, x, i, s: m.index_add(x, dim, i, s)), a, index, src


@case
def masked_select(draw):
    a = _tensor(draw)
    mask = _array(draw, _other_shape(draw, a.shape), draw(st.sampled_from(["bool"] * 4 + ["uint8", "float32"])))
    return (lambda m, x, k: m.masked_select(x, k)), a, mask


@case
def one_hot(draw):
    classes = draw(st.integers(-1, 4))
    idx = _index(draw, max(classes, 1), _shape(draw, max_dims=2),
                 dtype=draw(st.sampled_from(["int64"] * 4 + ["int32", "float32"])))
    return (lambda m, i: m.nn.functional.one_hot(i, classes)), idx


@case
def mse_loss(draw):
    a = _tensor(draw, dtype=_float_dtype(draw))
    b = _array(draw, _other_shape(draw, a.shape), _float_dtype(draw))
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    return (lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction=reduction)), a, b


@case
def binary_cross_entropy(draw):
    a = _tensor(draw, dtype=_float_dtype(draw))
    b = _array(draw, _other_shape(draw, a.shape), _float_dtype(draw))
    a, b = (np.asarray(abs(v) % 1) for v in (a, b))  # probabilities; asarray keeps 0-d inputs arrays
    return (lambda m, x, y: m.nn.functional.binary_cross_entropy(x, y)), a, b


@case
def nll_loss(draw):
    n, c = draw(st.integers(0, 3)), draw(st.integers(1, 4))
    x = _array(draw, (n, c) if draw(st.integers(0, 3)) else _shape(draw, max_dims=3), _float_dtype(draw))
    target = _index(draw, c, (draw(st.sampled_from([n, n, n + 1])),),
                    dtype=draw(st.sampled_from(["int64"] * 4 + ["uint8", "int32"])))
    return (lambda m, x, t: m.nn.functional.nll_loss(x, t)), x, target


@case
def batch_norm(draw):
    x = _tensor(draw, dtype=_float_dtype(draw), min_dims=1, max_dims=4)
    c = x.shape[1] if x.ndim > 1 else 1
    c = c if draw(st.integers(0, 4)) else c + 1
    stats = [_array(draw, (c,), "float32") for _ in range(2)]
    stats[1] = np.abs(stats[1]) + 0.5
    return (lambda m, x, mean, var: m.nn.functional.batch_norm(x, mean, var, training=False)), x, *stats


@case
def group_norm(draw):
    x = _tensor(draw, dtype=_float_dtype(draw), min_dims=1, max_dims=4, min_side=1)
    groups = draw(st.integers(0, 3))
    return (lambda m, x: m.nn.functional.group_norm(x, groups)), x


@case
def pad(draw):
    x = _tensor(draw, dtype=_float_dtype(draw), min_dims=1, max_dims=4)
    widths = tuple(draw(st.lists(st.integers(-1, 2), min_size=1, max_size=6)))
    mode = draw(st.sampled_from(["constant", "constant", "reflect", "replicate", "circular"]))
    return (lambda m, x: m.nn.functional.pad(x, widths, mode=mode)), x


@case
def conv1d(draw):
    x = _array(draw, (draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 6))), _float_dtype(draw))
    w = _array(draw, (draw(st.integers(1, 3)), draw(st.sampled_from([x.shape[1], x.shape[1], 1])),
                      draw(st.integers(1, 4))), _float_dtype(draw))
    stride, padding, dilation = draw(st.integers(0, 2)), draw(st.integers(-1, 2)), draw(st.integers(1, 2))
    return (lambda m, x, w: m.nn.functional.conv1d(x, w, stride=stride, padding=padding, dilation=dilation)), x, w


@case
def adaptive_avg_pool2d(draw):
    x = _tensor(draw, dtype=_float_dtype(draw), min_dims=2, max_dims=4)
    size = (draw(st.integers(0, 3)), draw(st.one_of(st.none(), st.integers(1, 3))))
    return (lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, size)), x


@case
def interpolate(draw):
    x = _tensor(draw, dtype=_float_dtype(draw), min_dims=3, max_dims=4, min_side=1)
    size = tuple(draw(st.integers(0, 5)) for _ in range(draw(st.integers(1, 2))))
    mode = draw(st.sampled_from(["nearest", "nearest", "bilinear", "linear"]))
    return (lambda m, x: m.nn.functional.interpolate(x, size=size, mode=mode)), x


@case
def factories(draw):
    which = draw(st.sampled_from(["zeros", "full", "arange", "linspace", "eye", "empty_like"]))
    n, dtype = draw(st.integers(-2, 4)), draw(st.sampled_from([None, "float32", "int64", "bool", "float16"]))
    if which == "zeros":
        cols = _arg(draw, 2)
        return (lambda m: m.zeros(n, cols, dtype=dtype and getattr(m, dtype))),
    if which == "full":
        value = draw(st.sampled_from([1, 2.5, True, -3, 300]))
        return (lambda m: m.full((2, n), value, dtype=dtype and getattr(m, dtype))),
    if which == "arange":
        start, end, step = draw(st.integers(-3, 3)), draw(st.integers(-3, 6)), draw(st.sampled_from([1, 2, -1, 0, 0.5]))
        return (lambda m: m.arange(start, end, step, dtype=dtype and getattr(m, dtype))),
    if which == "linspace":
        end = draw(st.integers(-2, 5))
        return (lambda m: m.linspace(0, end, n, dtype=dtype and getattr(m, dtype))),
    if which == "eye":
        cols = draw(st.integers(-1, 3))
        return (lambda m: m.eye(n, cols, dtype=dtype and getattr(m, dtype))),
    a = _tensor(draw)
    return (lambda m, x: m.empty_like(x, dtype=dtype and getattr(m, dtype)).fill_(1)), a


# ---- the test and the measuring script ---------------------------------------------------------------------------

# Calls where lantern deliberately differs from torch 2.13. The generators avoid them, except the second form of
# expand's, which long runs can still draw (about one call in 8,000).
KNOWN_DISAGREEMENTS = {
    "expand": "a negative size other than -1 (ones(1).expand(-2, 0, -2), ones(1, 1).expand(3, 0, -2)): when the "
              "result has no elements torch returns a tensor whose shape holds negative sizes (any later use "
              "fails); lantern raises RuntimeError at once.",
    "prod, max_dim": "an explicit dim=None (prod(x, None, True), max(x, None, True)): torch's argument parser "
                     "refuses None for the int dim of these overloads (TypeError); lantern declares one schema "
                     "per op, whose optional dim takes None as 'every dim'.",
}


def _settings(examples):
    return settings(max_examples=examples, derandomize=True, deadline=None, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


def _call(name, data):
    fn, *inputs = CASES[name](data.draw)
    matches_torch(fn, *inputs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_agrees_with_torch(name):
    @_settings(EXAMPLES_PER_OP)
    @given(st.data())
    def run(data):
        _call(name, data)
    run()


def test_fuzz_covers_thirty_ops():
    assert len(CASES) >= 30


def describe(fn, inputs):
    """A call in a line: the inputs' shapes, dtypes and strides, and the arguments the lambda closed over."""
    arrays = [f"{x.dtype}{list(x.shape)}" + ("" if x.flags.c_contiguous else f"@{x.strides}") for x in inputs]
    args = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
    return f"{', '.join(arrays)} {args}"


def measure(examples_per_op):
    """Run every op's generator `examples_per_op` times; return {op: (agreed, calls)} and the misses."""
    tally, misses = defaultdict(lambda: [0, 0]), defaultdict(Counter)
    for name in sorted(CASES):
        @_settings(examples_per_op)
        @given(st.data())
        def run(data):
            fn, *inputs = CASES[name](data.draw)
            tally[name][1] += 1
            try:
                matches_torch(fn, *inputs)
            except (Exception, pytest.fail.Exception) as e:  # any failure is a disagreement to count
                first_line = str(e).splitlines()[0][:160] if str(e) else ""
                misses[name][f"{type(e).__name__}: {first_line}\n        e.g. {describe(fn, inputs)}"] += 1
            else:
                tally[name][0] += 1
        run()
    return tally, misses


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    tally, misses = measure(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
    agreed, calls = (sum(v[i] for v in tally.values()) for i in (0, 1))
    for name, (ok, n) in sorted(tally.items(), key=lambda kv: kv[1][0] / kv[1][1]):
        print(f"{name:16s} {ok:4d}/{n:<4d}")
        for text, count in misses[name].most_common(4):
            print(f"    {count:3d}x {text}")
    print(f"agreement: {agreed}/{calls} = {agreed / calls:.1%} over {len(tally)} ops")
