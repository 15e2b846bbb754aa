"""Parametrizations (torch.nn.utils.parametrize): a parameter computed by modules from the tensors actually stored.

`register_parametrization(module, "weight", P)` moves `weight` into `module.parametrizations.weight.original` (or
`original0`, `original1`, ... when P.right_inverse returns several tensors) and makes `module.weight` a property
that evaluates P(original) at each access. The module's class is swapped for a subclass named
`Parametrized<Class>` that holds those properties, exactly as torch does, so state_dict keys and reprs match.
Assigning to `module.weight` goes through the parametrizations' right_inverse.

>>> import lantern
>>> from lantern.nn.utils import parametrize
>>> class Symmetric(lantern.nn.Module):
...     def forward(self, X):
...         return X.triu() + X.triu(1).transpose(-1, -2)
>>> layer = parametrize.register_parametrization(lantern.nn.Linear(3, 3), "weight", Symmetric())
>>> type(layer).__name__, bool((layer.weight == layer.weight.T).all()), list(layer.state_dict())
('ParametrizedLinear', True, ['bias', 'parametrizations.weight.original'])
"""
import collections.abc
import contextlib

from ... import no_grad
from ..._tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations"]

_cache_depth = [0]
_cache = {}


@contextlib.contextmanager
def cached():
    """Inside the block each parametrized tensor is computed once and reused."""
    _cache_depth[0] += 1
    try:
        yield
    finally:
        _cache_depth[0] -= 1
        if not _cache_depth[0]:
            _cache.clear()


def _register_parameter_or_buffer(module, name, value):
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, holding the stored tensor(s) `original` / `original<i>`."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            with no_grad():
                original.set_(new)  # the stored tensor stays the same object (optimizers may hold it)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, "
                                     f"tuple...). Got element {i} of the sequence with type {type(part).__name__}.")
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            value = self()
            _check_like(value, original_dtype, original_shape, "unparametrized ", "parametrized ",
                        "Registering a parametrization may not change the {what} of the tensor, unless `unsafe` flag "
                        "is enabled.\n")

    def right_inverse(self, value):
        """Store what makes the parametrizations produce `value` (assignment to the parametrized attribute)."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                self.original.set_(value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                stored = getattr(self, f"original{i}")
                if tensor.dtype != stored.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while "
                                     f"`original{i}` has dtype {stored.dtype}")
                stored.set_(tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _check_like(value, dtype, shape, old_label, new_label, prefix):
    """value is a tensor of this dtype and shape; the errors name both sides as `<label>dtype: ...`."""
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    for what, before, after in (("dtype", dtype, value.dtype), ("shape", shape, value.shape)):
        if before != after:
            raise ValueError(prefix.format(what=what) + f"{old_label}{what}: {before}\n{new_label}{what}: {after}")


def _parametrized_state_error(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                       "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                       "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _inject_new_class(module):
    """Give this module its own subclass, where the parametrized attributes' properties will live."""
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": _parametrized_state_error})


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth[0]:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrize `module.<tensor_name>` by `parametrization` (appended if it is parametrized already)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            value = parametrization(current)
            prefix = "Registering a parametrization may not change the {what} of the tensor, unless the `unsafe` " \
                     "flag is enabled.\n"
            _check_like(value, current.dtype, current.shape, f"module.{tensor_name}.",
                        f"parametrization(module.{tensor_name}).", prefix)
            if hasattr(parametrization, "right_inverse"):
                try:
                    inverse = parametrization.right_inverse(value)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(inverse, Tensor):
                        raise ValueError("parametrization.right_inverse must return a tensor. Got: "
                                         f"{type(inverse).__name__}")
                    _check_like(inverse, current.dtype, current.shape, f"module.{tensor_name}.", "returned ",
                                "The tensor returned by parametrization.right_inverse must have the same {what} as "
                                f"module.{tensor_name}, unless the `unsafe` flag is enabled.\n")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
                         f"'{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether `module` has parametrizations (on `tensor_name`, when given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization: `<tensor_name>` becomes a plain parameter/buffer again, holding the
    parametrized value (leave_parametrized) or the stored original; the original class returns with the last one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                original.set_(getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value.detach(), value.requires_grad) if value.requires_grad else value.detach()
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in "
                         "terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class as it was before any parametrization was registered."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)
