"""Joining and copying against torch: cat, stack, clone (keeps dense strides), contiguous, copy_ (broadcast, cast),
fill_, zero_, .to(dtype / device / other), the dtype shorthands (.float(), ...) and .type().
"""
import numpy as np
import pytest
import torch

import lantern
from oracle import DTYPE_PAIRS, check, matches_torch, noncontig, raises_like
from device_generic import lantern_device  # noqa: F401  (the fixture: these tests run on cpu and openreg)

pytestmark = pytest.mark.usefixtures("lantern_device")

NAMES = [str(t).replace("torch.", "") for t, _ in DTYPE_PAIRS]


def sample(name, shape=(2, 3), shift=0):
    n = int(np.prod(shape))
    i = (np.arange(n) + shift) % 5
    vals = i % 2 == 0 if name == "bool" else i + 1
    if name.startswith("complex"):
        vals = vals + 0.5j
    return noncontig(np.asarray(vals).astype("float32" if name == "bfloat16" else name).reshape(shape))


def as_(m, x, name):
    return x.to(getattr(m, name)) if name == "bfloat16" else x


# ---- cat / stack ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_cat_dims(dim):
    a, b = sample("float32", (2, 3)), sample("float32", (2, 3), 1)
    check(lambda m, x, y: m.cat([x, y], dim), a, b)
    check(lambda m, x, y: m.cat((x, y, x), dim=dim), a, b)
    check(lambda m, x, y: m.concat([x.t(), y.t()], dim), a, b)
    check(lambda m, x, y: m.cat([x], dim), a, b)
    check(lambda m, x, y: m.stack([x, y], dim), a, b)
    check(lambda m, x, y: m.stack((x.t(), y.t(), x.t()), dim=dim), a, b)


def test_cat_different_sizes_along_dim():
    check(lambda m, x, y: m.cat([x, y]), np.ones((2, 3)), np.zeros((4, 3)))
    check(lambda m, x, y: m.cat([x, y], 1), np.ones((2, 3)), np.zeros((2, 1)))
    check(lambda m, x, y: m.cat([x, y]), np.ones((2, 3)), np.zeros((0, 3)))
    check(lambda m, x, y: m.cat([x, y.view(0)]), np.ones((2, 3)), np.zeros((0,)))  # legacy: 1-D empties skipped
    check(lambda m, x: m.cat([x, x]).shape, np.zeros((0,)))


@pytest.mark.parametrize("a,b", [("int32", "float32"), ("uint8", "int8"), ("bool", "int64"), ("float16", "float64"),
                                 ("int64", "complex64"), ("bool", "bool"), ("bfloat16", "float16")])
def test_cat_stack_promote(a, b):
    check(lambda m, x, y: m.cat([as_(m, x, a), as_(m, y, b)]), sample(a), sample(b))
    check(lambda m, x, y: m.stack([as_(m, x, a), as_(m, y, b)], 1), sample(a), sample(b))


def test_cat_stack_out():
    def fn(m, x):
        o = m.empty(0)
        r = m.cat([x, x], 1, out=o)
        assert r is o and o._version == 1
        s = m.empty(5)
        with pytest.warns(UserWarning):
            m.stack([x, x], out=s)
        return o, s
    check(fn, sample("float32"))


CAT_ERRORS = {
    "empty_list": lambda m, x: m.cat([]),
    "not_a_list": lambda m, x: m.cat(x),
    "not_tensors": lambda m, x: m.cat([x, 1]),
    "zero_dim": lambda m, x: m.cat([x.sum(), x.sum()]),
    "ndim_mismatch": lambda m, x: m.cat([x, x.select(0, 0)]),
    "size_mismatch": lambda m, x: m.cat([x, x.t()]),
    "dim_range": lambda m, x: m.cat([x, x], 2),
    "stack_empty": lambda m, x: m.stack([]),
    "stack_sizes": lambda m, x: m.stack([x, x.t()]),
    "stack_dim_range": lambda m, x: m.stack([x, x], 4),
}


@pytest.mark.parametrize("name", list(CAT_ERRORS))
def test_cat_stack_errors(name):
    raises_like(CAT_ERRORS[name], sample("float32"))


def test_stack_zero_dim():
    check(lambda m: m.stack([m.tensor(1.), m.tensor(2.)]))
    check(lambda m: m.stack([m.tensor(1.), m.tensor(2.)], -1))


# ---- clone / contiguous ------------------------------------------------------------------------------------

CLONE_SOURCES = {
    "contiguous": lambda m, x: x.contiguous(),
    "transposed": lambda m, x: x.t(),
    "permuted": lambda m, x: x.unsqueeze(0).permute(2, 0, 1),
    "sliced": lambda m, x: x.narrow(1, 1, 2),
    "expanded": lambda m, x: x.select(0, 0).expand(4, 3),
    "noncontig": lambda m, x: x,
    "zero_dim": lambda m, x: x.sum(),
}


@pytest.mark.parametrize("src", list(CLONE_SOURCES))
def test_clone_preserves_dense_strides(src):
    def fn(m, x):
        s = CLONE_SOURCES[src](m, x)
        c = s.clone()
        return (c, c.is_contiguous(), c.data_ptr() != s.data_ptr(), c._base is None, c._version,
                s.clone(memory_format=m.contiguous_format).stride(), s.contiguous())
    check(fn, sample("float32"))


def test_clone_is_a_copy():
    def fn(m, x):
        c = x.clone()
        c.add_(1)
        return x, c, x._version, c._version
    check(fn, sample("int64"))


# ---- copy_ -------------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("src", ["bool", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64",
                                 "bfloat16"])
@pytest.mark.parametrize("dst", ["bool", "int8", "int64", "float16", "float32", "float64", "complex128",
                                 "bfloat16"])
def test_copy_casts(dst, src):
    def fn(m, x, y):
        d = as_(m, y, dst).clone()
        r = d.copy_(as_(m, x, src))
        assert r is d and d._version == 1
        return d
    check(fn, sample(src), sample(dst, shift=2))


@pytest.mark.parametrize("src_shape", [(3,), (1, 3), (2, 1), (), (1,)])
def test_copy_broadcasts(src_shape):
    check(lambda m, x, y: x.clone().copy_(y), sample("float32"), np.arange(int(np.prod(src_shape)), dtype=np.float32)
          .reshape(src_shape))
    check(lambda m, x, y: x.t().clone().copy_(y.expand(2, 3).t()), sample("float32"),
          np.arange(int(np.prod(src_shape)), dtype=np.float32).reshape(src_shape))


def test_complex_to_real_warns():
    for f in (lambda: lantern.ones(2, dtype=lantern.complex64).float(),
              lambda: lantern.ones(2).copy_(lantern.ones(2, dtype=lantern.complex128))):
        with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
            f()


def test_copy_errors():
    raises_like(lambda m, x, y: x.clone().copy_(y), sample("float32"), np.ones((3, 2), np.float32))
    raises_like(lambda m, x, y: x.clone().copy_(y), sample("float32"), np.ones((2, 2, 3), np.float32))
    raises_like(lambda m, x: x.clone().copy_("a"), sample("float32"))
    check(lambda m, x: x.clone().copy_(2.5), sample("float32"))
    raises_like(lambda m, x, y: x.expand(2, 3).copy_(y), np.ones(3), np.ones((2, 3)))


def test_copy_into_views():
    def fn(m, x, y):
        x = x.clone()
        x.t().narrow(0, 0, 2).copy_(y.t().narrow(0, 0, 2))
        x.select(1, 2).copy_(m.tensor(7.0))
        return x, x._version
    check(fn, sample("float32"), sample("float32", shift=3))


def test_copy_overlap():
    check(lambda m, x: x.narrow(0, 0, 3).copy_(x.narrow(0, 0, 3)), np.arange(6.))
    check(lambda m, x: x.narrow(0, 0, 3).copy_(x.narrow(0, 3, 3)), np.arange(6.))
    check(lambda m, x: x.copy_(x), np.arange(6.))
    raises_like(lambda m, x: x.narrow(0, 1, 4).copy_(x.narrow(0, 0, 4)), np.arange(6.))
    _, msg = raises_like(lambda m, x: x.view(2, 3).t().copy_(x.view(3, 2)), np.arange(6.))
    assert "some elements of the input tensor and the written-to tensor refer to a single memory location" in msg


FILL_VALUES = [(-1, "uint8"), (-255, "uint8"), (-256, "uint8"), (256, "uint8"), (1000, "int8"), (127, "int8"),
               (2 ** 63, "int64"), (1.7, "int64"), (-1.7, "int64"), (-1.7, "uint8"), (float("inf"), "int8"),
               (float("nan"), "int32"), (1e6, "float16"), (float("inf"), "float16"), (float("nan"), "bfloat16"),
               (1e39, "float32"), (5, "bool"), (0.5, "bool"), (1 + 0j, "float32"), (1 + 2j, "float32"),
               (1 + 2j, "complex64"), (True, "int32"), (3, "float64")]


@pytest.mark.parametrize("value,dtype", FILL_VALUES)
def test_fill_value_conversion(value, dtype):
    matches_torch(lambda m: m.zeros(3, dtype=getattr(m, dtype)).fill_(value))
    matches_torch(lambda m: m.zeros(3, dtype=getattr(m, dtype)).copy_(m.tensor(value)) if value == value and
          abs(value) < 1e30 and not isinstance(value, complex) else 0)


# ---- fill_ / zero_ -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NAMES)
def test_fill_zero(dtype):
    for value in (2, 0.5, True, -1, 1 + 0j):
        check(lambda m, x: as_(m, x, dtype).clone().fill_(value), sample(dtype))
    check(lambda m, x: as_(m, x, dtype).clone().zero_(), sample(dtype))
    check(lambda m, x: as_(m, x, dtype).clone().fill_(m.tensor(3)), sample(dtype))

    def views(m, x):
        x = as_(m, x, dtype).clone()
        x.t().narrow(0, 1, 1).fill_(0)
        x.select(0, 0).zero_()
        return x, x._version
    check(views, sample(dtype))


@pytest.mark.parametrize("fill", [lambda t: t.fill_(1.0), lambda t: t.zero_(), lambda t: t.add_(1)])
def test_inplace_into_expanded_always_refused(fill):
    """A deliberate difference: torch lets fill_(number) and zero_() write into stride-0 (shared) elements;
    lantern refuses every in-place write into shared memory (the foundation issue, pytorch#4664)."""
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        fill(lantern.ones(3).expand(2, 3))


def test_fill_errors():
    raises_like(lambda m, x: x.fill_(m.ones(2)), sample("float32"))
    raises_like(lambda m, x: x.fill_(float("nan")), sample("int32"))
    raises_like(lambda m, x: x.fill_("a"), sample("int32"))


# ---- .to / shorthands / .type ------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("dst", NAMES)
@pytest.mark.parametrize("src", NAMES)
def test_to_dtype(src, dst):
    def fn(m, x):
        x = as_(m, x, src)
        y = x.to(getattr(m, dst))
        same = y is x
        return y, same, y.to(getattr(m, dst)) is y, x.to(dtype=getattr(m, dst)).dtype
    check(fn, sample(src))


@pytest.mark.parametrize("src", ["noncontig", "transposed", "permuted4d", "expanded"])
def test_to_keeps_dense_strides(src):
    def fn(m, x):
        s = {"noncontig": x, "transposed": x.t(), "permuted4d": x.view(1, 1, 2, 3).permute(0, 2, 3, 1),
             "expanded": x.select(0, 0).expand(2, 3)}[src] if src != "noncontig" else x
        return s.to(m.float64), s.double(), s.to(m.float64, copy=True), s.to(s.dtype, copy=True)
    check(fn, sample("float32").copy() if src != "noncontig" else sample("float32"))


@pytest.mark.parametrize("lantern_device", ["cpu"])  # moves to and from the CPU itself
def test_to_variants(lantern_device):
    def fn(m, x, y):
        return (x.to(y), x.to("cpu") is x, x.to(m.device("cpu")) is x, x.to("cpu", m.float16),
                x.to(device="cpu", dtype=m.int8), x.to(m.float32, copy=True) is x, x.type_as(y),
                x.to(x) is x)
    check(fn, sample("float32"), sample("int16"))


SHORTHANDS = ["float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool", "cfloat",
              "cdouble"]


@pytest.mark.parametrize("name", SHORTHANDS)
def test_dtype_shorthands(name):
    check(lambda m, x: getattr(x, name)(), sample("float32"))
    check(lambda m, x: getattr(x, name)() is x, sample({"float": "float32", "double": "float64", "long": "int64",
                                                        "int": "int32", "bool": "bool"}.get(name, "float32")))


@pytest.mark.parametrize("lantern_device", ["cpu"])  # the CPU's type strings (a device's are torch.<device>.*)
@pytest.mark.parametrize("dtype", NAMES)
def test_type_strings(dtype, lantern_device):
    check(lambda m, x: as_(m, x, dtype).type(), sample(dtype))
    check(lambda m, x: m.zeros(2, dtype=getattr(m, dtype)).type(), sample(dtype))


def test_type_conversion():
    check(lambda m, x: x.type(m.int32), sample("float32"))
    check(lambda m, x: x.type("torch.DoubleTensor"), sample("float32"))
    check(lambda m, x: x.type("torch.LongTensor"), sample("float32"))


def test_to_errors():
    raises_like(lambda m, x: x.to("nope"), sample("float32"))
    raises_like(lambda m, x: x.to(m.float32, bogus=1), sample("float32"))
    raises_like(lambda m, x: x.to("cuda"), sample("float32"), match="Torch not compiled with CUDA enabled")
