"""optim.adagrad (placeholder, being written)."""
__all__ = []
