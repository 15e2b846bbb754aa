"""optim.lr_scheduler (placeholder, being written)."""
__all__ = []
