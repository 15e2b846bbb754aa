"""nn.modules.dropout (placeholder, being written)."""
__all__ = []
