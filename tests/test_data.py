"""lantern.utils.data against torch.utils.data: the same dataset / sampler / loader code run on both libraries.

Deterministic results (batches, lengths, dtypes, exception classes) must match torch's exactly; random ones
(shuffling, splits, weighted draws) are compared by their properties, since lantern's random streams are its own.
"""
import collections
import gc
import multiprocessing
import os
import time
import warnings

import numpy as np
import pytest
import torch

import lantern
from oracle import assert_same, check, noncontig, raises_like, to_lib

Pair = collections.namedtuple("Pair", "a b")


def same(got, expected, path="batch"):
    """Like oracle.assert_same, and containers must be of the same kind (list / tuple / dict / namedtuple)."""
    if isinstance(expected, torch.Tensor):
        return assert_same(got, expected, path=path)
    if isinstance(expected, dict):
        assert type(got).__name__ == type(expected).__name__ and list(got) == list(expected), path
        for k in expected:
            same(got[k], expected[k], f"{path}[{k!r}]")
        return None
    if isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) or type(got).__name__ == type(expected).__name__, \
            f"{path}: {type(got).__name__} != {type(expected).__name__}"
        assert len(got) == len(expected), path
        for i, (g, e) in enumerate(zip(got, expected)):
            same(g, e, f"{path}[{i}]")
        return None
    assert type(got) is type(expected) and got == expected, f"{path}: {got!r} != {expected!r}"
    return None


def both(fn):
    """fn(torch) and fn(lantern) give the same result (checked with `same`); returns lantern's."""
    expected, got = fn(torch), fn(lantern)
    same(got, expected)
    return got


class Squares:
    """A map-style dataset defined once and used with either library (`lib`)."""

    def __init__(self, lib, n=10):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.lib.tensor([float(i), float(i * i)])


def map_dataset(lib, n=10, item=lambda lib, i: i):
    base = lib.utils.data.Dataset

    class DS(base):
        def __len__(self):
            return n

        def __getitem__(self, i):
            return item(lib, i)
    return DS()


def iterable_dataset(lib, n=10, length=None):
    class DS(lib.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(n))
    if length is not None:
        DS.__len__ = lambda self: length
    return DS()


# ---------------------------------------------------------------- datasets

def test_dataset_base_errors_match_torch():
    msgs = raises_like(lambda lib: lib.utils.data.Dataset()[0])
    assert msgs[0] == msgs[1] == "Subclasses of Dataset should implement __getitem__."
    raises_like(lambda lib: len(lib.utils.data.Dataset()))
    raises_like(lambda lib: lib.utils.data.IterableDataset())        # abstract: no __iter__
    both(lambda lib: type(map_dataset(lib) + map_dataset(lib)).__name__)
    both(lambda lib: type(iterable_dataset(lib) + iterable_dataset(lib)).__name__)


def test_tensor_dataset_matches_torch():
    a, b = noncontig(np.arange(12.0).reshape(4, 3)), noncontig(np.arange(4))
    check(lambda lib, x, y: lib.utils.data.TensorDataset(x, y)[1], a, b)
    check(lambda lib, x, y: lib.utils.data.TensorDataset(x, y)[1:3], a, b)
    check(lambda lib, x, y: len(lib.utils.data.TensorDataset(x, y)), a, b)
    raises_like(lambda lib, x, y: lib.utils.data.TensorDataset(x, y[:3]), a, b)   # AssertionError: size mismatch


def test_concat_and_chain_datasets_match_torch():
    def concat(lib):
        ds = lib.utils.data.ConcatDataset([map_dataset(lib, 3), map_dataset(lib, 0), map_dataset(lib, 4)])
        return [ds[i] for i in range(-7, 7)], len(ds), ds.cumulative_sizes
    both(concat)
    for bad in (lambda lib: lib.utils.data.ConcatDataset([map_dataset(lib, 3)])[-4],
                lambda lib: lib.utils.data.ConcatDataset([map_dataset(lib, 3)])[3],
                lambda lib: lib.utils.data.ConcatDataset([]),
                lambda lib: lib.utils.data.ConcatDataset([iterable_dataset(lib)])):
        raises_like(bad)
    both(lambda lib: list(lib.utils.data.ChainDataset([iterable_dataset(lib, 3), iterable_dataset(lib, 2)])))
    both(lambda lib: len(iterable_dataset(lib, 3, 3) + iterable_dataset(lib, 2, 2)))
    raises_like(lambda lib: list(lib.utils.data.ChainDataset([map_dataset(lib, 3)])))
    with pytest.warns(FutureWarning):
        assert lantern.utils.data.ConcatDataset([map_dataset(lantern, 2)]).cummulative_sizes == [2]


def test_stack_and_subset_match_torch():
    def stack(lib):
        d = lib.utils.data
        t = d.StackDataset(map_dataset(lib, 4), map_dataset(lib, 4, lambda lib, i: -i))
        k = d.StackDataset(x=map_dataset(lib, 4), y=d.Subset(map_dataset(lib, 9), [8, 7, 6, 5]))
        return t[2], k[1], t.__getitems__([0, 3]), k.__getitems__([2]), len(t)
    both(stack)
    raises_like(lambda lib: lib.utils.data.StackDataset(map_dataset(lib, 2), map_dataset(lib, 3)))
    raises_like(lambda lib: lib.utils.data.StackDataset())
    raises_like(lambda lib: lib.utils.data.StackDataset(map_dataset(lib), x=map_dataset(lib)))
    both(lambda lib: (lambda s: (s[0], s[-1], s.__getitems__([1, 0]), len(s)))(
        lib.utils.data.Subset(Squares(lib), [5, 2, 9])))

    def override_only_getitem(lib):
        class MySubset(lib.utils.data.Subset):
            def __getitem__(self, i):
                return 0
        return MySubset(map_dataset(lib), [0])
    msgs = raises_like(override_only_getitem)
    assert msgs[0] == msgs[1]


def test_random_split_matches_torch_lengths_and_is_a_partition():
    for lengths in ([0.3, 0.3, 0.4], [3, 8], [0.5, 0.5], [1 / 3] * 3):
        def split(lib):
            parts = lib.utils.data.random_split(range(11), lengths, generator=lib.Generator().manual_seed(0))
            return [len(p) for p in parts]
        both(split)
    parts = lantern.utils.data.random_split(range(11), [0.3, 0.3, 0.4], generator=lantern.Generator().manual_seed(3))
    assert sorted(i for p in parts for i in p) == list(range(11))
    again = lantern.utils.data.random_split(range(11), [0.3, 0.3, 0.4], generator=lantern.Generator().manual_seed(3))
    assert [p.indices for p in parts] == [p.indices for p in again]
    raises_like(lambda lib: lib.utils.data.random_split(range(11), [3, 7]))
    raises_like(lambda lib: lib.utils.data.random_split(range(11), [1.5, -0.5]))
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        lantern.utils.data.random_split(range(2), [1.0, 0.0])


# ---------------------------------------------------------------- samplers

def test_deterministic_samplers_match_torch():
    d = lambda lib: lib.utils.data  # noqa: E731
    both(lambda lib: list(d(lib).SequentialSampler(range(5))))
    for drop_last in (False, True):
        both(lambda lib: (list(d(lib).BatchSampler(range(10), 3, drop_last)),
                          len(d(lib).BatchSampler(range(10), 3, drop_last))))
    for bad in (lambda lib: d(lib).BatchSampler(range(3), 0, False),
                lambda lib: d(lib).BatchSampler(range(3), True, False),
                lambda lib: d(lib).BatchSampler(range(3), 2, 1),
                lambda lib: d(lib).RandomSampler(range(3), replacement=1),
                lambda lib: d(lib).RandomSampler(range(3), num_samples=0),
                lambda lib: d(lib).RandomSampler([]),
                lambda lib: d(lib).WeightedRandomSampler([1.0, 2.0], 0),
                lambda lib: d(lib).WeightedRandomSampler([1.0, 2.0], True),
                lambda lib: d(lib).WeightedRandomSampler([1.0, 2.0], 3, replacement=0),
                lambda lib: d(lib).WeightedRandomSampler([[1.0, 2.0]], 3),
                lambda lib: iter(d(lib).Sampler()).__next__()):
        msgs = raises_like(bad)
        assert msgs[0] == msgs[1]


def test_random_samplers_have_torch_properties():
    data = lantern.utils.data
    g = lantern.Generator().manual_seed(0)
    assert sorted(data.RandomSampler(range(7), generator=g)) == list(range(7))
    many = list(data.RandomSampler(range(7), num_samples=17, generator=g))
    assert len(many) == 17 and sorted(many[:7]) == sorted(many[7:14]) == list(range(7))
    drawn = list(data.RandomSampler(range(4), replacement=True, num_samples=70, generator=g))
    assert len(drawn) == 70 and set(drawn) <= set(range(4))
    assert len(data.RandomSampler(range(4), replacement=True, num_samples=70)) == 70
    assert sorted(data.SubsetRandomSampler([10, 20, 30], generator=g)) == [10, 20, 30]
    weighted = data.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 50, generator=g)
    picks = list(weighted)
    assert len(weighted) == 50 == len(picks) and set(picks) <= {1, 3}
    assert weighted.weights.dtype == lantern.float64
    assert sorted(data.WeightedRandomSampler([1, 1, 1], 3, replacement=False, generator=g)) == [0, 1, 2]
    lantern.manual_seed(5)
    first = list(data.RandomSampler(range(20)))
    lantern.manual_seed(5)
    assert list(data.RandomSampler(range(20))) == first


# ---------------------------------------------------------------- collate

def test_spec_case_25_collate_and_len():
    def case(lib):
        ds = map_dataset(lib, 10, lambda lib, i: (np.float32(i), i % 2))
        loader = lib.utils.data.DataLoader(ds, batch_size=4)
        batches = list(loader)
        dropped = lib.utils.data.DataLoader(ds, batch_size=4, drop_last=True)
        return batches[0], batches[-1], len(loader), len(dropped), len(list(dropped))
    both(case)


SAMPLES = {
    "np_scalars": lambda lib, i: (np.float32(i) / 2, np.int16(i), np.bool_(i % 2)),
    "np_arrays": lambda lib, i: noncontig(np.arange(6.0).reshape(2, 3) * i),
    "python_numbers": lambda lib, i: [i, i / 4, i % 2 == 0],
    "strings": lambda lib, i: (str(i), bytes([65 + i])),
    "dict": lambda lib, i: {"z": i, "a": {"deep": [i, float(i)]}},
    "ordered_dict": lambda lib, i: collections.OrderedDict(x=i),
    "namedtuple": lambda lib, i: Pair(i, lib.tensor([i, i])),
    "tensors": lambda lib, i: to_lib(lib, noncontig(np.arange(4.0).reshape(2, 2) + i)).t(),
    "int_tensor_scalars": lambda lib, i: lib.tensor(i, dtype=lib.int16),
}


@pytest.mark.parametrize("name", SAMPLES)
def test_default_collate_matches_torch(name):
    make = SAMPLES[name]
    both(lambda lib: lib.utils.data.default_collate([make(lib, i) for i in range(3)]))
    both(lambda lib: lib.utils.data.default_convert(make(lib, 1)))


def test_default_collate_errors_match_torch():
    collate = lambda lib: lib.utils.data.default_collate  # noqa: E731
    for batch in ([[1, 2], [3]], [object(), object()], [np.array(["a"]), np.array(["b"])], [None, None]):
        msgs = raises_like(lambda lib: collate(lib)(batch))
        assert msgs[0] == msgs[1]
    raises_like(lambda lib: collate(lib)([lib.ones(2), lib.ones(3)]))
    both(lambda lib: lib.utils.data.default_convert((np.array(["a", "b"]), "s", [np.int64(3)]))[0].tolist())


def test_collate_fn_map_extension_matches_torch():
    class Box:
        def __init__(self, v):
            self.v = v

    def run(lib):
        from importlib import import_module
        m = import_module(lib.__name__ + ".utils.data._utils.collate")
        table = {**m.default_collate_fn_map, Box: lambda batch, *, collate_fn_map: sum(b.v for b in batch)}
        return m.collate([(Box(1), 2.0), (Box(5), 3.0)], collate_fn_map=table)
    both(run)


# ---------------------------------------------------------------- DataLoader, one process

def loader_batches(lib, **kwargs):
    return list(lib.utils.data.DataLoader(Squares(lib, 7), **kwargs))


@pytest.mark.parametrize("kwargs", [dict(), dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                    dict(batch_size=None), dict(batch_size=2, collate_fn=lambda b: len(b)),
                                    dict(batch_size=None, collate_fn=lambda b: b.sum())])
def test_loader_batches_match_torch(kwargs):
    both(lambda lib: loader_batches(lib, **kwargs))
    both(lambda lib: len(lib.utils.data.DataLoader(Squares(lib, 7), **kwargs)))


def test_loader_with_samplers_matches_torch():
    d = lambda lib: lib.utils.data  # noqa: E731
    both(lambda lib: loader_batches(lib, sampler=[6, 0, 3], batch_size=2))
    both(lambda lib: loader_batches(lib, batch_sampler=[[1, 2], [6]]))
    both(lambda lib: loader_batches(lib, batch_sampler=d(lib).BatchSampler(range(5), 2, True)))
    both(lambda lib: loader_batches(lib, sampler=d(lib).SequentialSampler(range(3)), batch_size=None))


def test_loader_with_iterable_dataset_matches_torch():
    for kwargs in (dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=None)):
        both(lambda lib: list(lib.utils.data.DataLoader(iterable_dataset(lib, 10, 10), **kwargs)))
        both(lambda lib: len(lib.utils.data.DataLoader(iterable_dataset(lib, 10, 10), **kwargs)))
    with pytest.warns(UserWarning, match="was reported to be 1"):
        loader = lantern.utils.data.DataLoader(iterable_dataset(lantern, 3, 1), batch_size=None)
        len(loader)
        list(loader)


OPTION_ERRORS = [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
    dict(num_workers=1, prefetch_factor=-1), dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]), dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True), dict(multiprocessing_context="fork"),
    dict(num_workers=1, multiprocessing_context="no-such-method"), dict(num_workers=1, multiprocessing_context=3),
    dict(batch_size=0),
]


@pytest.mark.parametrize("kwargs", OPTION_ERRORS)
def test_loader_option_errors_match_torch(kwargs):
    msgs = raises_like(lambda lib: lib.utils.data.DataLoader(Squares(lib), **kwargs))
    assert msgs[0] == msgs[1]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # torch's half-built iterator's __del__
def test_zero_prefetch_factor_fails_when_iterating_like_torch():
    msgs = raises_like(lambda lib: iter(lib.utils.data.DataLoader(Squares(lib), num_workers=1, prefetch_factor=0)))
    assert msgs[0] == msgs[1]


def test_loader_errors_with_iterable_dataset_and_frozen_options_match_torch():
    for kwargs in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        raises_like(lambda lib: lib.utils.data.DataLoader(iterable_dataset(lib), **kwargs))

    def set_batch_size(lib):
        lib.utils.data.DataLoader(Squares(lib)).batch_size = 2
    msgs = raises_like(set_batch_size)
    assert msgs[0] == msgs[1]
    both(lambda lib: type(lib.utils.data.DataLoader(Squares(lib), shuffle=True).sampler).__name__)


def test_shuffle_is_a_permutation_and_reproducible_with_manual_seed():
    def epoch(**kwargs):
        loader = lantern.utils.data.DataLoader(map_dataset(lantern, 20), batch_size=6, shuffle=True, **kwargs)
        return [x for b in loader for x in b.tolist()]
    lantern.manual_seed(0)
    first, second = epoch(), epoch()
    assert sorted(first) == sorted(second) == list(range(20)) and first != second
    lantern.manual_seed(0)
    assert epoch() == first
    assert epoch(generator=lantern.Generator().manual_seed(1)) == epoch(generator=lantern.Generator().manual_seed(1))


def test_pin_memory_warns_like_torch_without_accelerator():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(torch.utils.data.DataLoader(Squares(torch, 2), pin_memory=True))
        expected = [str(w.message) for w in caught]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(lantern.utils.data.DataLoader(Squares(lantern, 2), pin_memory=True))
    assert [str(w.message) for w in caught] == expected and len(batches) == 2


def test_every_public_name_of_torch_utils_data_is_there():
    wanted = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "StackDataset",
              "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
              "WeightedRandomSampler", "BatchSampler", "DataLoader", "default_collate", "default_convert",
              "get_worker_info"]
    assert all(hasattr(torch.utils.data, n) for n in wanted)
    assert [n for n in wanted if not hasattr(lantern.utils.data, n)] == []


# ---------------------------------------------------------------- DataLoader with worker processes

@pytest.fixture
def no_leftover_workers():
    yield
    if multiprocessing.active_children():
        gc.collect()  # an iterator caught in a reference cycle (an exception's traceback) shuts down when collected
    deadline = time.time() + 5
    while multiprocessing.active_children() and time.time() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def whoami(lib, i):
    info = lib.utils.data.get_worker_info()
    return lib.tensor([i, info.id, info.num_workers])


def test_workers_return_batches_in_order_like_torch(no_leftover_workers):
    def run(lib):
        loader = lib.utils.data.DataLoader(map_dataset(lib, 11, whoami), batch_size=2, num_workers=2)
        return list(loader), len(loader)
    both(run)
    assert lantern.utils.data.get_worker_info() is None


def test_iterable_dataset_sharded_with_worker_info_matches_torch(no_leftover_workers):
    def run(lib):
        class Sharded(lib.utils.data.IterableDataset):
            def __iter__(self):
                info = lib.utils.data.get_worker_info()
                return iter(range(info.id, 9, info.num_workers))
        return list(lib.utils.data.DataLoader(Sharded(), batch_size=2, num_workers=2))
    both(run)


def test_worker_exception_is_reraised_with_the_worker_id(no_leftover_workers):
    def run(lib):
        def item(lib, i):
            if i == 3:
                raise KeyError("bad index")
            return i
        it = iter(lib.utils.data.DataLoader(map_dataset(lib, 6, item), batch_size=2, num_workers=2))
        try:
            return [b.tolist() for b in it]
        finally:
            if lib is torch:  # torch's iterator, freed by the garbage collector, would wait 10 s for its workers
                it._shutdown_workers()
    msgs = raises_like(run)
    assert all(m.startswith("Caught KeyError in DataLoader worker process 1.\nOriginal Traceback") for m in msgs)
    assert "KeyError: 'bad index'" in msgs[1]


def dies_at_2(lib, i):
    """Items that kill the worker asked for item 2 (worker 0's second task), as a crash would."""
    if i == 2:
        os._exit(3)
    return i


def test_worker_that_dies_is_reported_like_torch(no_leftover_workers):
    # The batches are plain lists: a tensor from a torch worker travels as a file descriptor fetched from that worker
    # over a socket, and when the worker dies during that fetch (a window of a few milliseconds after it sent the
    # batch, hit under load) torch raises ConnectionResetError or EOFError instead. See the test below for lantern.
    def run(lib):
        it = iter(lib.utils.data.DataLoader(map_dataset(lib, 6, dies_at_2), num_workers=2, collate_fn=list))
        try:
            return list(it)
        finally:
            it._shutdown_workers()
    msgs = raises_like(run)
    assert "exited unexpectedly" in msgs[0] and "exited unexpectedly" in msgs[1]


def test_worker_that_dies_after_sending_a_tensor_is_reported(no_leftover_workers):
    # lantern pickles a tensor batch by value into the result queue, so a worker that dies just after sending one is
    # reported like any dead worker, whatever the timing (torch's answer here depends on it; see the test above).
    it = iter(lantern.utils.data.DataLoader(map_dataset(lantern, 6, dies_at_2), num_workers=2))
    try:
        with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
            list(it)
    finally:
        it._shutdown_workers()


def test_persistent_workers_restart_an_iterable_dataset_each_epoch(no_leftover_workers):
    def run(lib):
        class Sharded(lib.utils.data.IterableDataset):
            def __iter__(self):
                info = lib.utils.data.get_worker_info()
                return iter(range(info.id, 5, info.num_workers))
        loader = lib.utils.data.DataLoader(Sharded(), batch_size=2, num_workers=2, persistent_workers=True)
        epochs = [list(loader), list(loader)]
        loader._iterator._shutdown_workers()
        return epochs
    both(run)


def test_worker_seeds_init_fn_and_persistent_workers(no_leftover_workers):
    data = lantern.utils.data

    def draw(lib, i):
        info = data.get_worker_info()
        return lantern.tensor([info.seed, lantern.randint(0, 2**30, ()).item(), np.random.randint(2**30),
                               init_seen[0]])
    init_seen = [0]

    def init(worker_id):
        init_seen[0] = 100 + worker_id

    def epoch(loader):
        return [row for b in loader for row in b.tolist()]
    lantern.manual_seed(7)
    loader = data.DataLoader(map_dataset(lantern, 4, draw), batch_size=1, num_workers=2, worker_init_fn=init)
    rows = epoch(loader)
    lantern.manual_seed(7)
    assert epoch(loader) == rows                       # reproducible: base seed drawn from the global generator
    seeds = [r[0] for r in rows]
    assert seeds[1] == seeds[0] + 1 and seeds[2] == seeds[0]   # worker seed = base seed + worker id
    assert rows[0][1] != rows[1][1] and rows[0][2] != rows[1][2]
    assert [r[3] for r in rows] == [100, 101, 100, 101]

    persistent = data.DataLoader(map_dataset(lantern, 5, whoami), batch_size=2, num_workers=2,
                                 persistent_workers=True)
    first = [b.tolist() for b in persistent]
    pids = [w.pid for w in persistent._iterator._workers]
    assert [b.tolist() for b in persistent] == first and [w.pid for w in persistent._iterator._workers] == pids
    del persistent


def test_worker_timeout_and_early_delete(no_leftover_workers):
    def slow(lib, i):
        time.sleep(0.5)
        return i
    loader = lantern.utils.data.DataLoader(map_dataset(lantern, 4, slow), num_workers=2, timeout=0.1)
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.1 seconds"):
        next(iter(loader))
    it = iter(lantern.utils.data.DataLoader(map_dataset(lantern, 50), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1]
    del it
