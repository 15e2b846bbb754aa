"""nn.init (placeholder, being written)."""
__all__ = []
