"""jit.code (placeholder, being written)."""
__all__ = []
