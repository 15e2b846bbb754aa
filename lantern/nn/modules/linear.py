"""nn.modules.linear (placeholder, being written)."""
__all__ = []
