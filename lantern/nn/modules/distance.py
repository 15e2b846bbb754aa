"""nn.modules.distance (placeholder, being written)."""
__all__ = []
