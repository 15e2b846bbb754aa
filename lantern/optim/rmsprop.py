"""optim.rmsprop (placeholder, being written)."""
__all__ = []
