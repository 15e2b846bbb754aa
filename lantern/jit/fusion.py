"""jit.fusion (placeholder, being written)."""
__all__ = []
