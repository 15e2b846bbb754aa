"""lantern.inspect.memory_stats / memory_summary / reset_peak_memory_stats, and lantern.cuda's memory functions.

The summary's cells are checked against torch.cuda.memory_summary's own formatting (fed the same numbers through a
stand-in memory_stats, since torch only reads real statistics with CUDA)."""
import gc
import re

import pytest
import torch
import torch.cuda.memory as torch_memory

import lantern
from lantern.core import storage as storage_module
from lantern.core.allocator import AllocatorStats, CPUAllocator, cpu_allocator
from lantern.inspect import memory_stats, memory_summary, reset_peak_memory_stats
from lantern.inspect.memory import max_memory_allocated, memory_allocated, memory_reserved, summary_of


def test_stats_follow_allocation_peak_and_free():
    gc.collect()
    cpu_allocator.empty_cache()
    before = memory_stats()
    reset_peak_memory_stats()
    x = lantern.empty(250_000, dtype=lantern.float32)         # 1 MB, exactly as asked
    during = memory_stats()
    assert during["allocated_bytes.all.current"] == before["allocated_bytes.all.current"] + 1_000_000
    assert during["allocated_bytes.all.peak"] >= during["allocated_bytes.all.current"]
    assert during["allocation.all.allocated"] == before["allocation.all.allocated"] + 1
    assert during["allocation.all.current"] == before["allocation.all.current"] + 1
    del x
    after = memory_stats()
    assert after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    assert after["allocation.all.freed"] == before["allocation.all.freed"] + 1
    assert after["allocated_bytes.all.peak"] == during["allocated_bytes.all.peak"]      # the peak stays
    assert after["cached_bytes.all.current"] == 1_048_576   # the block (rounded to 64 KiB) is kept for reuse
    assert after["reserved_bytes.all.current"] == (after["allocated_bytes.all.current"]
                                                   + after["cached_bytes.all.current"])
    reset_peak_memory_stats()
    assert max_memory_allocated() == memory_allocated() == after["allocated_bytes.all.current"]
    assert memory_reserved() == after["reserved_bytes.all.current"]


def test_op_results_and_views_are_counted():
    gc.collect()
    start = memory_allocated()
    a = lantern.ones(1000, dtype=lantern.float64)
    b = a * 2 + 1                            # two results, the first freed at once
    v = b[::2]                               # a view allocates nothing
    assert memory_allocated() - start == 16_000
    assert v.untyped_storage() is b.untyped_storage()
    del a, b, v
    assert memory_allocated() == start


def test_keys_are_torch_names_in_sorted_order():
    stats = memory_stats("cpu")
    assert list(stats) == sorted(stats)
    assert set(stats) == {"allocated_bytes.all.current", "allocated_bytes.all.peak", "allocation.all.current",
                          "allocation.all.allocated", "allocation.all.freed", "reserved_bytes.all.current",
                          "cached_bytes.all.current"}
    assert memory_stats(lantern.device("cpu")) == memory_stats(None) == stats
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        memory_stats("cuda")


def _fake_allocator(allocated, peak, allocs, frees, cached):
    allocator = CPUAllocator()
    allocator.stats = AllocatorStats()
    s = allocator.stats
    s.allocated_bytes, s.peak_bytes, s.num_allocs, s.num_frees, s.cached_bytes = allocated, peak, allocs, frees, cached
    return allocator


def _torch_row(name, values):
    """The cells torch.cuda.memory_summary prints for one metric given (current, peak, allocated, freed)."""
    keys = {f"{m}.{p}.{k}": 0 for m in ("allocated_bytes", "active_bytes", "requested_bytes", "reserved_bytes",
                                        "inactive_split_bytes", "allocation", "active", "segment", "inactive_split")
            for p in ("all", "large_pool", "small_pool") for k in ("current", "peak", "allocated", "freed")}
    keys.update({f"{m}.{k}": 0 for m in ("oversize_allocations", "oversize_segments")
                 for k in ("current", "peak", "allocated", "freed")})
    keys.update(num_ooms=0, num_alloc_retries=0)
    for k, v in zip(("current", "peak", "allocated", "freed"), values):
        keys[f"{name}.all.{k}"] = v
    saved = torch_memory.memory_stats
    torch_memory.memory_stats = lambda device=None: keys
    try:
        table = torch_memory.memory_summary(device=0, abbreviated=True)
    finally:
        torch_memory.memory_stats = saved
    label = {"allocated_bytes": "Allocated memory", "allocation": "Allocations"}[name]
    return next(line for line in table.splitlines() if line.startswith(f"| {label}"))


@pytest.mark.parametrize("allocated,peak,allocs,frees", [
    (0, 0, 0, 0), (900, 4_000_000, 12, 7), (800 * 1024 ** 2, 3 * 1024 ** 3, 760_000, 755_000)])
def test_summary_cells_match_torch_formatting(allocated, peak, allocs, frees):
    table = summary_of(_fake_allocator(allocated, peak, allocs, frees, 0), "cpu")
    lines = table.splitlines()
    ours = next(line for line in lines if line.startswith("| Allocated memory"))
    theirs = _torch_row("allocated_bytes", (allocated, peak, 0, 0))
    assert ours.split("|")[1:4] == theirs.split("|")[1:4]            # name, current, peak
    ours = next(line for line in lines if line.startswith("| Allocations"))
    theirs = _torch_row("allocation", (allocs - frees, 0, allocs, frees))
    cells, torch_cells = ours.split("|"), theirs.split("|")
    assert cells[1:3] + cells[4:6] == torch_cells[1:3] + torch_cells[4:6]   # all but the peak, which lantern lacks
    assert all(len(line) == 77 for line in lines)                     # torch's width: 75 between the bars


def test_summary_text():
    table = summary_of(_fake_allocator(4_000_000, 5_000_000, 10, 4, 2048), "cpu")
    assert table == """\
|===========================================================================|
|                  lantern CPU memory summary, device cpu                   |
|---------------------------------------------------------------------------|
|  freed blocks are cached by size class and reused                         |
|===========================================================================|
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
|---------------------------------------------------------------------------|
| Allocated memory      |   3906 KiB |   4882 KiB |      -     |      -     |
|---------------------------------------------------------------------------|
| Cached memory         |   2048 B   |      -     |      -     |      -     |
|---------------------------------------------------------------------------|
| Reserved memory       |   3908 KiB |      -     |      -     |      -     |
|---------------------------------------------------------------------------|
| Allocations           |       6    |       -    |      10    |       4    |
|===========================================================================|
"""


def test_live_summary_reports_the_cpu_allocator():
    x = lantern.empty(3000, dtype=lantern.uint8)
    text = memory_summary()
    current = int(re.search(r"\| Allocated memory +\| +(\d+) ", text).group(1))
    unit = re.search(r"\| Allocated memory +\| +\d+ (\S+)", text).group(1)
    scale = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}[unit]
    assert current == cpu_allocator.stats.allocated_bytes // scale
    assert memory_summary(abbreviated=True) == text
    del x


def test_lantern_cuda_memory_functions_without_and_with_an_allocator(monkeypatch):
    assert lantern.cuda.memory_stats() == {} == torch.cuda.memory_stats()   # CUDA never used: empty, as torch
    assert lantern.cuda.memory_allocated() == 0 == torch.cuda.memory_allocated()
    assert lantern.cuda.max_memory_allocated() == 0 == torch.cuda.max_memory_allocated()
    assert lantern.cuda.memory_reserved() == 0 == torch.cuda.memory_reserved()
    for name, error in (("reset_peak_memory_stats", AttributeError), ("memory_summary", KeyError)):
        for lib in (torch, lantern):  # what PyTorch's CPU build raises: no C binding, no statistics to lay out
            with pytest.raises(error):
                getattr(lib.cuda, name)()
    fake = _fake_allocator(1024, 4096, 3, 1, 0)
    monkeypatch.setitem(storage_module._ALLOCATORS, "cuda", fake)    # what the CuPy backend will register
    assert lantern.cuda.memory_allocated() == 1024 and lantern.cuda.max_memory_allocated() == 4096
    assert "lantern CUDA memory summary, device cuda" in lantern.cuda.memory_summary()
    lantern.cuda.reset_peak_memory_stats()
    assert lantern.cuda.max_memory_allocated() == 1024
