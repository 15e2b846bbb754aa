"""utils.data.sampler (placeholder, being written)."""
__all__ = []
