"""Parameter: a Tensor that a Module registers as a learnable weight (placeholder, being written)."""
__all__ = []
