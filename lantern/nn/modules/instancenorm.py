"""nn.modules.instancenorm (placeholder, being written)."""
__all__ = []
