"""optim.lbfgs (placeholder, being written)."""
__all__ = []
