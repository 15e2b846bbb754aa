"""jit.passes.cse (placeholder, being written)."""
__all__ = []
