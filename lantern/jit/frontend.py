"""jit.frontend (placeholder, being written)."""
__all__ = []
