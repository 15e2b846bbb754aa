"""jit.passes.pipeline (placeholder, being written)."""
__all__ = []
