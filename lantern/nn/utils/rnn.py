"""nn.utils.rnn (placeholder, being written)."""
__all__ = []
