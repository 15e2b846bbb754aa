"""The __torch_function__ protocol (issue 17 item 2) against torch 2.13: subclasses surviving operations, modes,
the disabling context managers, the handler's order and errors, as_subclass, and lantern.overrides."""
import gc
import inspect
import io
import os
import pickle
import subprocess
import sys
import warnings

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
    "property": lambda lib, s, x: (s.T, s.mT, s.data, s.real, s.shape),
    "iteration": lambda lib, s, x: list(s),
    "format": lambda lib, s, x: f"{s.sum()}",
    "hand_written_function": lambda lib, s, x: (lib.max(s, 0), lib.matmul(s, s.T), lib.where(s > 1, s, 0.0)),
    "nn_function": lambda lib, s, x: lib.nn.functional.mse_loss(lib.nn.functional.relu(s), x),
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


def test_a_layer_and_backward_through_a_subclass():
    got = []
    for lib in LIBS:
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2)
        x = lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        y = layer(x.as_subclass(_subclass(lib)))
        y.sum().backward()
        got.append((type(y).__name__, type(x.grad).__name__, type(layer.weight.grad).__name__, x.grad.tolist()))
    assert got[1][:3] == got[0][:3]
    np.testing.assert_allclose(got[1][3], got[0][3], rtol=1e-6)


def _scalar_tensor(lib):
    """torch's documented tensor-like: no Tensor, a `__torch_function__` and a table of the functions it handles."""
    handled = {lib.mean: lambda d, *args, **kwargs: float(d.value) / d.n,
               lib.add: lambda a, b, *args, **kwargs: ("added", type(a).__name__, type(b).__name__)}

    class ScalarTensor:
        def __init__(self, n, value):
            self.n, self.value = n, value

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func not in handled:
                return NotImplemented
            return handled[func](*args, **(kwargs or {}))
    return ScalarTensor


def test_a_tensor_like_that_is_no_tensor():
    got = []
    for lib in LIBS:
        ScalarTensor = _scalar_tensor(lib)
        d = ScalarTensor(5, 2)
        result = [lib.mean(d), lib.add(lib.ones(1), d), lib.overrides.is_tensor_like(d)]
        with pytest.raises(TypeError, match="all __torch_function__ handlers returned NotImplemented"):
            lib.sum(d)
        got.append(result)
    assert got[1] == got[0]


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


def test_make_subclass_and_the_legacy_constructor_of_a_subclass():
    facts = []
    for lib in LIBS:
        class Made(lib.Tensor):
            @staticmethod
            def __new__(cls, data, requires_grad=False):
                return lib.Tensor._make_subclass(cls, data, requires_grad)
        x = lib.ones(2)
        m = Made(x, True)
        x.add_(1)
        fact = [type(m).__name__, m.requires_grad, m.is_leaf, m._base is None, m.data_ptr() == x.data_ptr(),
                m._version, m.tolist()]
        Plain = _subclass(lib)
        y = lib.ones(2, requires_grad=True)
        aliased, fresh = Plain(y), Plain([1., 2.])
        fact += [type(aliased).__name__, aliased._base is y, type(aliased.grad_fn).__name__,
                 type(fresh).__name__, fresh._base is None, repr(fresh), type(Plain(2, 3)).__name__]
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            lib.Tensor._make_subclass(int, x)
        facts.append(fact)
    assert facts[1] == facts[0]


def test_a_subclass_pickles_and_saves_as_itself():
    got = []
    for lib in LIBS:
        cls = _subclass(lib)
        cls.__qualname__ = name = f"Pickled_{lib.__name__}"  # found by pickle in this module, for this test only
        globals()[name] = cls
        try:
            s = lib.tensor([1., 2.]).as_subclass(cls)
            s.tag = "kept"
            buffer = io.BytesIO()
            lib.save(s, buffer)
            buffer.seek(0)
            loaded = (pickle.loads(pickle.dumps(s)), lib.load(buffer, weights_only=False))
            got.append([(type(t) is cls, t.tag, t.tolist()) for t in loaded])
        finally:
            del globals()[name]
    assert got[1] == got[0] == [(True, "kept", [1., 2.])] * 2


def test_parameter_opts_out_and_stays_plain():
    for lib in LIBS:
        p = lib.nn.Parameter(lib.ones(2))
        assert p.__torch_function__ is lib._C._disabled_torch_function_impl
        assert type(p * 2) is lib.Tensor and type(lib.add(p, 1)) is lib.Tensor


def _public_objects():
    F = lantern.nn.functional
    return [lantern.Tensor.__add__, vars(lantern.Tensor)["max"], lantern.matmul, lantern.max, F.relu, F.linear,
            F.cross_entropy, lantern.linalg.inv, inspect.getattr_static(lantern.Tensor, "grad")]


def test_the_public_objects_never_change_and_the_check_follows_subclasses_and_modes():
    """The check lives in each public function (lantern.core.overridable): nothing is swapped when a subclass or a
    mode switches it on, so references taken at import stay the public objects."""
    gc.collect()
    assert lantern_tf.ACTIVE == [False]
    before = _public_objects()
    with lantern.overrides.BaseTorchFunctionMode():
        assert lantern_tf.ACTIVE == [True]
        assert all(a is b for a, b in zip(_public_objects(), before))
    cls = _subclass(lantern)
    assert lantern_tf.ACTIVE == [True]
    assert all(a is b for a, b in zip(_public_objects(), before))
    layer = lantern.nn.TransformerEncoderLayer(8, 2, 16)  # default activation=F.relu, taken at import
    assert layer.activation_relu_or_gelu == 1
    del cls
    gc.collect()
    assert lantern_tf.ACTIVE == [False]


def test_every_hand_written_public_function_method_and_property_carries_the_check():
    from lantern import _overridable_functions, _tensor_subclasses
    from lantern.core.overridable import is_overridable
    unchecked = [f"{namespace.__name__}.{name}" for namespace in _overridable_functions.namespaces()
                 for name, fn in _overridable_functions.hand_written_functions(namespace).items()
                 if not is_overridable(fn)]
    # what an out-of-tree device adds (Tensor.openreg, is_openreg) is the user's own plain method, as in PyTorch
    registered = {name for name, value in vars(lantern.Tensor).items()
                  if getattr(getattr(value, "fget", value), "__module__", "") == "lantern.utils.backend_registration"}
    unchecked += [f"Tensor.{name}" for name in _tensor_subclasses.hand_written_methods(lantern.Tensor)
                  if not is_overridable(getattr(lantern.Tensor, name)) and name not in registered]
    unchecked += [f"Tensor.{name}" for name, value in inspect.getmembers(lantern.Tensor)
                  if isinstance(value, property) and not name.startswith("_") and not is_overridable(value)
                  and name not in registered]
    assert unchecked == []


def test_a_warning_inside_a_checked_function_names_the_callers_line():
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.functional.softmax(lib.ones(2, 3))  # implicit dim
        assert [w.filename for w in caught] == [__file__], lib.__name__


def test_the_check_stays_on_while_a_mode_runs_its_handler():
    """The mode is off the stack while its own __torch_function__ runs, but the wrappers stay installed."""
    installed = []

    class Watch(lantern.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            installed.append(hasattr(lantern.Tensor.__add__, "__wrapped__") and lantern_tf.ACTIVE[0])
            return func(*args, **(kwargs or {}))
    with Watch():
        lantern.ones(2) + 1
    assert installed == [True, True]  # ones, then add


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


def test_a_subclass_survives_linalg_and_fft():
    got = []
    for lib in LIBS:
        s = lib.tensor([[1., 5.], [3., 2.]]).as_subclass(_subclass(lib))
        got.append(_class_names((lib.linalg.norm(s), lib.linalg.inv(s), lib.fft.fft(s), lib.special.expit(s))))
    assert got[1] == got[0]


COMPAT_PROGRAM = """
import torch
from torch.overrides import TorchFunctionMode
from torch._C import DisableTorchFunctionSubclass
class Plain(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl
class Tagged(torch.Tensor):
    pass
t = torch.ones(2).as_subclass(Tagged)
print(type(t * 2).__name__, type(torch.ones(2).as_subclass(Plain) * 2).__name__)
with DisableTorchFunctionSubclass():
    print(type(t + 1).__name__)
class Log(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        print(func.__name__)
        return func(*args, **(kwargs or {}))
with Log():
    torch.nn.functional.relu(torch.ones(2))
"""


def test_an_unmodified_torch_program_through_compat(tmp_path):
    path = tmp_path / "program.py"
    path.write_text(COMPAT_PROGRAM)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    runs = [subprocess.run([sys.executable, *prefix, str(path)], capture_output=True, text=True, env=env)
            for prefix in ([], ["-m", "lantern.compat"])]
    assert runs[0].stdout == runs[1].stdout == "Tagged Tensor\nTensor\nones\nrelu\n", runs[1].stderr
