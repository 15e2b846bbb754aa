"""jit.passes.dead_code_elimination (placeholder, being written)."""
__all__ = []
