"""What Tensor gives its Python subclasses: the default `__torch_function__`, which runs the function and wraps
tensor results into the caller's class (PyTorch's torch._tensor._convert). (The hand-written methods' own check
is lantern.core.overridable.)

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
            if getattr(func, "__self__", None) is _grad_property():  # t.grad: the gradient as autograd left it
                return result
            return _convert(result, cls)



def _grad_property():
    """Tensor.grad's property: its value is returned as it is (torch's get_default_nowrap_functions)."""
    return inspect.getattr_static(tensor_impl.tensor_class, "grad")


# Plumbing that is no part of the protocol: pickling, the protocol itself, and lantern's private helpers.
# __iter__ is no part either: it calls dim and unbind, which are (as in PyTorch).
_UNCHECKED = {"__reduce_ex__", "__setstate__", "__new__", "__init__", "__init_subclass__", "as_subclass", "__iter__"}


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
