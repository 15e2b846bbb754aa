"""nn.modules.upsampling (placeholder, being written)."""
__all__ = []
