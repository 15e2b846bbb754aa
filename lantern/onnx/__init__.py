"""lantern.onnx: export to ONNX (placeholder, being written)."""
__all__ = []
