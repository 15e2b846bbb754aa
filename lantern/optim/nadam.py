"""optim.nadam (placeholder, being written)."""
__all__ = []
