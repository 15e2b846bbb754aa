"""nn.modules.conv (placeholder, being written)."""
__all__ = []
