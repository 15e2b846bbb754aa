"""jit.passes.fuse (placeholder, being written)."""
__all__ = []
