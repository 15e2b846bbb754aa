"""vision.transforms (placeholder, being written)."""
__all__ = []
