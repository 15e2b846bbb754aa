"""lantern.profiler: per-op timings in PyTorch's `profile()` / `key_averages().table()` form."""
__all__ = []
