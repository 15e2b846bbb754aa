"""lantern.core.intra_op: one array operation split into chunks on a pool of threads, held to the serial call."""
import threading
import time
import weakref

import numpy as np
import pytest

import lantern
from intra_op_fixtures import fast_paths, threads  # noqa: F401 (fixtures)
from lantern.core import intra_op


def calls_made(n, grain):
    """The (start, stop, thread) of each call parallel_chunks makes for n items."""
    calls, lock = [], threading.Lock()

    def record(start, stop):
        with lock:
            calls.append((start, stop, threading.get_ident()))
    intra_op.parallel_chunks(n, record, grain)
    return sorted(calls)


def test_run_on_pool_matches_serial_call(threads):
    threads(2)
    x = np.random.default_rng(0).standard_normal(100_003).astype(np.float32)
    serial, parallel = np.empty_like(x), np.empty_like(x)
    np.exp(x, out=serial)
    intra_op.run_on_pool([(0, 50_000), (50_000, 100_003)],
                         lambda start, stop: np.exp(x[start:stop], out=parallel[start:stop]))
    assert np.array_equal(parallel, serial)


def test_shared_items_match_serial_call(threads):
    threads(2)
    x = np.random.default_rng(0).standard_normal((9, 10_000)).astype(np.float32)
    serial, parallel = np.exp(x), np.empty_like(x)
    taken_by, lock = [], threading.Lock()

    def run(taken):
        for i in taken:
            np.exp(x[i], out=parallel[i])
            with lock:
                taken_by.append((i, threading.get_ident()))
    intra_op.share_on_pool(range(len(x)), run, 2)
    assert np.array_equal(parallel, serial)
    assert sorted(i for i, _ in taken_by) == list(range(len(x)))


def test_a_slower_thread_takes_fewer_items(threads):
    threads(2)
    taken_by, lock = [], threading.Lock()

    def run(taken):
        for i in taken:
            if threading.current_thread() is threading.main_thread():
                time.sleep(0.02)
            with lock:
                taken_by.append(threading.current_thread() is threading.main_thread())
    intra_op.parallel_items(list(range(20)), run)
    assert len(taken_by) == 20
    assert taken_by.count(False) > taken_by.count(True)


@pytest.mark.parametrize("setting", ["one thread", "reference mode", "one item"])
def test_items_serial_where_chunks_do_not_pay(threads, setting):
    threads(1 if setting == "one thread" else 2)
    seen = []
    with lantern.reference_mode(setting == "reference mode"):
        intra_op.parallel_items(range(1 if setting == "one item" else 5),
                                lambda taken: seen.append((list(taken), threading.get_ident())))
    assert seen == [(list(range(1 if setting == "one item" else 5)), threading.get_ident())]


def test_chunks_cover_the_range_once_on_several_threads(threads):
    threads(3)
    calls = calls_made(10, grain=2)
    assert [(start, stop) for start, stop, _ in calls] == [(0, 3), (3, 6), (6, 10)]
    assert len({thread for _, _, thread in calls}) == 3
    assert calls[0][2] == threading.get_ident()  # the first chunk runs on the calling thread


@pytest.mark.parametrize("setting", ["one thread", "reference mode", "under two grains"])
def test_serial_where_chunks_do_not_pay(threads, setting):
    threads(1 if setting == "one thread" else 2)
    with lantern.reference_mode(setting == "reference mode"):
        calls = calls_made(10 if setting == "under two grains" else 100, grain=6)
    assert [(start, stop) for start, stop, _ in calls] == [(0, 10 if setting == "under two grains" else 100)]
    assert calls[0][2] == threading.get_ident()


def test_a_chunk_calling_parallel_chunks_runs_it_serially(threads):
    threads(2)
    inner = []

    def outer(start, stop):
        inner.append(calls_made(100, grain=1))
    intra_op.parallel_chunks(100, outer, grain=1)
    assert len(inner) == 2
    assert all(len(calls) == 1 for calls in inner)


def test_an_exception_in_a_worker_reaches_the_caller_and_the_pool_goes_on(threads):
    threads(2)

    def fail_on_second_half(start, stop):
        if start > 0:
            raise ValueError(f"chunk {start}:{stop}")
    with pytest.raises(ValueError, match="chunk 50:100"):
        intra_op.parallel_chunks(100, fail_on_second_half, grain=1)
    assert len(calls_made(100, grain=1)) == 2


def test_blas_runs_one_thread_inside_chunks_and_is_restored(threads):
    threads(2)
    before = intra_op._blas_threads()
    seen = []
    intra_op.parallel_chunks(2, lambda start, stop: seen.append(intra_op._blas_threads()), grain=1)
    assert seen == [1, 1]
    assert intra_op._blas_threads() == before


def test_set_num_threads_sizes_the_pool(threads):
    before = lantern.get_num_threads()
    try:
        lantern.set_num_threads(2)
        assert intra_op.num_threads() == 2
        lantern.set_num_threads(1)
        assert intra_op.num_threads() == 1
    finally:
        lantern.set_num_threads(before)


@pytest.mark.parametrize("per_item, expected", [(1, intra_op.ELEMENTS_PER_CHUNK), (10 ** 9, 1),
                                                (0, intra_op.ELEMENTS_PER_CHUNK)])
def test_grain_is_about_a_chunk_of_elements(per_item, expected):
    assert intra_op.grain(per_item) == expected


def test_workers_let_go_of_a_chunk_before_answering(threads):
    """lantern's allocator caches a tensor's block only when no array still looks at it: a worker that kept the
    last chunk's closure alive would keep its arrays alive, and every step would fault in fresh pages."""
    threads(2)

    class Payload:
        pass
    payload = Payload()
    ref = weakref.ref(payload)

    def chunk(start, stop, payload=payload):
        pass
    intra_op.parallel_chunks(2, chunk, grain=1)
    del chunk, payload
    assert ref() is None


def test_a_call_while_another_thread_holds_the_pool_runs_its_chunks_in_order(threads):
    threads(2)
    inside, release, seen = threading.Event(), threading.Event(), []

    def hold(start, stop):
        if start == 0:
            inside.set()
            release.wait(10)
    holder = threading.Thread(target=intra_op.parallel_chunks, args=(2, hold, 1))
    holder.start()
    assert inside.wait(10)
    intra_op.run_on_pool([(0, 1), (1, 2)], lambda start, stop: seen.append((start, threading.get_ident())))
    release.set()
    holder.join(10)
    assert seen == [(0, threading.get_ident()), (1, threading.get_ident())]
