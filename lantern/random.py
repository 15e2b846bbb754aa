"""Random number generators: Generator, manual_seed, seed (filled in by the random work)."""
__all__ = []
