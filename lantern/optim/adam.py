"""optim.adam (placeholder, being written)."""
__all__ = []
