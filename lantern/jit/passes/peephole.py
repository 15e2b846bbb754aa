"""jit.passes.peephole (placeholder, being written)."""
__all__ = []
