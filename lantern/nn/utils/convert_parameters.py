"""nn.utils.convert_parameters (placeholder, being written)."""
__all__ = []
