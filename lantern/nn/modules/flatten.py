"""nn.modules.flatten (placeholder, being written)."""
__all__ = []
