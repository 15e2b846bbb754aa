"""The TorchScript language helpers a program calls in eager code and in compiled code alike (torch.jit): typing
hints (`annotate`, `isinstance`, `Attribute`, `interface`), `script_if_tracing`, and `fork` / `wait` over
lantern.futures.Future.

In eager Python each is what it says: `annotate(T, v)` is v, `isinstance(obj, List[int])` checks the container's
elements, `fork(fn, *args)` runs fn now and returns a completed Future. The script frontend (frontend_emit)
compiles `annotate` to a value of the declared type and `isinstance` to a constant, as torch's does.

>>> from typing import Dict, List, Optional
>>> import lantern
>>> lantern.jit.isinstance([1, 2], List[int]), lantern.jit.isinstance({"a": 1.0}, Dict[str, int])
(True, False)
>>> lantern.jit.isinstance(None, Optional[lantern.Tensor])
True
>>> fut = lantern.jit.fork(lambda x: x * 2, lantern.ones(2))
>>> lantern.jit.wait(fut)
tensor([2., 2.])
"""
import builtins
import collections
import functools
import inspect
import types
import typing

from ..core.state import tls
from ..futures import Future
from ..nn.modules.module import Module
from ..core import user_warnings

__all__ = ["annotate", "isinstance", "Attribute", "interface", "script_if_tracing", "is_tracing", "fork", "wait",
           "Future"]


def annotate(the_type, the_value):
    """`the_value`, declared to have TorchScript type `the_type` (an empty list or dict gets its element types this
    way). In eager code it is returned unchanged."""
    return the_value


_CONTAINERS = {list: "List", dict: "Dict", tuple: "Tuple"}


def isinstance(obj, target_type):
    """Whether `obj` is of `target_type`, which may be a parametrized container (List[int], Dict[str, Tensor],
    Tuple[int, str], Optional[T], Union[...]): containers are checked element by element. An empty container
    matches any element type (with torch's warning that eager mode cannot tell)."""
    if target_type in (typing.List, typing.Dict, typing.Tuple):
        name = target_type._name
        raise RuntimeError(f"Attempted to use {name} without a contained type. Please add a contained type, "
                           f"e.g. {name}[int]")
    origin = typing.get_origin(target_type)
    params = typing.get_args(target_type)
    if origin is None:
        return builtins.isinstance(obj, target_type)
    if origin is typing.Union or _is_union_type(origin):
        return any(isinstance(obj, t) for t in params)
    if not builtins.isinstance(obj, origin):
        return False
    if origin in (list, dict) and len(obj) == 0:
        user_warnings.warn("The inner type of a container is lost when calling torch.jit.isinstance in eager mode. For "
                      "example, List[int] would become list and therefore falsely return True for List[float] or "
                      "List[str].")
        return True
    if origin is list:
        return builtins.all(isinstance(item, params[0]) for item in obj)
    if origin is dict:
        return builtins.all(isinstance(k, params[0]) and isinstance(v, params[1]) for k, v in obj.items())
    if origin is tuple:
        return len(obj) == len(params) and builtins.all(isinstance(item, t) for item, t in zip(obj, params))
    return True


def _is_union_type(origin):
    return origin is types.UnionType  # `int | str`


class Attribute(collections.namedtuple("Attribute", ["value", "type"])):
    """`self.name = Attribute(value, type)` in a module's __init__ declares the attribute's TorchScript type (an
    empty `List[str]`, say); scripting the module gives it the attribute `name` = value of that type."""

    __slots__ = ()


def interface(obj):
    """Declare a class as a TorchScript interface: a module type (subclassing nn.Module directly) or a plain class
    whose methods a compiled attribute of that type must have. Returns the class, marked."""
    if not inspect.isclass(obj):
        raise RuntimeError("interface must be applied to a class")
    is_module_interface = issubclass(obj, Module) and len(obj.mro()) == 3
    if not is_module_interface and len(obj.mro()) > 2:
        raise RuntimeError("TorchScript interface does not support inheritance yet. Please directly inherit from "
                           "'object' or 'nn.Module'.")
    for name, method in vars(obj).items():
        if inspect.isfunction(method) and "return" not in method.__annotations__:
            raise RuntimeError(f"interface declarations must have a return type annotated.: method '{name}' of "
                               f"{obj.__qualname__}")
    obj.__torch_script_interface__ = f"__torch__.{obj.__qualname__}"
    return obj


def is_tracing():
    """Whether a `jit.trace` is recording right now (False inside compiled code, as in torch)."""
    return tls.tracer is not None


def script_if_tracing(fn):
    """`fn` as it is, except while a trace records: then it is compiled with `jit.script` (once) and the compiled
    function runs, so the trace keeps its control flow as a call instead of the branch the example inputs took."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not is_tracing():
            return fn(*args, **kwargs)
        if wrapper._compiled is None:
            from .frontend import script  # cycle: jit.frontend imports this module
            wrapper._compiled = script(fn)
        return wrapper._compiled(*args, **kwargs)

    wrapper._compiled = None
    wrapper.__original_fn = fn
    wrapper.__script_if_tracing_wrapper = True
    return wrapper


def fork(func, *args, **kwargs):
    """Run `func(*args, **kwargs)` as a task and return a Future of its result (torch.jit.fork). In eager code the
    task runs at once, on this thread, as torch's eager fork does; an exception it raises propagates here."""
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future):
    """The result of a forked task (torch.jit.wait): `future.wait()`."""
    return future.wait()
