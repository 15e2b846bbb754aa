"""nn.utils.clip_grad (placeholder, being written)."""
__all__ = []
