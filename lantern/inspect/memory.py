"""Allocator statistics: `memory_stats()` with torch.cuda's key names, `memory_summary()` with its table.

Every tensor lantern makes gets its bytes from its device's allocator (lantern/core/allocator.py), which counts
as it goes: the bytes live now and their peak, allocations and frees, and the bytes of freed blocks it keeps
cached for reuse. These functions only read those counters. What they do not see: memory lantern does not own
(`from_numpy`, `load(mmap=True)`) and the temporary arrays NumPy makes inside a kernel before the result is copied
into its output tensor.

>>> import lantern
>>> before = lantern.inspect.memory_stats()["allocated_bytes.all.current"]
>>> x = lantern.empty(1000, dtype=lantern.float64)
>>> lantern.inspect.memory_stats()["allocated_bytes.all.current"] - before
8000
>>> print(lantern.inspect.memory_summary())  # doctest: +ELLIPSIS
|===========================================================================|
|                  lantern CPU memory summary, device cpu                   |
...
"""
import collections

from ..core.device import device as _device
from ..core.storage import allocator_for

__all__ = ["memory_stats", "memory_summary", "reset_peak_memory_stats", "memory_allocated",
           "max_memory_allocated", "memory_reserved"]

_WIDTH = 75


def _allocator(device):
    return allocator_for(_device("cpu" if device is None else device))


def stats_of(allocator):
    """The statistics of one allocator under torch.cuda.memory_stats' key names, sorted by key.

    allocated_bytes counts the bytes tensors asked for (torch rounds its blocks up first); reserved_bytes is those
    plus the cached free blocks; cached_bytes (lantern's own key) is the cached free blocks alone.
    """
    s = allocator.stats
    stats = {
        "allocated_bytes.all.current": s.allocated_bytes,
        "allocated_bytes.all.peak": s.peak_bytes,
        "allocation.all.current": s.num_allocs - s.num_frees,
        "allocation.all.allocated": s.num_allocs,
        "allocation.all.freed": s.num_frees,
        "reserved_bytes.all.current": s.allocated_bytes + s.cached_bytes,
        "cached_bytes.all.current": s.cached_bytes,
    }
    return collections.OrderedDict(sorted(stats.items()))


def memory_stats(device="cpu"):
    """A dict of the allocator's statistics for `device` (torch.cuda.memory_stats' key names).

    >>> sorted(memory_stats())[:3]
    ['allocated_bytes.all.current', 'allocated_bytes.all.peak', 'allocation.all.allocated']
    """
    return stats_of(_allocator(device))


def memory_allocated(device="cpu"):
    """Bytes held by live tensors on `device` now."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device="cpu"):
    """The most bytes live tensors on `device` held at once, since the start or reset_peak_memory_stats()."""
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device="cpu"):
    """Bytes the allocator holds: those of live tensors plus the freed blocks it keeps cached."""
    return memory_stats(device)["reserved_bytes.all.current"]


def reset_peak_memory_stats(device="cpu"):
    """Start the peak over from now: the peak becomes the bytes allocated at this moment.

    >>> reset_peak_memory_stats()
    >>> memory_stats()["allocated_bytes.all.peak"] == memory_stats()["allocated_bytes.all.current"]
    True
    """
    stats = _allocator(device).stats
    stats.peak_bytes = stats.allocated_bytes


def _format_size(n):
    """Like torch's table: whole units, the next unit up from 768 of the one below."""
    for unit in ("B  ", "KiB", "MiB", "GiB", "TiB"):
        if n < 768 * 1024 or unit == "TiB":
            return f"{n:6d} {unit}"
        n //= 1024


def _format_count(n):
    for unit in (" ", "K"):
        if n < 750 * 1000 or unit == "K":
            return f"{n:7d} {unit} "
        n //= 1000


_UNKNOWN = {_format_size: f"{'-':>6}    ", _format_count: f"{'-':>7}   "}


def summary_of(allocator, device_name):
    """memory_summary's table for one allocator."""
    s = stats_of(allocator)
    rule, double = "-" * _WIDTH, "=" * _WIDTH
    about = getattr(allocator, "summary_note", "freed blocks are cached by size class and reused")
    lines = [double, f" {f'lantern {device_name.upper()} memory summary, device {device_name}':^{_WIDTH - 2}} ",
             rule, f"  {about:<{_WIDTH - 2}}", double,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    rows = [
        ("Allocated memory", _format_size, s["allocated_bytes.all.current"], s["allocated_bytes.all.peak"], None,
         None),
        ("Cached memory", _format_size, s["cached_bytes.all.current"], None, None, None),
        ("Reserved memory", _format_size, s["reserved_bytes.all.current"], None, None, None),
        ("Allocations", _format_count, s["allocation.all.current"], None, s["allocation.all.allocated"],
         s["allocation.all.freed"]),
    ]
    for name, fmt, *values in rows:
        cells = " | ".join(_UNKNOWN[fmt] if v is None else fmt(v) for v in values)
        lines += [rule, f" {name:<21} | {cells} "]
    lines.append(double)
    return "|" + "|\n|".join(lines) + "|\n"


def memory_summary(device="cpu", abbreviated=False):
    """The allocator's statistics for `device` as a table laid out like torch.cuda.memory_summary's.

    "-" marks what lantern's allocator does not count (byte totals over time, peaks other than allocated bytes).
    `abbreviated` is accepted for torch's signature; the table has no per-pool rows to leave out.
    """
    dev = _device("cpu" if device is None else device)
    return summary_of(allocator_for(dev), str(dev))
