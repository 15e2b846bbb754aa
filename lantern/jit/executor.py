"""jit.executor (placeholder, being written)."""
__all__ = []
