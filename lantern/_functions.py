"""The functional API (`lantern.add`, `lantern.sum`, ...): generated bindings plus hand-written overload frontends.

The bindings are defined in lantern/_generated/functions.py (`make codegen` writes it from the op registry;
`def mul(input, other, *, out=None)` is there), one factory per op, filled in here for every registered op.

>>> lantern.add(lantern.ones(2), 1, alpha=2).tolist(), lantern.max(lantern.tensor([1, 5, 3])).item()
([3.0, 3.0], 5)
"""
from .core.tensor_impl import TensorImpl as _TensorImpl
from .ops import binding as _binding
from .ops import registry as _registry
from .ops.meta_util import operands_result_type as _operands_result_type
from .core.overridable import overridable as _overridable

globals().update(_binding.functional_bindings())
globals().update(_registry.COMPOSITES)


def _method_frontend(name):
    def fn(input, *args, **kwargs):
        if not isinstance(input, _TensorImpl):
            raise TypeError(f"{name}() received an invalid combination of arguments - got ({type(input).__name__}"
                            f"{''.join(', ' + type(a).__name__ for a in args)}), but expected a Tensor input first")
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"lantern.{name}(input, ...) is input.{name}(...)."
    return _overridable(fn)


for _name in ("reshape", "flatten", "squeeze", "transpose", "swapaxes", "swapdims", "movedim", "moveaxis",
              "unbind", "split", "chunk", "tensor_split", "ravel", "max", "min", "numel"):
    globals()[_name] = _method_frontend(_name)


@_overridable
def where(condition, input=None, other=None, *, out=None):
    """where(condition, input, other): elementwise choice; where(condition) alone: the indices where it holds."""
    from .ops.dispatcher import call
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if out is None:
        return call(_registry.get("where"), (condition, input, other))
    return call(_registry.get("where.out"), (condition, input, other, out))


def is_tensor(obj):
    return isinstance(obj, _TensorImpl)


@_overridable
def is_floating_point(input):
    return input.is_floating_point()


@_overridable
def is_complex(input):
    return input.is_complex()


def result_type(tensor1, tensor2):
    """The dtype an op on these two operands (tensors or numbers) computes in."""
    return _operands_result_type((tensor1, tensor2))


@_overridable
def is_nonzero(input):
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


absolute, negative, arctan2 = abs, neg, atan2  # noqa: F821
clip = clamp  # noqa: F821
divide = true_divide = div  # noqa: F821
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne  # noqa: F821
concat = concatenate = cat  # noqa: F821
multiply, subtract = mul, sub  # noqa: F821
