"""Binary ops on MaskedTensors: the op runs on the data; the two masks must be equal (torch does not define a
result where they differ), and the result keeps that mask. A plain tensor or a number may stand on either side.

>>> import lantern
>>> keep = lantern.tensor([True, False])
>>> a = lantern.masked.as_masked_tensor(lantern.tensor([1., 2.]), keep)
>>> (a + a).get_data(), (a * lantern.tensor([3., 3.])).get_data()
(tensor([2., 4.]), tensor([3., 6.]))
"""
from ...core.layout import strided
from ...core.tensor_impl import TensorImpl
from ...ops.op_kinds import AliasKind
from . import _sparse
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
    mask = (args[0] if is_masked_tensor(args[0]) else args[1]).get_mask()
    data = data_of(args)
    if data[0].layout is not strided:
        return _sparse_binary(op, args, data, mask)
    result = call_on(op, data)
    if op.schema.alias is AliasKind.INPLACE:
        return args[0]
    return wrap_result(result, mask.expand_as(result))


def _sparse_binary(op, args, data, mask):
    """The op on self's values and other's (a sparse other must specify the same positions)."""
    self_data, other, rest = data[0], data[1], data[2:]
    if isinstance(other, TensorImpl) and other.layout == self_data.layout:
        if not _sparse.same_positions(self_data, other):
            raise ValueError(f"{self_data.layout.name} indices must match. If you need support for this, please open "
                             "an issue on Github.")
        if self_data.shape != other.shape:
            raise ValueError("input1 and input2 must have the same size for binary functions.")
        other = _sparse.values(other)
    if op.schema.alias is AliasKind.INPLACE:
        call_on(op, (_sparse.values(self_data), other, *rest))
        return args[0]
    return wrap_result(_sparse.map_values(self_data, lambda v: call_on(op, (v, other, *rest))), mask)


register_masked_kernel(with_inplace_variants(BINARY_NAMES, NO_INPLACE), binary)
