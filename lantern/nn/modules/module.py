"""nn.modules.module (placeholder, being written)."""
__all__ = []
