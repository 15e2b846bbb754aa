"""scan ops (issue 4, being written)."""
