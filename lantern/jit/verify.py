"""jit.verify (placeholder, being written)."""
__all__ = []
