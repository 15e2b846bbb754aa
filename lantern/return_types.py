"""lantern.return_types: the named tuples that ops with several outputs return (torch.return_types).

Each op module makes its type with lantern.ops.reduction.return_type, which records it here by name.

>>> import lantern
>>> lantern.return_types.max._fields, isinstance(lantern.ones(2, 2).max(0), lantern.return_types.max)
(('values', 'indices'), True)
"""
from .ops.reduction import RETURN_TYPES

globals().update(RETURN_TYPES)
__all__ = sorted(RETURN_TYPES)
