"""nn.modules.loss (placeholder, being written)."""
__all__ = []
