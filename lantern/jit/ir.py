"""jit.ir (placeholder, being written)."""
__all__ = []
