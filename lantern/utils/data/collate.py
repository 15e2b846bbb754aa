"""Collation (torch.utils.data._utils.collate): turn a list of samples into a batch, or convert one sample.

`default_collate` transposes containers and stacks their leaves: tensors are stacked on a new first dimension,
NumPy arrays and scalars become tensors first, Python ints become int64, floats float64, bools bool; strings and
bytes are left as the sequence of samples. Mappings and namedtuples keep their type; tuples and sequences become
lists of batches.

>>> import numpy as np
>>> batch = default_collate([(np.float32(0.5), 1, "a"), (np.float32(1.5), 2, "b")])
>>> batch
[tensor([0.5000, 1.5000]), tensor([1, 2]), ('a', 'b')]
>>> default_collate([{"x": 1.0}, {"x": 2.0}])["x"].dtype
lantern.float64
>>> default_convert(np.arange(3))      # batch_size=None: convert only, no batch dimension
tensor([0, 1, 2])
"""
import collections.abc
import copy
import re

import numpy as np

from ... import Tensor, as_tensor, float64, stack, tensor

__all__ = ["default_collate", "default_convert"]

# NumPy dtype kinds that hold strings or objects: such arrays cannot become tensors.
_NOT_NUMERIC = re.compile(r"[SaUO]")
_ERROR_FORMAT = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_numpy_value(x):
    kind = type(x)
    return kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_")


def _rebuild(like, values):
    """A container of like's type holding `values` (a dict of keys or a list), or a plain dict/list if that type
    cannot be built that way. Mutable containers are shallow-copied so that their other attributes survive."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(values)
            return clone
        if isinstance(like, collections.abc.Mapping):
            return type(like)(values)
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(like)(values)
    except TypeError:
        return values


def default_convert(data):
    """Convert NumPy arrays and scalars inside `data` to tensors, keeping every container's structure."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy_value(data):
        if isinstance(data, np.ndarray) and _NOT_NUMERIC.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    if _NOT_NUMERIC.search(batch[0].dtype.str):
        raise TypeError(_ERROR_FORMAT.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return tensor(batch)  # int64, or bool for Python bools


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def collate(batch, *, collate_fn_map=None):
    """Collate `batch` (a list of samples), looking leaf types up in `collate_fn_map` ({type or types: fn})."""
    elem = batch[0]
    if collate_fn_map is not None:
        fn = collate_fn_map.get(type(elem))
        if fn is None:
            fn = next((f for kinds, f in collate_fn_map.items() if isinstance(elem, kinds)), None)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                               for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        return columns if isinstance(elem, tuple) else _rebuild(elem, columns)
    raise TypeError(_ERROR_FORMAT.format(type(elem)))


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack a list of samples into a batch with torch's rules (see the module docstring)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
