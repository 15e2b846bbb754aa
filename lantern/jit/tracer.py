"""jit.tracer (placeholder, being written)."""
__all__ = []
