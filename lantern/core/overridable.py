"""The `__torch_function__` check of lantern's hand-written public functions, Tensor methods and properties.

PyTorch's Python-level functions begin with `if has_torch_function(...): return handle_torch_function(...)`, and
its C++ bindings do the same before parsing their arguments. lantern's generated bindings test the flag in their
own body; the hand-written ones (lantern.max, F.relu, Tensor.view, `a + b`, `t.grad`) are defined under
`@overridable` (or `overridable_property`), which puts that test in front of them once, where they are defined, so
that the name bound everywhere is this one object from import on (`activation is F.relu` holds; nothing is swapped
later). While no TorchFunctionMode is pushed and no Tensor subclass that overrides `__torch_function__` is alive,
the test is one flag read.

>>> import lantern
>>> @overridable
... def double(input):
...     return input * 2
>>> class Logged(lantern.Tensor):
...     @classmethod
...     def __torch_function__(cls, func, types, args=(), kwargs=None):
...         print("called", func.__name__)
...         return super().__torch_function__(func, types, args, kwargs)
>>> type(double(lantern.ones(2).as_subclass(Logged))).__name__
called double
'Logged'
"""
import functools
import inspect

from . import tensor_impl, torch_function
from .user_warnings import skip_frames_of

# The operators that PyTorch reports to __torch_function__ as the method they run (`a + b` calls Tensor.add).
OPERATOR_METHODS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__isub__": "sub_",
    "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div", "__itruediv__": "div_",
    "__div__": "div", "__idiv__": "div_", "__matmul__": "matmul", "__mod__": "remainder", "__imod__": "remainder_",
    "__pow__": "pow", "__ipow__": "pow_", "__ifloordiv__": "floor_divide_", "__lt__": "lt", "__le__": "le",
    "__gt__": "gt", "__ge__": "ge", "__ne__": "ne", "__neg__": "neg", "__pos__": "positive", "__abs__": "abs",
    "__rand__": "bitwise_and", "__ror__": "bitwise_or", "__rxor__": "bitwise_xor",
}


def overridable(function=None, *, public=None):
    """`function` with the `__torch_function__` check in front. Tensor's operators name the method PyTorch reports
    to the protocol in their place: `@overridable(public="add")` on `__add__` (`a + b` arrives as Tensor.add)."""
    if function is None:
        return functools.partial(overridable, public=public)

    @functools.wraps(function)
    def checked(*args, **kwargs):
        if torch_function.ACTIVE[0]:
            relevant = (*args, *kwargs.values())
            if torch_function.has_torch_function(relevant):
                api = checked if public is None else getattr(tensor_impl.tensor_class, public)
                return torch_function.handle_torch_function(api, relevant, args, kwargs or None)
        return function(*args, **kwargs)
    return _mark_checked(checked, function)


def overridable_operator(function, public):
    """overridable(function, public=public) for one of Tensor's operator methods, which Python calls with
    (self, other) or (self,): the same check, with the arguments passed as they come instead of packed into *args
    and **kwargs (this wrapper is on the path of every `a + b`). Any other signature gets the general wrapper."""
    code = function.__code__
    fixed = not function.__defaults__ and not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    if not fixed or code.co_argcount not in (1, 2) or code.co_kwonlyargcount:
        return overridable(function, public=public)

    def api():  # what __torch_function__ is told was called, as overridable() tells it
        return checked if public is None else getattr(tensor_impl.tensor_class, public)

    if code.co_argcount == 1:
        @functools.wraps(function)
        def checked(self):
            if torch_function.ACTIVE[0] and torch_function.has_torch_function((self,)):
                return torch_function.handle_torch_function(api(), (self,), (self,), None)
            return function(self)
    else:
        @functools.wraps(function)
        def checked(self, other):
            if torch_function.ACTIVE[0] and torch_function.has_torch_function((self, other)):
                return torch_function.handle_torch_function(api(), (self, other), (self, other), None)
            return function(self, other)
    return _mark_checked(checked, function)


def _mark_checked(checked, function):
    skip_frames_of(checked.__code__)
    checked.overridable = True
    checked.unchecked = function  # for wrappers that belong behind the check (lantern.ops.autocast.stage)
    return checked


def overridable_property(fget, fset=None, fdel=None, doc=None):
    """A Tensor property whose getter hands `t.name` to `__torch_function__` as `Tensor.name.__get__`, as PyTorch
    does; use it as `@overridable_property` in place of `@property`."""
    def get(self):
        if torch_function.ACTIVE[0] and torch_function.has_torch_function((self,)):
            prop = inspect.getattr_static(tensor_impl.tensor_class, fget.__name__)
            return torch_function.handle_torch_function(prop.__get__, (self,), (self,), None)
        return fget(self)
    functools.update_wrapper(get, fget)
    get.overridable = True
    return property(get, fset, fdel, doc or fget.__doc__)


def is_overridable(value):
    """Whether value is a function or property made by this module."""
    if isinstance(value, property):
        value = value.fget
    return getattr(value, "overridable", False) is True
