"""The rest of torch.library, each program run on torch and on lantern and the results compared: get_ctx,
get_kernel, impl_abstract, register_autocast, register_torch_dispatch and CustomOpDef.set_kernel_enabled."""
import itertools
import logging
import warnings

import numpy as np
import pytest
import torch

import lantern
from lantern.ops.python_key import TORCH_DISPATCH_RULES
from lantern.utils._python_dispatch import TorchDispatchMode as LanternMode
from torch.utils._python_dispatch import TorchDispatchMode as TorchMode

_names = itertools.count()


@pytest.fixture
def ns():
    """A namespace no other test uses (registrations are process-wide in both libraries)."""
    return f"librest{next(_names)}"


def _both(program, ns):
    """program(lib, mode_base, ns) on torch and on lantern."""
    return program(torch, TorchMode, ns + "_t"), program(lantern, LanternMode, ns + "_l")


def _sin_op(lib, ns, device_types=None):
    @lib.library.custom_op(f"{ns}::my_sin", mutates_args=(), device_types=device_types)
    def my_sin(x: lib.Tensor) -> lib.Tensor:
        return x.sin()
    return my_sin


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the class is what is compared)
        return type(e).__name__, str(e)
    return None


# ---- get_ctx --------------------------------------------------------------------------------------------------

def test_get_ctx_is_none_outside_a_fake_function_and_refuses_on_the_meta_device(ns):
    def program(lib, _, ns):
        op = _sin_op(lib, ns)

        @op.register_fake
        def _(x):
            lib.library.get_ctx()
            return lib.empty_like(x)
        return lib.library.get_ctx(), _error(lambda: op(lib.empty(3, device="meta")))

    (t_ctx, t_error), (l_ctx, l_error) = _both(program, ns)
    assert t_ctx is None and l_ctx is None
    assert t_error[0] == l_error[0] == "RuntimeError"
    assert "You're trying to run this operator with meta Tensors" in t_error[1]
    assert "You're trying to run this operator with meta Tensors" in l_error[1] and f"{ns}_l::my_sin" in l_error[1]


def test_a_fake_function_that_does_not_ask_for_the_context_runs_on_meta(ns):
    def program(lib, _, ns):
        op = _sin_op(lib, ns)
        lib.library.register_fake(op, lambda x: lib.empty_like(x))
        y = op(lib.empty(2, 3, device="meta"))
        return tuple(y.shape), y.device.type
    assert _both(program, ns)[0] == _both(program, ns + "b")[1]


# ---- get_kernel -----------------------------------------------------------------------------------------------

def test_get_kernel_runs_the_aten_kernel():
    x = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    t = torch.library.get_kernel("aten::sin", "CPU").call_boxed(
        torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), torch.from_numpy(x))
    l_ = lantern.library.get_kernel("aten::sin", "CPU").call_boxed(None, lantern.from_numpy(x))
    np.testing.assert_array_equal(l_.numpy(), lantern.sin(lantern.from_numpy(x)).numpy())
    np.testing.assert_allclose(t.numpy(), l_.numpy(), rtol=1e-6)   # sin itself may differ by an ulp


def test_get_kernel_of_a_custom_op_by_overload(ns):
    def program(lib, _, ns):
        _sin_op(lib, ns)
        overload = getattr(getattr(lib.ops, ns), "my_sin").default
        keyset = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU) if lib is torch else None
        return lib.library.get_kernel(overload, "CPU").call_boxed(keyset, lib.ones(2)).tolist()
    t, l_ = _both(program, ns)
    np.testing.assert_allclose(t, l_, rtol=1e-6)


@pytest.mark.parametrize("args", [("aten::sin", "NoSuchKey"), ("aten::no_such_op", "CPU"), (3, "CPU")])
def test_get_kernel_refuses_as_torch_does(args):
    t, l_ = _error(lambda: torch.library.get_kernel(*args)), _error(lambda: lantern.library.get_kernel(*args))
    assert t[0] == l_[0]
    assert t[1].split(":")[0] == l_[1].split(":")[0]


# ---- impl_abstract --------------------------------------------------------------------------------------------

def test_impl_abstract_is_register_fake_with_a_future_warning(ns):
    def program(lib, _, ns):
        lib.library.define(f"{ns}::twice", "(Tensor x) -> Tensor")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.library.impl_abstract(f"{ns}::twice", lambda x: lib.empty_like(x))
        y = getattr(lib.ops, ns).twice(lib.empty(4, device="meta"))
        return [(w.category, str(w.message)) for w in caught], tuple(y.shape), y.device.type
    t, l_ = _both(program, ns)
    assert t == l_


# ---- register_autocast ----------------------------------------------------------------------------------------

def test_register_autocast_casts_inputs_under_autocast_only(ns):
    def program(lib, _, ns):
        op = _sin_op(lib, ns)
        results = [op(lib.ones(2)).dtype]
        lib.library.register_autocast(op, "cpu", lib.float16)
        op.register_autocast("cpu", lib.bfloat16)   # the first registration stays
        with lib.autocast("cpu"):
            results += [op(lib.ones(2)).dtype, op(lib.ones(2, dtype=lib.float64)).dtype,
                        op(lib.ones(2, dtype=lib.bfloat16)).dtype, op(lib.ones(2, dtype=lib.int32)).dtype]
        results.append(op(lib.ones(2)).dtype)
        return [str(d).rpartition(".")[2] for d in results]
    t, l_ = _both(program, ns)
    assert t == l_ == ["float32", "float16", "float64", "float16", "float32", "float32"]


def test_register_autocast_of_a_library_op_by_name_and_its_gradient(ns):
    def program(lib, _, ns):
        library = lib.library.Library(ns, "FRAGMENT")
        library.define("double(Tensor x) -> Tensor")
        library.impl("double", lambda x: x * 2, "CompositeImplicitAutograd")
        lib.library.register_autocast(f"{ns}::double", "cpu", lib.float16, lib=library)
        x = lib.ones(3, requires_grad=True)
        with lib.autocast("cpu"):
            y = getattr(lib.ops, ns).double(x)
        y.sum().backward()
        return str(y.dtype).rpartition(".")[2], x.grad.tolist(), str(x.grad.dtype).rpartition(".")[2]
    t, l_ = _both(program, ns)
    assert t == l_


def test_register_autocast_refuses_a_device_without_autocast(ns):
    def program(lib, _, ns):
        op = _sin_op(lib, ns)
        return _error(lambda: op.register_autocast("meta", lib.float16)), \
            _error(lambda: op.register_autocast(3, lib.float16))
    t, l_ = _both(program, ns)
    assert t == l_


# ---- register_torch_dispatch ----------------------------------------------------------------------------------

def test_a_torch_dispatch_rule_answers_for_exactly_its_mode_class(ns):
    def program(lib, mode_base, ns):
        op = _sin_op(lib, ns)
        seen = []

        class Mode(mode_base):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append(str(func))
                return func(*args, **(kwargs or {}))

        class Other(Mode):
            pass

        @op.register_torch_dispatch(Mode)
        def _(mode, func, types, args, kwargs):
            seen.append(f"rule {type(mode).__name__} {types} {len(args)} {kwargs}")
            return args[0] + 1

        x = lib.zeros(2)
        with Mode():
            a = op(x).tolist()
        with Other():
            b = op(x).tolist()
        return a, b, op(x).tolist(), [s for s in seen if ns in s or s.startswith("rule")]
    t, l_ = _both(program, ns)
    assert t[:3] == l_[:3]
    assert [s.replace(ns + "_t", "NS") for s in t[3]] == [s.replace(ns + "_l", "NS") for s in l_[3]]


def test_register_torch_dispatch_by_name_for_a_wrapper_subclass(ns):
    def program(lib, _, ns):
        op = _sin_op(lib, ns)

        class Wrapper(lib.Tensor):
            @staticmethod
            def __new__(cls, inner):
                return lib.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype)

            def __init__(self, inner):
                self.inner = inner

            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                return NotImplemented

        lib.library.register_torch_dispatch(f"{ns}::my_sin", Wrapper,
                                            lambda cls, func, types, args, kwargs: func(args[0].inner) * 10)
        try:
            return op(Wrapper(lib.full((2,), 0.5))).tolist()
        finally:
            if lib is lantern:  # the rule holds Wrapper, and a live subclass keeps lantern's __torch_function__ check on
                op._destroy()
    t, l_ = _both(program, ns)
    assert t == l_


# ---- set_kernel_enabled ---------------------------------------------------------------------------------------

def test_set_kernel_enabled_falls_back_to_the_op_function_inside_the_block(ns, caplog):
    def program(lib, _, ns):
        @lib.library.custom_op(f"{ns}::f", mutates_args=())
        def f(x: lib.Tensor) -> lib.Tensor:
            return lib.zeros(1)

        @f.register_kernel("cpu")
        def _(x):
            return lib.ones(1)

        x = lib.ones(1)
        results = [f(x).item()]
        with f.set_kernel_enabled("cpu", enabled=False):
            results.append(f(x).item())
            with f.set_kernel_enabled("cpu", enabled=True):
                results.append(f(x).item())
            results.append(f(x).item())
        results.append(f(x).item())
        with caplog.at_level(logging.WARNING):
            caplog.clear()
            with f.set_kernel_enabled("cuda", enabled=False):
                pass
            with f.set_kernel_enabled("cpu", enabled=True):
                pass
        return results, [r.getMessage() for r in caplog.records]
    t, l_ = _both(program, ns)
    assert t[0] == l_[0] == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert [m.split(" ")[:3] for m in t[1]] == [m.split(" ")[:3] for m in l_[1]] and len(l_[1]) == 2


def test_destroying_an_op_drops_its_torch_dispatch_rules(ns):
    op = _sin_op(lantern, ns)
    op.register_torch_dispatch(LanternMode, lambda mode, func, types, args, kwargs: args[0])
    operator = lantern.ops.registry.REGISTRY[f"{ns}::my_sin"]
    assert operator in TORCH_DISPATCH_RULES
    op._destroy()
    assert operator not in TORCH_DISPATCH_RULES


def test_a_torch_dispatch_rule_for_an_aten_op(ns):
    def program(lib, mode_base, ns):
        class Mode(mode_base):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        lib.library.register_torch_dispatch("aten::neg", Mode, lambda mode, func, types, args, kwargs: args[0] * 7)
        x = lib.ones(2)
        with Mode():
            inside = lib.neg(x).tolist()
        return inside, lib.neg(x).tolist()
    t, l_ = _both(program, ns)
    assert t == l_ == ([7.0, 7.0], [-1.0, -1.0])
