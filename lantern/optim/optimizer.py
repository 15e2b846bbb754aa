"""optim.optimizer (placeholder, being written)."""
__all__ = []
