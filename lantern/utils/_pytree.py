"""utils._pytree (placeholder, being written)."""
__all__ = []
