"""__torch_dispatch__ and dispatch modes (lantern/ops/python_key.py, lantern/utils/_python_dispatch.py), each
program run on torch and on lantern in this process and compared."""
import importlib

import numpy as np
import pytest
import torch

import lantern
from lantern.core.state import tls


def _dispatch_module(lib):
    return importlib.import_module(f"{lib.__name__}.utils._python_dispatch")


def _pytree(lib):
    return importlib.import_module(f"{lib.__name__}.utils._pytree")


def _recording_mode(lib):
    """A mode that records each op's packet name ('aten.add') and runs it."""
    class Recorder(_dispatch_module(lib).TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))
    return Recorder()


def _wrapper_class(lib):
    """The logging tensor of docs/internals/torch-dispatch.md: wraps `elem`, logs each op's packet name."""
    tree_map = _pytree(lib).tree_map

    class Logging(lib.Tensor):
        log = []

        @staticmethod
        def __new__(cls, elem):
            return lib.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(), dtype=elem.dtype,
                                                     device=elem.device, requires_grad=elem.requires_grad)

        def __init__(self, elem):
            self.elem = elem

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            cls.log.append(str(func.overloadpacket))

            def unwrap(t):
                return t.elem if isinstance(t, Logging) else t

            def wrap(t):
                return Logging(t) if isinstance(t, lib.Tensor) and not isinstance(t, Logging) else t
            return tree_map(wrap, func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {})))
    return Logging


# Programs whose ops below autograd are the same ATen ops in both libraries.
PROGRAMS = {
    "add": lambda m, x: x + 1,
    "add_alpha": lambda m, x: m.add(x, x, alpha=2),
    "sum_mul": lambda m, x: (x * x).sum(),
    "mm_relu": lambda m, x: m.relu(m.mm(x, x.t())),
    "view_cat": lambda m, x: m.cat([x.view(-1), x.reshape(-1)]),
    "factory": lambda m, x: m.zeros(2, 3) + x,
    "bmm": lambda m, x: m.bmm(m.stack([x, x]), m.stack([x.t(), x.t()])),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_mode_sees_the_ops_torch_sees(name):
    program = PROGRAMS[name]
    seen = {}
    for lib in (torch, lantern):
        x = lib.tensor(np.arange(6.).reshape(2, 3))
        with _recording_mode(lib) as mode:
            result = program(lib, x)
        seen[lib.__name__] = (mode.ops, result.tolist())
    assert seen["lantern"] == seen["torch"]


def test_a_mode_runs_below_autograd():
    """The handler's own results carry no history (autograd is above it); the caller's result does."""
    outcome = {}
    for lib in (torch, lantern):
        inner = []

        class Watch(_dispatch_module(lib).TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                inner.append(out.grad_fn is None)
                return out
        x = lib.ones(3, requires_grad=True)
        with Watch():
            y = x * 2
        outcome[lib.__name__] = (inner, y.grad_fn is not None, y.requires_grad)
    assert outcome["lantern"] == outcome["torch"] == ([True], True, True)


def test_backward_under_a_mode_sees_the_derivative_ops():
    seen = {}
    for lib in (torch, lantern):
        x = lib.tensor([1., 2., 3.], requires_grad=True)
        y = (x * x).sum()
        with _recording_mode(lib) as mode:
            y.backward()
        seen[lib.__name__] = ([op for op in mode.ops if op in ("aten.mul", "aten.add", "aten.expand")],
                              x.grad.tolist())
    assert seen["lantern"] == seen["torch"]


def test_mode_stack_nesting_and_popping():
    """The innermost mode runs first, off the stack while its handler runs; the outer one then sees the op."""
    outcome = {}
    for lib in (torch, lantern):
        pd = _dispatch_module(lib)
        events = []

        class Named(pd.TorchDispatchMode):
            def __init__(self, name):
                super().__init__()
                self.name = name

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                current = pd._get_current_dispatch_mode()
                events.append((self.name, None if current is None else current.name))
                return func(*args, **(kwargs or {}))
        with Named("outer") as outer, Named("inner"):
            lib.ones(1)
            stack = [m.name for m in pd._get_current_dispatch_mode_stack()]
            with pd._disable_current_modes() as disabled:
                lib.ones(1)
                inside = pd._get_current_dispatch_mode_stack()
            disabled = [m.name for m in disabled]
        assert pd._get_current_dispatch_mode() is None and outer.name == "outer"
        outcome[lib.__name__] = (events, stack, disabled, inside)
    assert outcome["lantern"] == outcome["torch"]
    assert not tls.observed and tls.dispatch_modes == ()


def test_pop_mode_of_an_empty_stack_raises_as_torch():
    with pytest.raises(RuntimeError) as expected:
        _dispatch_module(torch)._pop_mode()
    with pytest.raises(RuntimeError) as got:
        _dispatch_module(lantern)._pop_mode()
    assert str(got.value) == str(expected.value)


def test_handler_arguments_drop_defaults_and_split_kwargs():
    seen = {}
    for lib in (torch, lantern):
        calls = []

        class Args(_dispatch_module(lib).TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                calls.append(([type(a).__name__ for a in args], sorted(kwargs or {}), types))
                return func(*args, **(kwargs or {}))
        x = lib.ones(2)
        with Args():
            lib.add(x, x)
            lib.add(x, x, alpha=3)
            lib.mul(x, 2)
        seen[lib.__name__] = calls
    assert seen["lantern"] == seen["torch"]


def test_wrapper_subclass_metadata():
    outcome = {}
    for lib in (torch, lantern):
        class Empty(lib.Tensor):
            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                return NotImplemented
        t = lib.Tensor._make_wrapper_subclass(Empty, (2, 3), strides=(1, 2), dtype=lib.float64,
                                              requires_grad=True)
        u = lib.Tensor._make_wrapper_subclass(Empty, [4])
        outcome[lib.__name__] = (type(t).__name__, tuple(t.shape), t.stride(), str(t.dtype).split(".")[1],
                                 str(t.device), t.requires_grad, t.is_leaf, t.data_ptr(), tuple(u.shape), u.stride(),
                                 str(u.dtype).split(".")[1],
                                 _dispatch_module(lib).is_traceable_wrapper_subclass(t))
    assert outcome["lantern"] == outcome["torch"]


def test_wrapper_subclass_needs_a_handler():
    for lib in (torch, lantern):
        with pytest.raises(TypeError, match="must define __torch_dispatch__"):
            lib.Tensor._make_wrapper_subclass(lib.Tensor, (2,))


def test_all_handlers_not_implemented_is_a_type_error():
    for lib in (torch, lantern):
        class Refuses(lib.Tensor):
            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                return NotImplemented
        r = lib.Tensor._make_wrapper_subclass(Refuses, (2,))
        with pytest.raises(TypeError, match=r"Multiple dispatch failed for '.*aten\.add\.[a-zA-Z]+'; all "
                                            r"__torch_dispatch__ handlers returned NotImplemented:\n\n  - tensor "
                                            r"subclass <class '.*Refuses'>"):
            lib.add(r, r)


def test_logging_tensor_forward_backward_matches_torch():
    outcome = {}
    for lib in (torch, lantern):
        Logging = _wrapper_class(lib)
        w = Logging(lib.tensor([[1., 2.], [3., 4.]])).requires_grad_()
        x = Logging(lib.tensor([[0.5, -1.], [2., 0.]]))
        y = lib.relu(x @ w).sum()
        forward_ops = list(Logging.log)
        y.backward()  # the backward ops are each library's derivative formulas: they differ after ones_like
        outcome[lib.__name__] = (type(y).__name__, y.elem.item(), type(w.grad).__name__, w.grad.elem.tolist(),
                                 [op for op in forward_ops if op != "aten.detach"],  # torch's relu saves a detach
                                 Logging.log[len(forward_ops)])
    assert outcome["lantern"] == outcome["torch"]


def test_wrapper_subclass_mixed_with_plain_tensors_and_modes():
    """A plain tensor beside a wrapper reaches the wrapper's handler; a mode runs before the subclass, with the
    subclass among `types`."""
    outcome = {}
    for lib in (torch, lantern):
        Logging = _wrapper_class(lib)
        types_seen = []

        class Types(_dispatch_module(lib).TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                types_seen.append([t.__name__ for t in types])
                return func(*args, **(kwargs or {}))
        a = Logging(lib.ones(3))
        with Types():
            b = a * lib.full((3,), 2.)
        outcome[lib.__name__] = (types_seen, type(b).__name__, b.elem.tolist(), Logging.log)
    assert outcome["lantern"] == outcome["torch"]


def test_no_mode_leaves_the_hot_path_alone():
    """The dispatcher's one hot-path flag is off once every mode has exited, even after an error inside one."""
    class Boom(_dispatch_module(lantern).TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise ValueError("boom")
    with pytest.raises(ValueError):
        with Boom():
            lantern.ones(1)
    assert not tls.observed and tls.dispatch_modes == () and tls.grad_enabled


def test_dispatch_keys_name_the_python_key_and_why():
    from lantern.ops import dispatcher, registry
    mul = registry.get("mul")
    Logging = _wrapper_class(lantern)
    w, x = Logging(lantern.ones(2)), lantern.ones(2, requires_grad=True)
    assert dispatcher.explain_keys(mul, (x.detach(), w)) == [
        (lantern.core.dispatch_keys.DispatchKey.Python, "input 1 is a wrapper subclass (Logging)")]
    with _recording_mode(lantern):
        keys = dispatcher.dispatch_keys(mul, (x, x))
    assert [k.name for k in keys] == ["Autograd", "Python", "CPU"]


def _flattenable(lib):
    """A wrapper subclass with torch's __tensor_flatten__ / __tensor_unflatten__ protocol (two inner tensors)."""
    Logging = _wrapper_class(lib)

    class Pair(Logging):
        @staticmethod
        def __new__(cls, elem, other=None):
            return Logging.__new__(cls, elem)

        def __init__(self, elem, other=None):
            self.elem, self.other = elem, elem * 0 if other is None else other

        def __tensor_flatten__(self):
            return ["elem", "other"], {"tag": 1}

        @staticmethod
        def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
            return Pair(inner["elem"], inner["other"])
    return Pair


def test_traceable_wrapper_subclasses_and_transform_subclass():
    outcome = {}
    for lib in (torch, lantern):
        pd = _dispatch_module(lib)
        Pair = _flattenable(lib)
        p = Pair(lib.tensor([1., 2.]))
        doubled = pd.transform_subclass(p, lambda name, t: t * 2)
        outcome[lib.__name__] = (pd.is_traceable_wrapper_subclass(p), pd.is_traceable_wrapper_subclass_type(Pair),
                                 pd.is_traceable_wrapper_subclass(lib.ones(1)), type(doubled).__name__,
                                 doubled.elem.tolist(), doubled.other.tolist())
    assert outcome["lantern"] == outcome["torch"]


def test_return_and_correct_aliasing_returns_the_tensors_written():
    outcome = {}
    for lib in (torch, lantern):
        pd = _dispatch_module(lib)

        class Aliasing(lib.Tensor):
            @staticmethod
            def __new__(cls, elem):
                return lib.Tensor._make_wrapper_subclass(cls, elem.size(), dtype=elem.dtype)

            def __init__(self, elem):
                self.elem = elem

            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                def unwrap(t):
                    return t.elem if isinstance(t, Aliasing) else t
                out = func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})
                return pd.return_and_correct_aliasing(func, args, kwargs, Aliasing(out))
        a = Aliasing(lib.ones(2))
        same = a.add_(1) is a
        out = Aliasing(lib.zeros(2))
        written = lib.add(a, a, out=out) is out
        outcome[lib.__name__] = (same, written, a.elem.tolist(), out.elem.tolist())
    assert outcome["lantern"] == outcome["torch"] == (True, True, [2., 2.], [4., 4.])


def test_values_leave_a_wrapper_through_its_handler_only():
    outcome = {}
    for lib in (torch, lantern):
        Logging = _wrapper_class(lib)
        s, v = Logging(lib.tensor(2.5)), Logging(lib.ones(3, requires_grad=True))
        values = (s.item(), float(s), bool(s), list(Logging.log))
        errors = []
        for call in (v.tolist, v.numpy):
            with pytest.raises(RuntimeError) as info:
                call()
            errors.append(str(info.value))
        outcome[lib.__name__] = (values, errors)
    assert outcome["lantern"] == outcome["torch"]
