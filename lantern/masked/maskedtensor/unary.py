"""Unary ops on a MaskedTensor: the op runs on the data, the mask stays (torch's list of such ops; an alias such as
arccos runs its op's rule, acos).

>>> import lantern
>>> mt = lantern.masked.as_masked_tensor(lantern.tensor([0., 4.]), lantern.tensor([False, True]))
>>> mt.sqrt().get_data(), lantern.sqrt(mt).get_mask()
(tensor([0., 2.]), tensor([False,  True]))
"""
from ...core.layout import strided
from ...core.tensor_impl import TensorImpl
from ...ops.op_kinds import AliasKind
from . import _sparse
from .core import call_on, register_masked_kernel, with_inplace_variants, wrap_result

__all__ = []

UNARY_NAMES = ["abs", "acos", "acosh", "angle", "asin", "asinh", "atan", "atanh", "bitwise_not", "ceil", "clamp",
               "conj_physical", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv", "exp", "exp2", "expm1",
               "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "logit", "i0", "isnan", "nan_to_num",
               "neg", "positive", "pow", "rad2deg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sgn",
               "signbit", "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
               "isfinite"]   # torch's isfinite is no aten op but a composite of ops of this list; lantern's is an op
# torch has no in-place form of these (angle, isnan, positive, signbit: no such op; the rest as torch lists them)
NO_INPLACE = {"angle", "isnan", "positive", "signbit", "isfinite"}


def unary(op, args):
    """op(data, *rest) under the input's mask; an in-place op writes the data and returns the MaskedTensor."""
    if any(isinstance(a, TensorImpl) for a in args[1:]):
        raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments")
    data, rest = args[0].get_data(), args[1:]
    if data.layout is not strided:   # the op runs on the values; the positions stay
        if op.schema.alias is AliasKind.INPLACE:
            call_on(op, (_sparse.values(data), *rest))
            return args[0]
        return wrap_result(_sparse.map_values(data, lambda v: call_on(op, (v, *rest))), args[0].get_mask())
    result = call_on(op, (data, *rest))
    if op.schema.alias is AliasKind.INPLACE:
        return args[0]
    return wrap_result(result, args[0].get_mask())


register_masked_kernel(with_inplace_variants(UNARY_NAMES, NO_INPLACE), unary)
