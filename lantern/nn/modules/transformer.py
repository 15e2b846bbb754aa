"""nn.modules.transformer (placeholder, being written)."""
__all__ = []
