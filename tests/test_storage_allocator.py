"""Storage and the CPU allocator: sizes, sharing, alignment, statistics, and safe reuse of cached blocks."""
import gc

import numpy as np
import pytest
import torch

import lantern
from lantern.core.allocator import cpu_allocator


def test_storage_nbytes_is_whole_storage_even_from_a_view():
    for lib in (torch, lantern):
        x = lib.arange(48)
        assert x[1:3].untyped_storage().nbytes() == 384
        assert x.view(6, 8).t().untyped_storage().nbytes() == 384


def test_views_share_storage_and_data_ptr():
    x = lantern.ones((2, 2))
    xv = x.view(4)
    assert x.data_ptr() == xv.data_ptr()
    assert x.untyped_storage().data_ptr() == xv.untyped_storage().data_ptr()


def test_data_ptr_includes_offset():
    x = lantern.arange(48).view(6, 8)
    y = x.narrow(0, 1, 4).narrow(1, 1, 3)
    assert y.data_ptr() - x.data_ptr() == 9 * x.element_size()


@pytest.mark.parametrize("n", [1, 3, 16, 100, 1000, 5000, 70000, 300000])
def test_fresh_tensors_are_64_byte_aligned(n):
    for make in (lantern.empty, lantern.zeros, lantern.ones):
        assert make(n).data_ptr() % 64 == 0
    assert (lantern.ones(n) + 1).data_ptr() % 64 == 0


def test_allocator_statistics_track_live_bytes_and_peak():
    gc.collect()
    stats = cpu_allocator.stats
    before, allocs = stats.allocated_bytes, stats.num_allocs
    t = lantern.empty(1000, dtype=lantern.float64)
    assert stats.allocated_bytes == before + 8000
    assert stats.num_allocs == allocs + 1
    assert stats.peak_bytes >= before + 8000
    del t
    assert stats.allocated_bytes == before
    assert set(stats.as_dict()) == {"allocated_bytes", "peak_bytes", "num_allocs", "num_frees", "cached_bytes"}


def test_cached_block_is_not_reused_while_numpy_still_sees_it():
    a = lantern.ones(8)
    arr = a.numpy()
    del a
    b = lantern.zeros(8)  # would get a's block if the cache ignored the live NumPy view
    assert arr.tolist() == [1.0] * 8
    assert b.tolist() == [0.0] * 8


def test_freed_blocks_are_reused():
    a = lantern.empty(16)
    ptr = a.data_ptr()
    del a
    assert lantern.empty(16).data_ptr() == ptr


def test_storage_resize_keeps_prefix_and_views_see_new_memory():
    s = lantern.UntypedStorage(8)
    s.fill_(7)
    s.resize_(16)
    assert s.nbytes() == 16 and s.tolist()[:8] == [7] * 8
    t = lantern.zeros(2)
    t.resize_(4)
    assert t.shape == (4,) and t.untyped_storage().nbytes() >= 16


def test_out_resize_grows_storage():
    out = lantern.empty(0)
    lantern.add(lantern.ones(5), 1, out=out)
    assert out.tolist() == [2.0] * 5


def test_from_numpy_storage_is_not_resizable():
    t = lantern.from_numpy(np.ones(3))
    with pytest.raises(RuntimeError, match="not resizable"):
        t.untyped_storage().resize_(100)


def test_meta_storage_has_no_data():
    m = lantern.empty(3, 4, device="meta")
    assert m.untyped_storage().nbytes() == 48 and m.data_ptr() == 0
    assert m.untyped_storage().device == lantern.device("meta")


def test_untyped_storage_constructor():
    s = lantern.UntypedStorage(16)
    assert s.nbytes() == len(s) == 16 and s.device == lantern.device("cpu")
