"""optim.radam (placeholder, being written)."""
__all__ = []
