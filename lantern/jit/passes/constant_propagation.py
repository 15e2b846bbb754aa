"""jit.passes.constant_propagation (placeholder, being written)."""
__all__ = []
