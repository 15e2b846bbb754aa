"""jit.types (placeholder, being written)."""
__all__ = []
