"""nn.modules.activation (placeholder, being written)."""
__all__ = []
