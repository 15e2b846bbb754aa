"""utils.data.worker (placeholder, being written)."""
__all__ = []
