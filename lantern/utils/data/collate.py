"""utils.data.collate (placeholder, being written)."""
__all__ = []
