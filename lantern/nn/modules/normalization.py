"""nn.modules.normalization (placeholder, being written)."""
__all__ = []
