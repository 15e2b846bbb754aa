"""nn.modules.rnn (placeholder, being written)."""
__all__ = []
