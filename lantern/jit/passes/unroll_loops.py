"""jit.passes.unroll_loops (placeholder, being written)."""
__all__ = []
