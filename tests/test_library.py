"""lantern.library against torch.library: custom_op with its fake, kernels and autograd formula, Library's define
and impl, infer_schema, the ops namespace, and what each refuses; the op shows in the profiler, the dispatch trace
and the JIT's graph under its qualified name."""
import io
import itertools
from typing import Optional

import numpy as np
import pytest
import torch

import lantern

_names = itertools.count()


def _ns():
    return f"testlib{next(_names)}"  # torch keeps an op registered for the whole process: a fresh name per test


def _sin_op(lib, ns):
    Tensor = lib.Tensor

    @lib.library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: Tensor, k: float = 1.0) -> Tensor:
        return lib.from_numpy(np.sin(x.numpy()) * k)  # the kernel sees its tensors detached
    return numpy_sin


def _with_autograd(op):
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.save_for_backward(x)
        ctx.k = k

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos() * ctx.k, None

    op.register_autograd(backward, setup_context=setup_context)
    return op


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e).__name__
    return None


def test_custom_op_runs_records_and_differentiates():
    def run(lib):
        ns = _ns()
        op = _with_autograd(_sin_op(lib, ns))
        x = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
        y = op(x, 2.0)
        y.sum().backward()
        packet = getattr(getattr(lib.ops, ns), "numpy_sin")
        name = y.grad_fn.name().replace(ns, "NS")
        return (repr(op).replace(ns, "NS"), str(packet).replace(ns, "NS"), name, y.detach().numpy(),
                x.grad.numpy(), packet(x.detach(), k=3.0).numpy(), packet.default.name().replace(ns, "NS"))

    got, expected = run(lantern), run(torch)
    for g, e in zip(got, expected):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-6)
        else:
            assert g == e


def test_without_a_formula_backward_raises_and_without_a_fake_meta_raises():
    def run(lib):
        op = _sin_op(lib, _ns())
        x = lib.tensor([0.5], requires_grad=True)
        return (_error(lambda: op(x).sum().backward()), _error(lambda: op(lib.empty(2, device="meta"))))

    assert run(lantern) == run(torch) == ("RuntimeError", "RuntimeError")


def test_register_fake_runs_the_op_on_the_meta_device():
    def run(lib):
        op = _sin_op(lib, _ns())
        op.register_fake(lambda x, k=1.0: lib.empty_like(x))
        out = op(lib.empty(2, 3, device="meta"))
        return out.shape, out.device.type, out.dtype is lib.float32

    assert run(lantern) == ((2, 3), "meta", True) and run(torch) == (torch.Size([2, 3]), "meta", True)


def test_register_kernel_per_device_type():
    def run(lib):
        Tensor = lib.Tensor
        ns = _ns()

        @lib.library.custom_op(f"{ns}::plus", mutates_args=(), device_types="cpu")
        def plus(x: Tensor) -> Tensor:
            return x + 1

        first = plus(lib.zeros(2)).tolist()
        plus.register_kernel("cpu", lambda x: x + 10)
        return first, plus(lib.zeros(2)).tolist()

    assert run(lantern) == run(torch) == ([1.0, 1.0], [10.0, 10.0])


def test_mutating_op_and_aliasing_output():
    def run(lib):
        Tensor = lib.Tensor
        ns = _ns()

        @lib.library.custom_op(f"{ns}::add_one_", mutates_args=("x",))
        def add_one_(x: Tensor) -> None:
            x.add_(1)

        @lib.library.custom_op(f"{ns}::same", mutates_args=())
        def same(x: Tensor) -> Tensor:
            return x

        t = lib.zeros(2)
        version = t._version
        result = add_one_(t)
        return result, t.tolist(), t._version > version, _error(lambda: same(lib.ones(2)))

    assert run(lantern) == run(torch) == (None, [1.0, 1.0], True, "RuntimeError")


def test_library_define_and_impl():
    def run(lib):
        ns = _ns()
        library = lib.library.Library(ns, "DEF")
        name = library.define("twice(Tensor x) -> Tensor")
        library.impl("twice", lambda x: x * 2, "CPU")
        library.define("nokernel(Tensor x) -> Tensor")
        namespace = getattr(lib.ops, ns)
        return (name, namespace.twice(lib.ones(2)).tolist(), namespace.twice.overloads(),
                _error(lambda: library.define("twice(Tensor x) -> Tensor")),
                _error(lambda: namespace.nokernel(lib.ones(2))), _error(lambda: namespace.nothere),
                _error(lambda: lib.library.Library(ns, "FOO")))

    assert run(lantern) == run(torch) == ("twice", [2.0, 2.0], ["default"], "RuntimeError", "NotImplementedError",
                                          "AttributeError", "ValueError")


def test_composite_implicit_kernel_records_its_own_ops():
    def run(lib):
        ns = _ns()
        library = lib.library.Library(ns, "DEF")
        library.define("square(Tensor x) -> Tensor")
        library.impl("square", lambda x: x * x, "CompositeImplicitAutograd")
        x = lib.tensor([3.0], requires_grad=True)
        y = getattr(lib.ops, ns).square(x)
        y.backward()
        return y.grad_fn.name(), x.grad.tolist()

    assert run(lantern) == run(torch) == ("MulBackward0", [6.0])


def test_a_destroyed_library_takes_its_ops_away():
    ns = _ns()
    library = lantern.library.Library(ns, "DEF")
    library.define("f(Tensor x) -> Tensor")
    assert f"{ns}::f" in lantern.ops.registry.REGISTRY
    library._destroy()
    assert f"{ns}::f" not in lantern.ops.registry.REGISTRY
    with pytest.raises(AttributeError):
        getattr(lantern.ops, ns).f


def _annotated(lib):
    def f(x: lib.Tensor, y: Optional[lib.Tensor], n: int, s: float = 1.0, b: bool = False, name: str = "a",
          d: lib.dtype = lib.float32) -> tuple[lib.Tensor, lib.Tensor]:
        pass
    return f


def _mutating(lib):
    def f(x: lib.Tensor, out: lib.Tensor) -> None:
        pass
    return f


def _lists(lib):
    def f(xs: list[lib.Tensor], n: Optional[int] = None) -> list[lib.Tensor]:
        pass
    return f


@pytest.mark.parametrize("make, mutates", [(_annotated, ()), (_mutating, {"out"}), (_mutating, "unknown"),
                                           (_lists, ())])
def test_infer_schema(make, mutates):
    assert (lantern.library.infer_schema(make(lantern), mutates_args=mutates)
            == torch.library.infer_schema(make(torch), mutates_args=mutates))


def test_infer_schema_wants_annotations():
    def bare(x):
        pass
    assert _error(lambda: lantern.library.infer_schema(bare, mutates_args=())) == \
        _error(lambda: torch.library.infer_schema(bare, mutates_args=())) == "ValueError"


def test_the_op_shows_in_the_profiler_the_dispatch_trace_and_the_jit_graph():
    ns = _ns()
    op = _sin_op(lantern, ns)
    trace = io.StringIO()
    with lantern.debug.trace_dispatch(trace):
        op(lantern.ones(2))
    assert f"{ns}::numpy_sin  keys=[CPU: inputs are on cpu]  kernel=CPU:test_library._sin_op.numpy_sin" in trace.getvalue()
    with lantern.profiler.profile() as prof:
        op(lantern.ones(2))
    assert f"{ns}::numpy_sin" in [e.name for e in prof.events()]
    traced = lantern.jit.trace(lambda a: op(a) * 2, lantern.ones(3))
    assert f"{ns}::numpy_sin" in str(traced.graph)
    np.testing.assert_allclose(traced(lantern.full((3,), 0.5)).numpy(), np.sin(np.full(3, 0.5, np.float32)) * 2)


def test_opcheck_passes_a_good_op_and_names_what_a_bad_one_breaks():
    def run(lib):
        Tensor = lib.Tensor
        ns = _ns()
        good = _with_autograd(_sin_op(lib, ns))
        good.register_fake(lambda x, k=1.0: lib.empty_like(x))

        @lib.library.custom_op(f"{ns}::liar", mutates_args=())
        def liar(x: Tensor) -> None:
            x.add_(1)

        @lib.library.custom_op(f"{ns}::badfake", mutates_args=())
        def badfake(x: Tensor) -> Tensor:
            return x.sum(0)
        badfake.register_fake(lambda x: lib.empty_like(x))

        ok = lib.library.opcheck(good, (lib.tensor([0.5, 1.0], requires_grad=True),))
        schema = lib.library.opcheck(liar, (lib.ones(3),), raise_exception=False)["test_schema"]
        fake = lib.library.opcheck(badfake, (lib.ones(3, 2),), raise_exception=False)["test_faketensor"]
        no_formula = _error(lambda: lib.library.opcheck(_sin_op(lib, _ns()), (lib.ones(2, requires_grad=True),),
                                                        test_utils="test_aot_dispatch_dynamic"))
        return ok, "was mutated" in str(schema), "Shapes" in str(fake), no_formula

    got, expected = run(lantern), run(torch)
    assert got == expected
    assert got[0] == dict.fromkeys(lantern.library_opcheck.ALL_TESTS, "SUCCESS") and got[3] == "OpCheckError"
