"""Type promotion: PyTorch's promote_types table and its result_type rules.

Operands are ranked in three tiers: tensors with dimensions, 0-dim tensors, and Python numbers ("wrapped
numbers"). A weaker tier only matters when its category (bool < integral < floating < complex) is higher.

>>> from lantern.core import dtype as d
>>> promote_types(d.uint8, d.int8), promote_types(d.int64, d.float16)
(lantern.int16, lantern.float16)
"""
from . import dtype as dt
from .dtype import BOOL, COMPLEX, FLOATING, INTEGRAL
from .quantized_dtypes import QuantizedDtype

_INT_ORDER = {dt.int8: 1, dt.int16: 2, dt.int32: 3, dt.int64: 4}
_FLOAT_ORDER = {dt.float16: 1, dt.bfloat16: 1, dt.float32: 2, dt.float64: 3}


def _promote_uncached(a, b):
    if a is b:
        return a
    if a.category != b.category:
        lo, hi = (a, b) if a.category < b.category else (b, a)
        if hi.category == COMPLEX and lo.category == FLOATING:
            return _COMPLEX_OF[_promote_uncached(lo, hi.to_real())]  # complex32 with float32 is complex64
        return hi
    if a.category == INTEGRAL:
        if dt.uint8 in (a, b):
            other = b if a is dt.uint8 else a
            return dt.int16 if other is dt.int8 else other
        return a if _INT_ORDER[a] > _INT_ORDER[b] else b
    if a.category == FLOATING:
        if {a, b} == {dt.float16, dt.bfloat16}:
            return dt.float32
        return a if _FLOAT_ORDER[a] > _FLOAT_ORDER[b] else b
    return _COMPLEX_OF[_promote_uncached(a.to_real(), b.to_real())]  # two different complex types


_COMPLEX_OF = {dt.float16: dt.complex32, dt.float32: dt.complex64, dt.float64: dt.complex128}


_TABLE = {(a, b): _promote_uncached(a, b) for a in dt.ALL for b in dt.ALL}
# uint16/32/64 promote only with themselves and with floating types (which win); any other pair is refused
_TABLE.update({(u, u): u for u in dt.LIMITED_UNSIGNED})
_TABLE.update({pair: f for u in dt.LIMITED_UNSIGNED for f in dt.ALL if f.category == FLOATING
               for pair in ((u, f), (f, u))})


def promote_types(a, b):
    """The smallest dtype both a and b convert to safely, as torch.promote_types."""
    try:
        return _TABLE[a, b]
    except KeyError:
        if a in dt.LIMITED_UNSIGNED or b in dt.LIMITED_UNSIGNED:
            raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                               f"{a.legacy} and {b.legacy}") from None
        if not (isinstance(a, QuantizedDtype) or isinstance(b, QuantizedDtype)):
            raise
        raise RuntimeError(f"promoteTypes with quantized numbers is not handled yet; figure out what the correct "
                           f"rules should be, offending types: {a.legacy} {b.legacy}") from None


def wrapped_scalar_dtype(value):
    """The dtype a Python number takes when it meets a tensor: bool, int64, the default float or complex."""
    t = type(value)
    if t is bool:
        return dt.bool
    if t is int:
        return dt.int64
    if t is float:
        return dt.get_default_dtype()
    if t is complex:
        return dt.default_complex_dtype()
    if hasattr(value, "dtype"):  # a NumPy scalar behaves as a Python number of its kind
        kind = value.dtype.kind
        return {"b": dt.bool, "i": dt.int64, "u": dt.int64, "f": dt.get_default_dtype(),
                "c": dt.default_complex_dtype()}[kind]
    raise TypeError(f"expected a Tensor or a Python number, got {t.__name__}")


def _combine_categories(higher, lower):
    """PyTorch's combine_categories: a weaker tier's type only counts if its category is higher."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:  # float16 with a complex number is complex32, bfloat16's complex64
        return _COMPLEX_OF.get(higher, dt.complex64) if higher.category == FLOATING else lower
    if higher.category == FLOATING:
        return higher
    if higher is dt.bool or lower.category == FLOATING:
        return promote_types(higher, lower)
    return higher


def result_type_of(dim_dtypes, zero_dim_dtypes, scalar_dtypes):
    """Promote three tiers of operand dtypes (lists that may be empty) the way PyTorch's TensorIterator does."""
    tiers = []
    for group in (dim_dtypes, zero_dim_dtypes, scalar_dtypes):
        r = None
        for d in group:
            r = d if r is None else promote_types(r, d)
        tiers.append(r)
    return _combine_categories(tiers[0], _combine_categories(tiers[1], tiers[2]))


def can_cast(from_, to):
    """False for the casts PyTorch refuses into out= and in-place results: float->int, complex->real, any->bool."""
    if from_.category == COMPLEX and to.category != COMPLEX:
        return False
    if from_.category == FLOATING and to.category in (INTEGRAL, BOOL):
        return False
    if from_.category != BOOL and to.category == BOOL:
        return False
    return True
