"""utils.data.dataloader (placeholder, being written)."""
__all__ = []
