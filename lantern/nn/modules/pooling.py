"""nn.modules.pooling (placeholder, being written)."""
__all__ = []
