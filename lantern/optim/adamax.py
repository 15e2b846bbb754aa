"""optim.adamax (placeholder, being written)."""
__all__ = []
