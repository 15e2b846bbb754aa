"""What runs inside a DataLoader worker (torch.utils.data._utils.worker and fetch): fetchers, seeding, the loop.

A worker is a process that takes `(task index, sampler output)` pairs from its own index queue, fetches and
collates those samples and puts `(task index, batch)` on the result queue shared by all workers. Errors travel
back wrapped (`ExceptionWrapper`) and are raised again in the main process, naming the worker.
Inside a worker, `get_worker_info()` tells the dataset which worker it runs in; in the main process it is None.

>>> get_worker_info() is None
True
>>> fetcher = _DatasetKind.create_fetcher(_DatasetKind.Map, [10, 20, 30], True, list, False)
>>> fetcher.fetch([2, 0])
[30, 10]
"""
import dataclasses
import os
import queue
import random
import sys
import traceback

import numpy as np

from ...random import manual_seed

__all__ = ["get_worker_info"]

# How long a blocked queue read waits before checking whether the other side is still alive.
MP_STATUS_CHECK_INTERVAL = 5.0
# How often an idle worker checks the done event. Shutdown also sends None on each index queue, but when the loader
# iterator dies in a garbage cycle (an exception's traceback holds it), the garbage collector may first run the
# queues' own finalizers, which stop their feeder threads: the None is then never sent, and only the event remains.
_WORKER_POLL_INTERVAL = 0.1


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        fetcher = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
        return fetcher(dataset, auto_collation, collate_fn, drop_last)


class _MapDatasetFetcher:
    """Fetches `dataset[i]` for each index of a batch (or the one index, without auto-collation), then collates."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        if getattr(self.dataset, "__getitems__", None):
            data = self.dataset.__getitems__(possibly_batched_index)
        else:
            data = [self.dataset[i] for i in possibly_batched_index]
        return self.collate_fn(data)


class _IterableDatasetFetcher(_MapDatasetFetcher):
    """Takes the next `len(batch)` items of the dataset's iterator; raises StopIteration once it is exhausted."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in possibly_batched_index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
            raise StopIteration
        return self.collate_fn(data)


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """Where a worker stands: its `id` in [0, num_workers), `seed` (its lantern seed) and its copy of `dataset`."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


_worker_info = None


def get_worker_info():
    """The WorkerInfo of the current DataLoader worker process, or None in the main process."""
    return _worker_info


@dataclasses.dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's note that its copy of an IterableDataset is exhausted."""
    worker_id: int


@dataclasses.dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at the start of each new epoch: rebuild the fetcher and acknowledge."""
    seed: object = None


class KeyErrorMessage(str):
    """A KeyError shows repr(message); this str shows itself, so the worker's traceback prints with its newlines."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried as its class and formatted traceback (both picklable)."""

    def __init__(self, exc_info=None, where="in background"):
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # The class needs other constructor arguments: report it as a RuntimeError with the same text.
            raise RuntimeError(msg) from None
        raise exception


def _numpy_seed(base_seed, worker_id):
    """Four 32-bit words for np.random.seed, mixed from the base seed and the worker id (a SeedSequence)."""
    return np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32]).generate_state(4)


def _seed_worker(base_seed, worker_id):
    """Seed Python's `random`, lantern and NumPy's legacy global generator for this worker; returns the seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_numpy_seed(base_seed, worker_id))
    return seed


def _parent_alive(parent_pid):
    return os.getppid() == parent_pid


def _fetch(fetcher, index, dataset_kind, worker_id, where):
    """The batch for `index`, or what the main process is sent instead: the end of an iterable dataset, or the
    exception the dataset raised, wrapped with where it happened."""
    try:
        return fetcher.fetch(index)
    except Exception as e:
        if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
            return _IterableDatasetStopIteration(worker_id)
        return ExceptionWrapper(where=where)


def _worker_loop(dataset_kind, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                 base_seed, init_fn, worker_id, num_workers):
    """The body of a worker process; returns on None from its queue, on the done event while idle, or when its
    parent has died."""
    global _worker_info
    parent_pid = os.getppid()
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=where)  # reported with the first task
        iteration_end = False
        while _parent_alive(parent_pid):
            try:
                r = index_queue.get(timeout=_WORKER_POLL_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    break  # shutting down, and the None may never come (see _WORKER_POLL_INTERVAL)
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue  # draining: the main process no longer wants results
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                data = _fetch(fetcher, index, dataset_kind, worker_id, where)
                iteration_end = isinstance(data, _IterableDatasetStopIteration)
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass  # the main process handles Ctrl-C and shuts the workers down
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
