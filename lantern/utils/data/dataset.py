"""Datasets (torch.utils.data.dataset): map-style and iterable datasets, and ways to combine and split them.

A map-style dataset answers `dataset[i]` (and usually `len(dataset)`); an iterable dataset answers `iter(dataset)`.

>>> import lantern
>>> from lantern.utils.data import TensorDataset, ConcatDataset, random_split
>>> ds = TensorDataset(lantern.arange(6), lantern.arange(6) * 10)
>>> ds[2]
(tensor(2), tensor(20))
>>> both = ds + ds                       # Dataset.__add__ concatenates
>>> len(both), both.cumulative_sizes, both[-1]
(12, [6, 12], (tensor(5), tensor(50)))
>>> train, test = random_split(ds, [0.5, 0.5], generator=lantern.Generator().manual_seed(0))
>>> len(train), len(test), sorted(train.indices + test.indices)
(3, 3, [0, 1, 2, 3, 4, 5])
"""
import bisect
import collections.abc
import itertools
import math
import warnings

from ... import randperm
from ...random import default_generator

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses implement `__getitem__` and, usually, `__len__`.

    No default `__len__` exists on purpose (samplers ask for it, and a wrong default would mislead them).
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])

    def __class_getitem__(cls, item):  # Dataset[int] in annotations, as typing.Generic allows
        return cls


class IterableDataset(Dataset, collections.abc.Iterable):
    """A dataset that is a stream: subclasses implement `__iter__`.

    With `num_workers > 0` every worker iterates its own copy; use `get_worker_info()` inside `__iter__` to give
    each worker its own share, or the loader yields duplicates. Like torch's, the class is abstract: a subclass
    without `__iter__` cannot be instantiated.
    """

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of the given tensors: `ds[i] == (t0[i], t1[i], ...)`; all share their first size."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Zips datasets of one length: `StackDataset(a, b)[i] == (a[i], b[i])`, `StackDataset(x=a)[i] == {'x': a[i]}`."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = args or list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        named = isinstance(self.datasets, dict)
        columns = {}
        for key, d in (self.datasets.items() if named else enumerate(self.datasets)):
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, "
                                     f"got {len(items)}")
            else:
                items = [d[i] for i in indices]
            columns[key] = items
        if named:
            return [{k: col[n] for k, col in columns.items()} for n in range(len(indices))]
        return [tuple(col[n] for col in columns.values()) for n in range(len(indices))]

    def __len__(self):
        return self._length


def _require_map_style(datasets):
    for d in datasets:
        if isinstance(d, IterableDataset):
            raise AssertionError("ConcatDataset does not support IterableDataset")


class ConcatDataset(Dataset):
    """Map-style datasets one after another; `cumulative_sizes[k]` is the total length of the first k+1."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        _require_map_style(self.datasets)
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]

    @property
    def cummulative_sizes(self):
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`", FutureWarning,
                      stacklevel=2)
        return self.cumulative_sizes


def _require_iterable(d):
    if not isinstance(d, IterableDataset):
        raise AssertionError("ChainDataset only supports IterableDataset")
    return d


class ChainDataset(IterableDataset):
    """Iterable datasets one after another, chained lazily while iterating."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            yield from _require_iterable(d)

    def __len__(self):
        return sum(len(_require_iterable(d)) for d in self.datasets)


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order: `Subset(ds, [4, 1])[0] is ds[4]`."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            # The loader fetches batches through __getitems__, which would bypass the override.
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__. When subclassing Subset and "
                "overriding __getitem__, you must also override __getitems__ to ensure DataLoader works correctly "
                "with your custom logic. A simple implementation:\n\n"
                "def __getitems__(self, indices):\n    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        picked = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(picked)
        return [self.dataset[i] for i in picked]

    def __len__(self):
        return len(self.indices)


def _lengths_from_fractions(fractions, total):
    """floor(f * total) per split, then the leftover items one at a time to the splits in turn."""
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(total * frac))
    for i in range(total - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                          stacklevel=3)
    return lengths


def random_split(dataset, lengths, generator=default_generator):
    """Split `dataset` into non-overlapping Subsets of the given lengths (or fractions summing to 1), at random."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(lengths, len(dataset))
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, indices[end - n:end]) for end, n in zip(ends, lengths)]
