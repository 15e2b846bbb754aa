"""jit.passes.inline (placeholder, being written)."""
__all__ = []
