"""multi_head_attention_forward (placeholder, being written)."""
__all__ = []
