"""nn.modules.container (placeholder, being written)."""
__all__ = []
