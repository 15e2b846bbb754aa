"""Parameter and Buffer: the tensors a Module registers when they are assigned as attributes (torch.nn.parameter).

A Parameter is a leaf Tensor of its own class that shares the storage (and version counter) of the data it was
made from and requires grad by default. Ops on it return plain Tensors.

>>> import lantern
>>> w = lantern.nn.Parameter(lantern.tensor([1., 2.]))
>>> w
Parameter containing:
tensor([1., 2.], requires_grad=True)
>>> type(w * 2).__name__, w.is_leaf
('Tensor', True)
>>> b = lantern.nn.Buffer(lantern.zeros(2), persistent=False)
>>> isinstance(b, lantern.nn.Buffer), b.persistent
(True, False)
"""
import lantern
from ..core.tensor_impl import TensorImpl
from ..core.torch_function import _disabled_torch_function_impl
from .._tensor import Tensor

__all__ = ["Parameter", "UninitializedParameter", "is_lazy", "Buffer", "UninitializedBuffer",
           "UninitializedTensorMixin"]


def _share(cls, data):
    """A new object of class `cls` over `data`'s storage, sizes, strides and version counter, with no history."""
    t = object.__new__(cls)
    t._storage, t._size, t._stride, t._offset = data._storage, data._size, data._stride, data._offset
    t.dtype, t._backend, t._nd, t._nd_gen = data.dtype, data._backend, data._nd, data._nd_gen
    t._vc = data._vc
    t._base = None
    return t


def _flagged(instance, flag):
    """Whether instance is a tensor marked with the attribute `flag` (how a plain tensor passes for a Parameter or
    a Buffer in isinstance)."""
    return isinstance(instance, TensorImpl) and getattr(instance, flag, False)


class _ParameterMeta(type):
    """isinstance(t, Parameter) also holds for a tensor flagged `_is_param` (as torch allows for subclasses)."""

    def __instancecheck__(cls, instance):
        return (cls is Parameter and _flagged(instance, "_is_param")) or super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A Tensor that a Module treats as a learnable weight: assigning one to a Module attribute registers it.

    `Parameter(data=None, requires_grad=True)`; with no data it holds an empty float tensor."""

    __torch_function__ = _disabled_torch_function_impl  # ops on a Parameter return plain Tensors, as in torch

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = lantern.empty(0)
        if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t = _share(cls, data)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with lantern.no_grad():
            result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self, *, tensor_contents=None):
        return "Parameter containing:\n" + super().__repr__(tensor_contents=tensor_contents)

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        state = _user_state(self)
        return (_rebuild_parameter, (self.data, self.requires_grad, state, type(self)))


_TENSOR_SLOTS = frozenset(("_requires_grad", "_grad_fn", "_is_inference", "_grad", "_output_nr", "_autograd"))


def _user_state(t):
    """Attributes a user set on the tensor (torch pickles these; gradients and hooks are not saved)."""
    return {k: v for k, v in t.__dict__.items() if k not in _TENSOR_SLOTS}


def _rebuild_parameter(data, requires_grad, state, cls=Parameter):
    p = cls(data, requires_grad)
    p.__dict__.update(state)
    return p


class _BufferMeta(type):
    """isinstance(t, Buffer) holds for any tensor that Buffer() flagged with `_is_buffer`."""

    def __instancecheck__(cls, instance):
        return (cls is Buffer and _flagged(instance, "_is_buffer")) or super().__instancecheck__(instance)


def _mark_buffer(t, persistent):
    """Flag t as a buffer (isinstance(t, Buffer) then holds), which module attribute assignment registers."""
    t.persistent = persistent
    t._is_buffer = True
    return t


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor as module state that is not a parameter: `self.x = Buffer(t, persistent=False)` registers a
    buffer. `Buffer(t)` returns a detached alias of t (a plain Tensor) flagged as a buffer."""

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = lantern.empty(0)
        return _mark_buffer(data.detach().requires_grad_(data.requires_grad), persistent)


class UninitializedTensorMixin:
    """Shared by the lazy placeholders: a tensor with no shape yet, made real by `materialize(shape)`."""

    cls_to_become = None
    __torch_function__ = _disabled_torch_function_impl  # ops on a placeholder see its empty tensor

    def materialize(self, shape, device=None, dtype=None):
        """Give the placeholder real (uninitialised) storage of `shape` and turn it into `cls_to_become`."""
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = lantern.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self, *, tensor_contents=None):
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (self.__class__, (self.requires_grad,))


def is_lazy(param):
    """True for a parameter or buffer that has not been materialized yet."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet (lazy modules); it becomes a Parameter on materialize()."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        data = lantern.empty(0, device=device, dtype=dtype)
        return Parameter.__new__(cls, data, requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (lazy modules); it becomes a plain Tensor on materialize()."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = _share(cls, lantern.empty(0, device=device, dtype=dtype))
        t.requires_grad_(requires_grad)
        return _mark_buffer(t, persistent)

