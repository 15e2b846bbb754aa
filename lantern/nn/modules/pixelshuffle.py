"""nn.modules.pixelshuffle (placeholder, being written)."""
__all__ = []
