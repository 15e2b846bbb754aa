"""nn.modules.multihead_attention (placeholder, being written)."""
__all__ = []
