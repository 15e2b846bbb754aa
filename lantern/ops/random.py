"""Random factories and in-place samplers (filled in by the random work)."""
