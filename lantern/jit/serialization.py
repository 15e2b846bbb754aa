"""jit.serialization (placeholder, being written)."""
__all__ = []
