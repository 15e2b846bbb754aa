"""nn.modules.batchnorm (placeholder, being written)."""
__all__ = []
