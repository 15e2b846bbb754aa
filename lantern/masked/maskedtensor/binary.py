"""Binary ops on MaskedTensors: the op runs on the data; the two masks must be equal (torch does not define a
result where they differ), and the result keeps that mask. A plain tensor or a number may stand on either side.

>>> import lantern
>>> keep = lantern.tensor([True, False])
>>> a = lantern.masked.as_masked_tensor(lantern.tensor([1., 2.]), keep)
>>> (a + a).get_data(), (a * lantern.tensor([3., 3.])).get_data()
(tensor([2., 4.]), tensor([3., 6.]))
"""
from ...core.tensor_impl import TensorImpl
from ...ops.op_kinds import AliasKind
from .core import (call_on, data_of, is_masked_tensor, masks_match, register_masked_kernel, with_inplace_variants,
                   wrap_result)

__all__ = []

BINARY_NAMES = ["add", "atan2", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                "bitwise_right_shift", "div", "floor_divide", "fmod", "logaddexp", "logaddexp2", "mul", "nextafter",
                "remainder", "sub", "eq", "ne", "le", "ge", "gt", "lt", "maximum", "minimum", "fmax", "fmin"]
NO_INPLACE = {"logaddexp", "logaddexp2", "fmin", "minimum", "maximum", "fmax"}   # as torch lists them


def binary(op, args):
    """op(data, other_data, *rest) under the shared mask; an in-place op writes self's data."""
    if any(isinstance(a, TensorImpl) for a in args[2:]):
        raise TypeError("MaskedTensor binary ops do not support Tensor arguments aside from the lhs and rhs")
    if not masks_match(args[0], args[1]):
        raise ValueError("Input masks must match. If you need support for this, please open an issue on Github.")
    result = call_on(op, data_of(args))
    if op.schema.alias is AliasKind.INPLACE:
        return args[0]
    mask = (args[0] if is_masked_tensor(args[0]) else args[1]).get_mask()
    return wrap_result(result, mask.expand_as(result))


register_masked_kernel(with_inplace_variants(BINARY_NAMES, NO_INPLACE), binary)
