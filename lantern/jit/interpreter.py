"""jit.interpreter (placeholder, being written)."""
__all__ = []
