"""jit.module (placeholder, being written)."""
__all__ = []
