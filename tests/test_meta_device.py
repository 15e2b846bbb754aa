"""The meta device against torch's: every op gives the same shapes, dtypes and strides without touching data,
raises the same errors, and refuses to read values; device objects (spec row 19).
"""
import numpy as np
import pytest
import torch

import lantern
from lantern.ops import pointwise_binary, pointwise_unary
from deliberate_differences import DIFFERENCES
from oracle import check, matches_torch, raises_like


def described(t):
    """What a meta tensor has: everything but values."""
    if isinstance(t, (tuple, list)):
        return [described(x) for x in t]
    return tuple(t.shape), t.dtype, t.stride(), str(t.device), t.storage_offset()


def meta(m, *shape, dtype=None):
    return m.empty(*shape, dtype=dtype or m.float32, device="meta")


def on_meta(f):
    """Run f(m, a, b) on meta tensors a (2, 3) float32 and b (3,) int64; compare descriptions."""
    matches_torch(lambda m: described(f(m, meta(m, 2, 3), meta(m, 3, dtype=m.int64))))


UNARY = [row[0] for row in pointwise_unary.UNARY]
BINARY = [row[0] for row in pointwise_binary.BINARY] + ["add", "sub", "mul", "div", "pow"]


# Unlike torch's meta kernels, lantern's metas make every dtype check (torch leaves those to the CPU/CUDA kernels):
# `lantern.empty(2, device='meta').bitwise_not()` raises as it would on the CPU.
assert DIFFERENCES["dtype checks on the meta device"]
DTYPE_CHECKED_ON_CPU_ONLY = {"frac", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                             "bitwise_right_shift"}


@pytest.mark.parametrize("op", [op for op in UNARY if op not in DTYPE_CHECKED_ON_CPU_ONLY])
def test_unary(op):
    on_meta(lambda m, a, b: getattr(m, op)(a))
    on_meta(lambda m, a, b: getattr(m, op)(b))
    if hasattr(torch.Tensor, op + "_"):
        on_meta(lambda m, a, b: getattr(a, op + "_")() if op not in ("logical_not", "sign") else a)


@pytest.mark.parametrize("op", [op for op in BINARY if op not in DTYPE_CHECKED_ON_CPU_ONLY])
def test_binary(op):
    for f in (lambda m, a, b: getattr(m, op)(a, b), lambda m, a, b: getattr(m, op)(b, b),
              lambda m, a, b: getattr(m, op)(a, 2), lambda m, a, b: getattr(m, op)(a, a.select(0, 0).sum())):
        on_meta(f)


VIEWS = [
    lambda m, a, b: a.t(), lambda m, a, b: a.view(3, 2), lambda m, a, b: a.reshape(-1),
    lambda m, a, b: a.t().reshape(6), lambda m, a, b: a.unsqueeze(1), lambda m, a, b: a.expand(4, 2, 3), lambda m, a, b: a.narrow(1, 1, 2),
    lambda m, a, b: a.select(0, 1), lambda m, a, b: a.permute(1, 0), lambda m, a, b: a.diagonal(),
    lambda m, a, b: a.as_strided((2, 2), (1, 2), 1), lambda m, a, b: a.unfold(1, 2, 1), lambda m, a, b: a.flatten(),
    lambda m, a, b: a.view(m.int32), lambda m, a, b: a.squeeze(), lambda m, a, b: list(a.split(1, 1)),
    lambda m, a, b: list(a.chunk(2)), lambda m, a, b: list(a.unbind(1)), lambda m, a, b: a.movedim(0, 1),
    lambda m, a, b: a.mT, lambda m, a, b: a.unflatten(1, (3, 1)),
]


@pytest.mark.parametrize("i", range(len(VIEWS)))
def test_views(i):
    on_meta(VIEWS[i])


OTHERS = [
    lambda m, a, b: a.sum(), lambda m, a, b: a.sum(1, keepdim=True), lambda m, a, b: b.sum(), lambda m, a, b: a.mean(0),
    lambda m, a, b: a.prod(1), lambda m, a, b: a.amax(0), lambda m, a, b: a.argmax(1), lambda m, a, b: a.any(),
    lambda m, a, b: list(a.max(1)), lambda m, a, b: a.max(), lambda m, a, b: a.min(0, keepdim=True)[1],
    lambda m, a, b: a.all(1), lambda m, a, b: a.sum(dtype=m.float64),
    lambda m, a, b: a @ a.t(), lambda m, a, b: m.mm(a, a.t()), lambda m, a, b: m.matmul(a, a.t().float()),
    lambda m, a, b: m.bmm(a.unsqueeze(0), a.t().unsqueeze(0)), lambda m, a, b: m.mv(a, a.select(0, 0)),
    lambda m, a, b: m.dot(b, b), lambda m, a, b: m.matmul(a.unsqueeze(0).expand(4, 2, 3), a.t()),
    lambda m, a, b: m.cat([a, a]), lambda m, a, b: m.stack([a, a], 1), lambda m, a, b: m.cat([a, b.unsqueeze(0)]),
    lambda m, a, b: a.clone(), lambda m, a, b: a.t().clone(), lambda m, a, b: a.t().contiguous(),
    lambda m, a, b: a.clone().copy_(b), lambda m, a, b: a.fill_(1), lambda m, a, b: a.zero_(),
    lambda m, a, b: a.to(m.float64), lambda m, a, b: a.t().double(), lambda m, a, b: m.where(a > 0, a, b),
    lambda m, a, b: m.clamp(a, 0, 1), lambda m, a, b: a.clamp_(min=0),
    lambda m, a, b: a.add_(b), lambda m, a, b: m.add(a, b, out=meta(m, 0)),
    lambda m, a, b: a.contiguous(memory_format=m.channels_last) if a.dim() == 4 else a.unsqueeze(0).unsqueeze(0)
    .contiguous(memory_format=m.channels_last),
]


@pytest.mark.parametrize("i", range(len(OTHERS)))
def test_other_ops(i):
    on_meta(OTHERS[i])


ERRORS = [
    lambda m, a, b: a + meta(m, 4), lambda m, a, b: a.view(4), lambda m, a, b: m.mm(a, a),
    lambda m, a, b: a.t().view(6), lambda m, a, b: b.mean(), lambda m, a, b: a.add_(meta(m, 3, 3)),
    lambda m, a, b: b.mul_(a), lambda m, a, b: a.expand(2, 4), lambda m, a, b: a.sum(2),
    lambda m, a, b: -meta(m, 2, dtype=m.bool), lambda m, a, b: m.cat([a, a.t()]),
    lambda m, a, b: a.select(0, 5),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    raises_like(lambda m: ERRORS[i](m, meta(m, 2, 3), meta(m, 3, dtype=m.int64)))


def test_versions_bump_on_meta():
    def fn(m):
        a = meta(m, 2, 3)
        a.add_(1)
        m.mul(a, 2, out=a)
        a.fill_(2)
        a.t().zero_()
        return a._version
    check(fn)


@pytest.mark.parametrize("read", [lambda t: t.item(), lambda t: t.tolist(), lambda t: float(t), lambda t: bool(t),
                                  lambda t: int(t), lambda t: t.numpy(), lambda t: t.to("cpu")])
def test_reading_data_raises(read):
    t_msg, l_msg = raises_like(lambda m: read(m.empty(1, device="meta")))
    assert l_msg == t_msg


def test_copy_between_devices():
    raises_like(lambda m: m.ones(2).copy_(m.empty(2, device="meta")))
    check(lambda m: described(m.empty(2, device="meta").copy_(m.ones(2))))


def test_to_meta():
    check(lambda m: described(m.ones(2, 3).t().to("meta")))
    check(lambda m: described(m.ones(2, 3).to("meta", m.float16)))
    check(lambda m: m.ones(2, device="meta").is_meta)


def test_meta_storage_has_no_data():
    x = lantern.empty(4, 4, device="meta")
    assert x.data_ptr() == 0 and x.untyped_storage().nbytes() == 64
    assert x.untyped_storage().data_ptr() == torch.empty(4, 4, device="meta").untyped_storage().data_ptr()


def test_mixed_devices():
    raises_like(lambda m: m.ones(2) + m.ones(2, device="meta"))
    check(lambda m: described(m.tensor(2.0) * m.ones(2, device="meta")))


# ---- device objects (row 19) ------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["cpu", "cuda", "cuda:1", "meta", ("cuda", 2), "cpu:0"])
def test_device_objects(spec):
    args = spec if isinstance(spec, tuple) else (spec,)
    t, ln = torch.device(*args), lantern.device(*args)
    assert (ln.type, ln.index, str(ln)) == (t.type, t.index, str(t))
    assert repr(ln) == repr(t)
    assert ln == lantern.device(str(ln)) and hash(ln) == hash(lantern.device(str(ln)))
    assert lantern.device(ln) == ln


@pytest.mark.parametrize("spec", ["gpu", "cuda:x", "cuda:-1", "cpu:0:1", ""])
def test_device_errors(spec):
    with pytest.raises(RuntimeError):
        torch.device(spec)
    with pytest.raises(RuntimeError):
        lantern.device(spec)


def test_device_misc():
    assert lantern.device("cpu") == "cpu"
    for lib in (torch, lantern):  # PyTorch raises RuntimeError for an index given twice
        with pytest.raises(RuntimeError, match="must not include an index"):
            lib.device("cuda:1", 2)
    with pytest.raises(TypeError):
        lantern.device(1.5)
    with pytest.raises(AttributeError):
        lantern.device("cpu").type = "cuda"
    import pickle
    assert pickle.loads(pickle.dumps(lantern.device("cuda", 1))) == lantern.device("cuda:1")


def test_layout_and_memory_format_objects():
    assert repr(lantern.strided) == "lantern.strided" and repr(lantern.channels_last) == "lantern.channels_last"
    import pickle
    for obj in (lantern.strided, lantern.contiguous_format, lantern.channels_last, lantern.preserve_format):
        assert pickle.loads(pickle.dumps(obj)) is obj
    assert lantern.ones(2).layout is lantern.strided


def test_meta_factories_match_cpu_metadata():
    check(lambda m: [described(m.zeros(2, 3, device="meta")), described(m.ones(0, device="meta")),
                     described(m.empty_strided((2, 3), (1, 2), device="meta")),
                     described(m.full((2,), 7, device="meta"))])
    assert np.all(True)


# ---- one runner per kind: the meta backend runs base.py's structured runners and only skips their compute step ----

def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (any class: the test compares them)
        return type(e), str(e)
    return None


RUNNER_ERRORS = {
    "in-place shape": lambda m, device: m.ones(3, device=device).add_(m.ones(2, 3, device=device)),
    "in-place cast": lambda m, device: m.ones(3, dtype=m.int64, device=device).mul_(m.ones(3, device=device)),
    "out= cast": lambda m, device: m.add(m.ones(3, device=device), 1.5,
                                         out=m.empty(3, dtype=m.int64, device=device)),
    "out= exact dtype": lambda m, device: m.gather(m.ones(2, 2, device=device), 1,
                                                   m.zeros(2, 1, dtype=m.int64, device=device),
                                                   out=m.empty(2, 1, dtype=m.float64, device=device)),
}


@pytest.mark.parametrize("name", RUNNER_ERRORS)
def test_meta_runners_raise_the_cpu_errors_with_the_op_hint(name):
    make = RUNNER_ERRORS[name]
    on_meta, on_cpu = _raised(lambda: make(lantern, "meta")), _raised(lambda: make(lantern, "cpu"))
    assert on_meta is not None and on_meta == on_cpu
    assert "(in " in on_meta[1]  # the op's name, which the meta backend's own runners used to leave out
    if name != "in-place cast":  # torch's meta kernels leave that check to the CPU's (DIFFERENCES' dtype checks)
        raises_like(lambda m: make(m, "meta"))  # torch's meta device raises the same class


WRITES_INTO_EXPANDED = {
    "in-place": lambda m, t: t.add_(1),
    "out=": lambda m, t: m.add(m.ones(2, 3, device=t.device), 1, out=t),
}


@pytest.mark.parametrize("name", WRITES_INTO_EXPANDED)
def test_internal_overlap_is_a_memory_check_the_meta_device_skips_as_torch_does(name):
    write = WRITES_INTO_EXPANDED[name]
    expanded = {(m, device): m.zeros(1, 3, device=device).expand(2, 3)
                for m in (torch, lantern) for device in ("cpu", "meta")}
    assert _raised(lambda: write(torch, expanded[torch, "meta"])) is None
    assert _raised(lambda: write(lantern, expanded[lantern, "meta"])) is None
    raises_like(lambda m: write(m, expanded[m, "cpu"]), match="more than one element of the written-to tensor")


def test_the_meta_backend_has_no_structured_runner_of_its_own():
    from lantern.backends.base import Backend
    from lantern.backends.meta import MetaBackend
    runners = {name for name in vars(Backend) if name.startswith("run_structured")}
    assert runners and not runners & set(vars(MetaBackend))
