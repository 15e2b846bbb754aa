"""What Tensor gives its Python subclasses: the default `__torch_function__`, which runs the function and wraps
tensor results into the caller's class (PyTorch's torch._tensor._convert), and the check of the hand-written
methods while `__torch_function__` is in use.

A subclass that does not define `__torch_function__` inherits this one, so its instances survive operations:

>>> import lantern
>>> class Tagged(lantern.Tensor):
...     pass
>>> t = lantern.tensor([1., 2.]).as_subclass(Tagged)
>>> type(t * 2).__name__, type(t.max(0).values).__name__, type(lantern.ones(2) + t).__name__
('Tagged', 'Tagged', 'Tagged')
>>> with lantern._C.DisableTorchFunctionSubclass():
...     type(t * 2).__name__
'Tensor'
"""
import inspect

from .core import tensor_impl, torch_function


def _convert(result, cls):
    """result with every tensor in it (inside tuples and lists too) made an instance of cls."""
    if cls is tensor_impl.tensor_class:
        return result
    if isinstance(result, tensor_impl.tensor_class) and not isinstance(result, cls):
        return result.as_subclass(cls)
    if isinstance(result, (tuple, list)):
        converted = [_convert(r, cls) for r in result]
        return type(result)._make(converted) if hasattr(type(result), "_make") else type(result)(converted)
    return result


class TensorSubclassMethods:
    """Tensor's side of the `__torch_function__` protocol (mixed into lantern.Tensor)."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if TensorSubclassMethods not in cls.__bases__:  # lantern.Tensor itself is no subclass of Tensor
            torch_function.note_tensor_subclass(cls)

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, dispatch_sizes_strides_policy=None, dispatch_device=False,
                       dispatch_layout=False):
        """A new leaf of class cls over data's storage (data detached, so sharing its version counter), how
        subclasses' __new__ build their instances: `Tensor._make_subclass(cls, data, requires_grad)`."""
        if not (isinstance(cls, type) and issubclass(cls, tensor_impl.tensor_class)):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                            "possible. Make sure your class inherits from Tensor.")
        with torch_function.DisableTorchFunction():
            made = data.detach()
        made.__class__ = cls
        if require_grad:
            made.requires_grad_(True)
        return made

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Run func as on plain tensors, then return its tensors as instances of cls (unless a type in `types` is
        not a base of cls: then NotImplemented, so that the more derived class answers)."""
        if kwargs is None:
            kwargs = {}
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with torch_function.DisableTorchFunctionSubclass():
            result = func(*args, **kwargs)
            if getattr(func, "__self__", None) in _no_wrap:  # t.grad: the gradient as autograd left it
                return result
            return _convert(result, cls)


# ---- the hand-written methods' check -------------------------------------------------------------------------------
# The generated bindings test the flag themselves; Tensor's hand-written methods (operators, max, to, size, ...) get a
# checking wrapper only while the check is on, so that they cost nothing extra otherwise.

# The operators that PyTorch reports to __torch_function__ as the method they run (`a + b` calls Tensor.add).
OPERATOR_METHODS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__isub__": "sub_",
    "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div", "__itruediv__": "div_",
    "__div__": "div", "__idiv__": "div_", "__matmul__": "matmul", "__mod__": "remainder", "__imod__": "remainder_",
    "__pow__": "pow", "__ipow__": "pow_", "__ifloordiv__": "floor_divide_", "__lt__": "lt", "__le__": "le",
    "__gt__": "gt", "__ge__": "ge", "__ne__": "ne", "__neg__": "neg", "__pos__": "positive", "__abs__": "abs",
    "__rand__": "bitwise_and", "__ror__": "bitwise_or", "__rxor__": "bitwise_xor",
}
# Plumbing that is no part of the protocol: pickling, the protocol itself, and lantern's private helpers.
# __iter__ is no part either: it calls dim and unbind, which are (as in PyTorch).
_UNCHECKED = {"__reduce_ex__", "__setstate__", "__new__", "__init__", "__init_subclass__", "as_subclass", "__iter__"}
_originals = {}  # name -> Tensor's own attribute (None: inherited), while a checking one replaces it


def _checked(name, method, tensor_class):
    def checked(self, *args, **kwargs):
        relevant = (self, *args, *kwargs.values())
        if torch_function.has_torch_function(relevant):
            public = getattr(tensor_class, OPERATOR_METHODS[name]) if name in OPERATOR_METHODS else checked
            return torch_function.handle_torch_function(public, relevant, (self, *args), kwargs or None)
        return method(self, *args, **kwargs)
    checked.__name__, checked.__qualname__, checked.__doc__ = method.__name__, method.__qualname__, method.__doc__
    checked.__wrapped__ = method
    return checked


def hand_written_methods(tensor_class):
    """{name: function} of the Tensor methods written in Python rather than generated from a schema."""
    found = {}
    for klass in reversed(tensor_class.__mro__[:-1]):
        for name, value in vars(klass).items():
            private = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
            if (inspect.isfunction(value) and not hasattr(value, "lantern_op") and not private
                    and name not in _UNCHECKED):
                found[name] = value
    return found


# Properties whose value the default __torch_function__ returns as it is (torch's get_default_nowrap_functions).
_NO_WRAP_PROPERTIES = {"grad"}
_no_wrap = set()  # the checking properties of those, while installed


def _checked_property(name, prop, tensor_class):
    """prop with a getter that hands `t.name` to __torch_function__ as `Tensor.name.__get__`, as PyTorch does."""
    def get(self):
        if torch_function.has_torch_function((self,)):
            return torch_function.handle_torch_function(vars(tensor_class)[name].__get__, (self,), (self,), None)
        return prop.fget(self)
    return property(get, prop.fset, prop.fdel, prop.__doc__)


def public_properties(tensor_class):
    """{name: property} of Tensor's public properties (shape, T, data, grad, ...)."""
    found = {}
    for klass in reversed(tensor_class.__mro__[:-1]):
        for name, value in vars(klass).items():
            if isinstance(value, property) and not name.startswith("_"):
                found[name] = value
    return found


def _switch_checks(active):
    tensor_class = tensor_impl.tensor_class
    if active:
        for name, prop in public_properties(tensor_class).items():
            _originals[name] = vars(tensor_class).get(name)
            setattr(tensor_class, name, _checked_property(name, prop, tensor_class))
            if name in _NO_WRAP_PROPERTIES:
                _no_wrap.add(vars(tensor_class)[name])
        for name, method in hand_written_methods(tensor_class).items():
            _originals[name] = vars(tensor_class).get(name)
            setattr(tensor_class, name, _checked(name, method, tensor_class))
    else:
        for name, original in _originals.items():
            if original is None:
                delattr(tensor_class, name)
            else:
                setattr(tensor_class, name, original)
        _originals.clear()
        _no_wrap.clear()


torch_function.watch(_switch_checks)
