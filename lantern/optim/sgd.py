"""optim.sgd (placeholder, being written)."""
__all__ = []
