"""Where a strided view's elements live in its storage: the arithmetic `explain` and the storage pictures show.

Element [i, j] of a view with strides (s0, s1) and offset o lives at storage index o + i*s0 + j*s1.

>>> address_formula((2, 3), (1, 2), 4)
('[i, j]', 'storage[4 + i*1 + j*2]')
"""
import numpy as np

_CHUNK = 1 << 22           # index maps are built at most this many elements at a time
_INDEX_NAMES = "ijklmnpq"


def storage_index_map(size, stride, offset):
    """The storage index of every element, as an int64 array shaped like the tensor.

    >>> storage_index_map((2, 3), (1, 2), 4).tolist()
    [[4, 6, 8], [5, 7, 9]]
    """
    idx = np.full((), offset, np.int64)
    for n, s in zip(size, stride):
        idx = idx[..., None] + np.arange(n, dtype=np.int64) * s
    return idx


def _mark_covered(mask, size, stride, offset):
    """Set mask[k] for every storage index k the view reaches, a bounded number of elements at a time."""
    numel = int(np.prod(size, dtype=np.int64))
    if numel <= _CHUNK or not size:
        mask[storage_index_map(size, stride, offset).ravel()] = True
        return
    for i in range(size[0]):
        _mark_covered(mask, size[1:], stride[1:], offset + i * stride[0])


def covered_indices(size, stride, offset):
    """The sorted, distinct storage indices a view with this geometry reaches (an int64 array).

    >>> covered_indices((2, 2), (0, 3), 1).tolist()
    [1, 4]
    """
    if 0 in size:
        return np.zeros(0, np.int64)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    mask = np.zeros(last + 1, bool)
    _mark_covered(mask, tuple(size), tuple(stride), offset)
    return np.flatnonzero(mask)


def address_formula(size, stride, offset, times="*"):
    """("[i, j]", "storage[3 + i*1 + j*3]"): the element index and where that element lives.

    >>> address_formula((2, 3), (1, 2), 4)
    ('[i, j]', 'storage[4 + i*1 + j*2]')
    """
    names = _INDEX_NAMES[:len(size)] if len(size) <= len(_INDEX_NAMES) else [f"i{d}" for d in range(len(size))]
    terms = ([str(offset)] if offset or not size else []) + [f"{n}{times}{s}" for n, s in zip(names, stride)]
    return f"[{', '.join(names)}]", f"storage[{' + '.join(terms)}]"
