"""nn.modules.sparse (placeholder, being written)."""
__all__ = []
