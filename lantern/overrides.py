"""torch.overrides: the public face of the `__torch_function__` protocol (lantern.core.torch_function runs it).

A TorchFunctionMode sees every overridable call made inside its `with` block, factories included:

>>> import lantern
>>> class Log(lantern.overrides.TorchFunctionMode):
...     def __torch_function__(self, func, types, args=(), kwargs=None):
...         print(resolve_name(func))
...         return func(*args, **(kwargs or {}))
>>> with Log():
...     y = lantern.zeros(2).add(1) * 3
lantern.zeros
lantern.Tensor.add
lantern.Tensor.mul
>>> has_torch_function((y,)), is_tensor_like(y), is_tensor_like(3)
(False, True, False)
"""
import functools
import inspect

import lantern
from . import _overridable_functions as _functions
from ._tensor_subclasses import hand_written_methods
from .core import tensor_impl
from .core import torch_function as _tf
from .core.torch_function import (  # noqa: F401
    _disabled_torch_function_impl, has_torch_function, has_torch_function_unary, has_torch_function_variadic,
)
from .ops import binding

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides", "handle_torch_function",
           "has_torch_function", "resolve_name", "is_tensor_like", "is_tensor_method_or_property",
           "wrap_torch_function"]


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """For a Python function that takes part in the protocol: call the innermost mode's, then each overriding
    argument's `__torch_function__` for public_api(*args, **kwargs).

    >>> def double(x):
    ...     if has_torch_function_unary(x):
    ...         return handle_torch_function(double, (x,), x)
    ...     return x * 2
    """
    return _tf.handle_torch_function(public_api, relevant_args, args, kwargs)


class TorchFunctionMode:
    """Overrides every overridable function inside `with mode:` (subclass it and define `__torch_function__`).
    Calls made inside the mode's own `__torch_function__` go to the modes below it."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _tf.push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _tf.pop_mode()


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs each function unchanged: a base for modes that only watch."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def is_tensor_like(inp):
    """A plain Tensor, or an object whose class has a `__torch_function__`."""
    return type(inp) is tensor_impl.tensor_class or hasattr(inp, "__torch_function__")


def _tensor_methods():
    cls = tensor_impl.tensor_class
    methods = {name: fn for name, fn in vars(cls).items() if callable(fn) and hasattr(fn, "lantern_op")}
    methods.update({name: getattr(cls, name) for name in hand_written_methods(cls)})
    return methods


def get_overridable_functions():
    """{namespace: [functions]} of what reaches `__torch_function__`: lantern's functions generated from the op
    registry, the hand-written ones of lantern, nn.functional, linalg, fft and special (but those that
    get_ignored_functions names), and every Tensor method and operator."""
    overridable = {lantern: [getattr(lantern, op.name) for op in binding.functional_ops()
                             if hasattr(getattr(lantern, op.name, None), "lantern_op")]}
    for namespace in _functions.namespaces():
        overridable.setdefault(namespace, []).extend(
            getattr(namespace, name) for name in _functions.hand_written_functions(namespace))
    overridable[tensor_impl.tensor_class] = list(_tensor_methods().values())
    return overridable


def _names():
    names = {}
    for namespace, functions in get_overridable_functions().items():
        prefix = "lantern.Tensor" if namespace is tensor_impl.tensor_class else namespace.__name__
        for fn in functions:  # an alias (Tensor.multiply) names its function only if nothing else does
            names.setdefault(fn, f"{prefix}.{fn.__name__}")
    return names


def resolve_name(f):
    """The dotted name of a function passed to `__torch_function__` (None for one that is not overridable)."""
    return _names().get(f)


def is_tensor_method_or_property(func):
    """Whether func is a Tensor method (or a property's __get__), as passed to `__torch_function__`."""
    return func in _tensor_methods().values() or getattr(func, "__name__", None) == "__get__"


def get_ignored_functions():
    """The public functions that never reach `__torch_function__` (settings, storage, tensor construction from
    Python data, ...), as torch.overrides names them."""
    return {getattr(namespace, name) for namespace in _functions.namespaces()
            for name in _functions.IGNORED[namespace.__name__] if hasattr(namespace, name)}


def get_testing_overrides():
    """{overridable function: a dummy with its signature that returns -1}, for testing an override of each."""
    dummies = {}
    for functions in get_overridable_functions().values():
        for fn in functions:
            def dummy(*args, **kwargs):
                return -1
            try:
                dummy.__signature__ = inspect.signature(fn)
            except (TypeError, ValueError):
                pass
            dummies[fn] = dummy
    return dummies


def wrap_torch_function(dispatcher):
    """Decorator: the function takes part in the protocol, its relevant arguments being what
    `dispatcher(*args, **kwargs)` returns."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner
