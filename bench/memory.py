"""Peak memory of a piece of work, measured by the kernel the same way whichever library does the work.

Linux keeps a high-water mark of each process's resident set (VmHWM in /proc/self/status); writing 5 to
/proc/self/clear_refs resets it to the current resident size. `peak_rss_mib(work)` resets the mark, runs `work`
and returns how far the resident set rose above where it started, in MiB. That counts every byte a library
touches (its allocator's cache, NumPy temporaries, BLAS buffers, lazily loaded code) and nothing it only reserves.

`release_memory()` hands back what the process holds but no longer uses (lantern's block cache, glibc's free
heap pages), so that the next measurement starts from the same floor for both libraries.

>>> import numpy as np
>>> 60 < peak_rss_mib(lambda: np.ones(64 << 20, np.uint8)) < 70   # 64 MiB touched, then freed
True
"""
import ctypes
import ctypes.util
import gc
import sys

MiB = 1 << 20


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"/proc/self/status has no {field}")


def rss_mib():
    """The resident set size now (VmRSS), MiB."""
    return _status_kib("VmRSS") / 1024


def peak_rss_mib(work):
    """Run `work()`; the rise of the resident set's high-water mark above its size at the start, MiB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    start = _status_kib("VmRSS")
    work()
    return (_status_kib("VmHWM") - start) / 1024


def release_memory():
    """Collect garbage, empty lantern's allocator cache (if lantern is loaded) and trim glibc's heap."""
    gc.collect()
    if "lantern" in sys.modules:
        from lantern.core.allocator import cpu_allocator
        cpu_allocator.empty_cache()
    libc = ctypes.util.find_library("c")
    if libc:
        trim = getattr(ctypes.CDLL(libc), "malloc_trim", None)   # glibc only
        if trim is not None:
            trim(0)


def _lantern_stats(lib):
    if lib.__name__ != "lantern":
        return None
    from lantern.core.allocator import cpu_allocator
    return cpu_allocator.stats


def step_memory(lib, workload, steps, warmup_steps=2):
    """Peak memory of building `workload` and running its statement `steps` times, in a warmed-up process.

    A first run (setup + `warmup_steps` steps, then dropped) loads the code paths and lazy state both libraries
    keep for good; after `release_memory()` the measured run starts from a clean floor. Returns {"peak_mib": rise
    of the resident set's high-water mark, "allocator_peak_mib": rise of lantern's live tensor bytes (None for
    other libraries)}.
    """
    code = compile(workload.stmt, workload.name, "exec")

    def run(n):
        namespace = workload.setup(lib)
        for _ in range(n):
            exec(code, namespace)

    run(warmup_steps)
    release_memory()
    stats = _lantern_stats(lib)
    if stats is not None:
        stats.peak_bytes = start = stats.allocated_bytes
    peak = peak_rss_mib(lambda: run(steps))
    return {"peak_mib": peak, "allocator_peak_mib": None if stats is None else (stats.peak_bytes - start) / MiB}
