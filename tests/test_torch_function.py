"""The __torch_function__ protocol (issue 17 item 2) against torch 2.13: subclasses surviving operations, modes,
the disabling context managers, the handler's order and errors, as_subclass, and lantern.overrides."""
import gc
import inspect

import numpy as np
import pytest
import torch

import lantern
from lantern.core import torch_function as lantern_tf
from lantern.ops.keyword_aliases import REQUIRED

LIBS = [torch, lantern]


def _subclass(lib):
    class Tagged(lib.Tensor):
        pass
    return Tagged


# Each program runs on both libraries; the result's class names (tuples looked into) must agree.
PROGRAMS = {
    "binding": lambda lib, s, x: lib.add(x, s, alpha=2),
    "method": lambda lib, s, x: s.sum(0),
    "method_with_subclass_argument": lambda lib, s, x: x.mul(s),
    "operator": lambda lib, s, x: s * 2,
    "reflected_operator": lambda lib, s, x: 2 - s,
    "plain_then_subclass": lambda lib, s, x: x + s,
    "in_place": lambda lib, s, x: s.clone().add_(1),
    "indexing": lambda lib, s, x: s[0],
    "negation": lambda lib, s, x: -s,
    "named_tuple": lambda lib, s, x: s.max(0),
    "list_result": lambda lib, s, x: s.split(1),
    "tensor_list_argument": lambda lib, s, x: lib.cat([x, s]),
    "conversion": lambda lib, s, x: s.to(lib.float64),
    "view": lambda lib, s, x: s.view(3, 2),
    "comparison": lambda lib, s, x: s > 0,
    "detach": lambda lib, s, x: s.detach(),
    "python_number": lambda lib, s, x: s.sum().item(),
}


def _class_names(value):
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, [_class_names(v) for v in value]]
    return type(value).__name__


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_a_subclass_survives_operations_as_in_torch(program):
    got = []
    for lib in LIBS:
        data = np.arange(6, dtype=np.float32).reshape(2, 3)
        s = lib.tensor(data).as_subclass(_subclass(lib))
        result = PROGRAMS[program](lib, s, lib.tensor(data))
        got.append(_class_names(result))
    assert got[1] == got[0]


def _logging_mode(lib, log):
    class Log(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            log.append((func.__name__, [t.__name__ for t in types]))
            return func(*args, **(kwargs or {}))
    return Log()


def test_a_mode_sees_the_calls_torch_reports():
    logs = []
    for lib in LIBS:
        log = []
        x = lib.ones(2, 3)
        s = x.as_subclass(_subclass(lib))
        with _logging_mode(lib, log):
            lib.zeros(2)
            lib.add(x, x)
            lib.add(x, s, alpha=2)
            x + s
            3 * x
            x.sum(0)
            x.sum(0, keepdim=True)
            x[0]
            x.max(1)
            x.view(6)
        logs.append(log)
    assert logs[1] == logs[0]


def test_a_binding_hands_on_keyword_only_arguments_and_drops_defaults():
    """lantern's bindings have fixed signatures, so the handler gets the positional parameters positionally and
    the keyword-only ones as keywords, leaving out those at their defaults (torch passes the call as written)."""
    for lib in LIBS:
        log = []

        class Record(lib.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append((len(args), kwargs))
                return func(*args, **(kwargs or {}))
        x = lib.ones(2)
        with Record():
            lib.add(x, x, alpha=2)
            lib.add(x, x)
        assert log == [(2, {"alpha": 2}), (2, None)], lib.__name__


def test_nested_modes_run_innermost_first_and_calls_inside_a_mode_go_below_it():
    orders = []
    for lib in LIBS:
        order = []

        class Named(lib.overrides.TorchFunctionMode):
            def __init__(self, name):
                super().__init__()
                self.name = name

            def __torch_function__(self, func, types, args=(), kwargs=None):
                order.append(self.name)
                return func(*args, **(kwargs or {}))
        with Named("outer"), Named("inner"):
            lib.ones(1).neg()
        orders.append(order)
    assert orders[1] == orders[0] == ["inner", "outer", "inner", "outer"]


def test_disable_torch_function_subclass_and_disable_torch_function():
    seen = []
    for lib in LIBS:
        log = []
        s = lib.ones(2).as_subclass(_subclass(lib))
        states = [lib._C._is_torch_function_enabled()]
        with lib._C.DisableTorchFunctionSubclass():
            states += [lib._C._is_torch_function_enabled(), type(s + 1).__name__]
            with _logging_mode(lib, log):
                s + 1  # modes still run
        with _logging_mode(lib, log), lib._C.DisableTorchFunction():
            s + 1  # nothing runs
        states += [lib._C._is_torch_function_enabled(), len(log)]
        seen.append(states)
    assert seen[1] == seen[0]


def test_subclasses_answer_before_their_bases_and_not_implemented_everywhere_is_a_type_error():
    for lib in LIBS:
        calls = []

        class Base(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                calls.append("Base")
                return NotImplemented

        class Derived(Base):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                calls.append("Derived")
                return NotImplemented
        b = lib.ones(1).as_subclass(Base)
        d = lib.ones(1).as_subclass(Derived)
        with pytest.raises(TypeError, match="all __torch_function__ handlers returned NotImplemented"):
            lib.add(b, d)
        assert calls == ["Derived", "Base"], lib.__name__


def test_as_subclass_is_an_alias_in_the_graph():
    facts = []
    for lib in LIBS:
        x = lib.tensor([1., 2.], requires_grad=True)
        s = x.as_subclass(_subclass(lib))
        (s * s).sum().backward()
        facts.append((s._base is x, type(s.grad_fn).__name__, s.requires_grad, s.is_leaf, x.grad.tolist(),
                      s.data_ptr() == x.data_ptr()))
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            x.as_subclass(int)
    assert facts[1] == facts[0]


def test_parameter_opts_out_and_stays_plain():
    for lib in LIBS:
        p = lib.nn.Parameter(lib.ones(2))
        assert p.__torch_function__ is lib._C._disabled_torch_function_impl
        assert type(p * 2) is lib.Tensor and type(lib.add(p, 1)) is lib.Tensor


def test_the_check_is_off_and_the_methods_unwrapped_while_no_subclass_or_mode_is_alive():
    gc.collect()
    assert lantern_tf.ACTIVE == [False]
    add, max_ = vars(lantern.Tensor)["__add__"], vars(lantern.Tensor)["max"]
    with lantern.overrides.BaseTorchFunctionMode():
        assert lantern_tf.ACTIVE == [True]
        assert lantern.Tensor.__add__ is not add and lantern.Tensor.__add__.__wrapped__ is add
    assert lantern_tf.ACTIVE == [False] and lantern.Tensor.__add__ is add and lantern.Tensor.max is max_
    cls = _subclass(lantern)
    assert lantern_tf.ACTIVE == [True]
    del cls
    gc.collect()
    assert lantern_tf.ACTIVE == [False]


def test_has_torch_function_family_matches_torch():
    for lib in LIBS:
        s = lib.ones(1).as_subclass(_subclass(lib))
        p = lib.nn.Parameter(lib.ones(1))
        o = lib.overrides
        got = (o.has_torch_function((lib.ones(1), 1)), o.has_torch_function((s,)), o.has_torch_function_unary(p),
               o.has_torch_function_variadic(1, s), o.is_tensor_like(s), o.is_tensor_like(lib.ones(1)),
               o.is_tensor_like(1.0))
        assert got == (False, True, False, True, True, True, False), lib.__name__


def test_handle_torch_function_from_a_python_function():
    results = []
    for lib in LIBS:
        def double(x):
            if lib.overrides.has_torch_function_unary(x):
                return lib.overrides.handle_torch_function(double, (x,), x)
            return x * 2
        seen = []

        class Watch(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append((func is double, kwargs))
                return super().__torch_function__(func, types, args, kwargs)
        out = double(lib.ones(2).as_subclass(Watch))
        results.append((type(out).__name__, out.tolist(), seen[0]))
    assert results[1] == results[0]


def test_overridable_functions_and_testing_overrides():
    overridable = lantern.overrides.get_overridable_functions()
    assert lantern.add in overridable[lantern] and lantern.Tensor.add in overridable[lantern.Tensor]
    assert lantern.overrides.resolve_name(lantern.add) == "lantern.add"
    assert lantern.overrides.resolve_name(lantern.Tensor.add) == "lantern.Tensor.add"
    assert lantern.overrides.is_tensor_method_or_property(lantern.Tensor.add)
    assert not lantern.overrides.is_tensor_method_or_property(lantern.add)
    assert lantern.tensor in lantern.overrides.get_ignored_functions()
    dummies = lantern.overrides.get_testing_overrides()
    assert str(inspect.signature(dummies[lantern.add])) == "(input, other, *, alpha=1, out=None)"
    assert dummies[lantern.add](1, 2) == -1


def test_every_overridable_function_reaches_a_mode():
    """Each overridable lantern function (generated or hand-written, in every namespace) hands its call to the mode
    before its own argument checks."""
    class Refuse(lantern.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return ("handled", func)
    with Refuse():
        overridable = lantern.overrides.get_overridable_functions()
        functions = [fn for namespace, fns in overridable.items() if namespace is not lantern.Tensor for fn in fns]
        assert len(functions) > 800
        for fn in functions:
            parameters = inspect.signature(fn).parameters.values()
            required = [p for p in parameters if p.default in (inspect.Parameter.empty, REQUIRED)]
            args = [None for p in required if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            args += [1 for p in parameters if p.kind is p.VAR_POSITIONAL]
            kwargs = {p.name: None for p in required if p.kind is p.KEYWORD_ONLY}
            assert fn(*args, **kwargs) == ("handled", fn), fn.__name__


def test_hand_written_functions_follow_torch_on_what_is_ignored():
    """lantern's list of functions that never reach __torch_function__ holds every one torch ignores, and only
    functions that torch does not list as overridable."""
    from lantern import _overridable_functions
    torch_ignored = torch.overrides.get_ignored_functions()
    torch_overridable = {f for fns in torch.overrides.get_overridable_functions().values() for f in fns}
    for namespace in _overridable_functions.namespaces():
        torch_namespace = torch
        for part in namespace.__name__.split(".")[1:]:
            torch_namespace = getattr(torch_namespace, part)
        ignored = _overridable_functions.IGNORED[namespace.__name__]
        written = set(_overridable_functions.hand_written_functions(namespace)) | ignored
        assert {n for n in written if getattr(torch_namespace, n, None) in torch_ignored} <= ignored
        assert not {n for n in ignored if getattr(torch_namespace, n, None) in torch_overridable}


def test_a_subclass_survives_hand_written_functions():
    got = []
    for lib in LIBS:
        s = lib.tensor([[1., 5.], [3., 2.]]).as_subclass(_subclass(lib))
        results = (lib.max(s, 0), lib.matmul(s, s), lib.nn.functional.relu(s), lib.linalg.norm(s), lib.fft.fft(s))
        got.append(_class_names(results))
    assert got[1] == got[0]
