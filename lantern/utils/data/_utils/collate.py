"""The import path torch.utils.data._utils.collate, for custom collate functions (see ../collate.py).

>>> from lantern.utils.data._utils.collate import collate, default_collate_fn_map
>>> collate([(1, "a"), (2, "b")], collate_fn_map={**default_collate_fn_map, str: lambda b, **kw: "".join(b)})
[tensor([1, 2]), 'ab']
"""
from ..collate import (  # noqa: F401
    collate, collate_float_fn, collate_int_fn, collate_numpy_array_fn, collate_numpy_scalar_fn, collate_str_fn,
    collate_tensor_fn, default_collate, default_collate_fn_map, default_convert,
)
