"""Storage and the CPU allocator: sizes, sharing, alignment, statistics, and safe reuse of cached blocks."""
import gc

import numpy as np
import pytest
import torch

import lantern
from lantern.core import allocator as allocator_module
from lantern.core.allocator import CPUAllocator, cpu_allocator


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



# ---- the large-block policy: best fit up to 2x, and a bound on the bytes held ----

KiB, MiB = 1 << 10, 1 << 20


def _cache_blocks(al, *sizes):
    """Allocate blocks of `sizes` bytes from `al`, then free them in that order; their addresses."""
    blocks = [al.allocate(n) for n in sizes]
    addresses = [al.address(b) for b in blocks]
    for n in sizes:
        b = blocks.pop(0)
        al.free(b, n)
        del b
    return addresses


def test_large_request_takes_the_smallest_cached_block_at_most_twice_its_size():
    al = CPUAllocator()
    two, one = _cache_blocks(al, 2 * MiB, MiB)
    assert al.stats.cached_bytes == 3 * MiB
    buf = al.allocate(600 * KiB)                 # rounded to 640 KiB; 1 MiB is the smallest block holding it
    assert al.address(buf) == one and len(buf) == MiB
    assert al.stats.cached_bytes == 2 * MiB
    assert al.stats.allocated_bytes == 600 * KiB  # live bytes count what was asked for
    fresh = al.allocate(900 * KiB)                # rounded to 960 KiB: the 2 MiB block is over twice that
    assert len(fresh) == 960 * KiB and al.stats.cached_bytes == 2 * MiB
    al.free(buf, 600 * KiB)                       # the block goes back under its own size
    del buf
    assert al.stats.cached_bytes == 3 * MiB and [size for size, _, _ in al._large] == [MiB, 2 * MiB]


def test_freed_tensor_block_serves_a_smaller_tensor():
    gc.collect()
    cpu_allocator.empty_cache()
    a = lantern.empty(250_000)                    # 1,000,000 bytes: a 1 MiB block
    ptr = a.data_ptr()
    del a
    b = lantern.ones(200_000)                     # 800,000 bytes: served by the cached block
    assert b.data_ptr() == ptr and b.sum().item() == 200_000
    del b
    c = lantern.empty(100_000)                    # 400,000 bytes: the block is over twice that, so not reused
    assert c.data_ptr() != ptr and cpu_allocator.stats.cached_bytes >= 1 << 20


def test_fresh_block_past_the_bound_releases_cached_blocks(monkeypatch):
    monkeypatch.setattr(allocator_module, "_HELD_FLOOR", 4 * MiB)
    monkeypatch.setattr(allocator_module, "_HELD_SLACK", 1.0)
    al = CPUAllocator()
    _, second = _cache_blocks(al, MiB, 2 * MiB)   # the live peak so far: 3 MiB
    assert al.stats.cached_bytes == 3 * MiB and al._held == 3 * MiB
    big = al.allocate(1536 * KiB)                 # served by the 2 MiB block
    assert al.address(big) == second and al.stats.cached_bytes == MiB
    other = al.allocate(4 * MiB)                  # live peak 5.5 MiB; held would be 7 MiB > max(4, 5.5) MiB:
    assert al.stats.cached_bytes == 0 and al._large == []      # the cached 1 MiB block is released
    assert al._held == 6 * MiB and al.stats.allocated_bytes == 5632 * KiB
    assert len(big) + len(other) == al._held


def test_least_recently_freed_block_is_released_first(monkeypatch):
    monkeypatch.setattr(allocator_module, "_HELD_FLOOR", 5 * MiB)
    monkeypatch.setattr(allocator_module, "_HELD_SLACK", 0.0)
    al = CPUAllocator()
    _, newer = _cache_blocks(al, 2 * MiB, MiB)    # the 2 MiB block was freed first
    al.allocate(3 * MiB)                          # held 6 MiB > 5 MiB: the 2 MiB block goes
    assert [size for size, _, _ in al._large] == [MiB] and al.stats.cached_bytes == MiB
    assert al._held == 4 * MiB and al.address(al.allocate(MiB)) == newer


def test_empty_cache_drops_every_block_and_keeps_live_counts():
    al = CPUAllocator()
    _cache_blocks(al, 64, 3 * MiB)
    live = al.allocate(MiB)                       # the 3 MiB block is over twice as large: a fresh block
    assert al.stats.cached_bytes == 64 + 3 * MiB
    al.empty_cache()
    assert al.stats.cached_bytes == 0 and al._large == [] and al._held == len(live) == MiB
    assert al.stats.allocated_bytes == MiB and al.stats.num_allocs == 3 and al.stats.num_frees == 2
