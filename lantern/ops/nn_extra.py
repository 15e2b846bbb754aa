"""Extra nn functional ops: embedding_bag, 3d pools ... (placeholder, being written)."""
__all__ = []
