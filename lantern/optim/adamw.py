"""optim.adamw (placeholder, being written)."""
__all__ = []
