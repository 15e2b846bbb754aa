"""utils.data.dataset (placeholder, being written)."""
__all__ = []
