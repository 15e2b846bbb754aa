"""serialization: save/load (placeholder, being written)."""
__all__ = []
