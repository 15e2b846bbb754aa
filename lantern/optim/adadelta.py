"""optim.adadelta (placeholder, being written)."""
__all__ = []
